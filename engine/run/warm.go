package run

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// Warm until steady (docs/language.md, step "warm"): the warm-up runs in
// windows and stops once the last steadyWindows windows agree.
const (
	steadyWindows    = 3
	defaultWindow    = time.Second
	defaultTolerance = 0.05
	defaultSteadyMax = 30 * time.Second
)

// warmSettings are a warm step's until = "steady" settings, defaults
// applied. max is the step's duration (the bound).
type warmSettings struct {
	window, max time.Duration
	tolerance   float64
}

func parseWarmUntil(c *steps.LoadConfig, o load.Options) (warmSettings, error) {
	ws := warmSettings{window: defaultWindow, tolerance: defaultTolerance, max: defaultSteadyMax}
	var err error
	if c.Window != "" {
		if ws.window, err = pipeline.ParseDuration(c.Window); err != nil {
			return ws, fmt.Errorf("window: %w", err)
		}
		if ws.window <= 0 {
			return ws, fmt.Errorf("window = %q: must be positive", c.Window)
		}
	}
	if c.Tolerance != "" {
		if ws.tolerance, err = pipeline.ParsePercent(c.Tolerance); err != nil {
			return ws, fmt.Errorf("tolerance: %w", err)
		}
	}
	if c.Duration != "" {
		ws.max = o.Duration
	}
	if ws.max < steadyWindows*ws.window {
		return ws, fmt.Errorf("duration %s is shorter than %d windows of %s", ws.max, steadyWindows, ws.window)
	}
	return ws, nil
}

// windowStat is what a warm window is judged on.
type windowStat struct{ rps, p50 float64 }

// steadyAcross reports whether every value of each quantity over the
// last steadyWindows windows lies within tol of their mean, and else the
// larger relative spread seen.
func steadyAcross(ws []windowStat, tol float64) (bool, float64) {
	if len(ws) < steadyWindows {
		return false, math.Inf(1)
	}
	last := ws[len(ws)-steadyWindows:]
	worst := 0.0
	for _, get := range []func(windowStat) float64{
		func(w windowStat) float64 { return w.rps },
		func(w windowStat) float64 { return w.p50 },
	} {
		m := 0.0
		for _, w := range last {
			m += get(w)
		}
		m /= float64(len(last))
		if !(m > 0) {
			return false, math.Inf(1)
		}
		for _, w := range last {
			worst = math.Max(worst, math.Abs(get(w)-m)/m)
		}
	}
	return worst <= tol, worst
}

// warmUntilSteady runs the warm load in windows until steadyAcross holds
// or the maximum duration is spent. It returns the windows merged into one
// result and a sentence saying how it ended. run runs one window (nil:
// load.Run in this process).
func warmUntilSteady(ctx context.Context, o load.Options, ws warmSettings, run func(context.Context, load.Options) (*measure.Record, error)) (*measure.Record, string, error) {
	if run == nil {
		run = load.Run
	}
	var merged *measure.Record
	var stats []windowStat
	var spent time.Duration
	worst := math.Inf(1)
	for spent+ws.window <= ws.max {
		wo := o
		wo.Duration, wo.Requests = ws.window, 0
		wo.Progress = nil
		res, err := run(ctx, wo)
		merged = mergeResults(merged, res)
		if err != nil {
			return merged, "", err
		}
		if ctx.Err() != nil {
			return merged, "", ctx.Err()
		}
		spent += res.Duration
		p50 := 0.0
		if res.Latency != nil {
			p50 = float64(res.Latency.ValueAtQuantile(50))
		}
		stats = append(stats, windowStat{res.RPS(), p50})
		var ok bool
		if ok, worst = steadyAcross(stats, ws.tolerance); ok {
			return merged, fmt.Sprintf("steady after %d windows of %s (%.1f s): req/s and p50 of the last %d within %.1f%%",
				len(stats), ws.window, spent.Seconds(), steadyWindows, 100*worst), nil
		}
	}
	spread := "fewer than 3 windows"
	if !math.IsInf(worst, 0) {
		spread = fmt.Sprintf("the last %d windows varied by %.1f%%", steadyWindows, 100*worst)
	}
	return merged, fmt.Sprintf("not steady within %s (%d windows of %s): %s, tolerance %.1f%%",
		ws.max, len(stats), ws.window, spread, 100*ws.tolerance), nil
}

// mergeResults appends the window b to the merged result a: counts and
// histograms add up, intervals follow on in time.
func mergeResults(a, b *measure.Record) *measure.Record {
	if b == nil {
		return a
	}
	if a == nil {
		c := *b
		c.Status, c.ErrorsBy = map[int]int64{}, map[string]int64{}
		for k, v := range b.Status {
			c.Status[k] = v
		}
		for k, v := range b.ErrorsBy {
			c.ErrorsBy[k] = v
		}
		if b.Latency != nil {
			c.Latency = hdrCopy(b.Latency)
		}
		if b.Uncorrected != nil {
			c.Uncorrected = hdrCopy(b.Uncorrected)
		}
		if b.Connect != nil {
			c.Connect = hdrCopy(b.Connect)
		}
		c.Intervals = append([]measure.Interval(nil), b.Intervals...)
		return &c
	}
	offset := a.Duration
	a.Duration += b.Duration
	a.AddCounts(b)
	a.MaxInFlight = max(a.MaxInFlight, b.MaxInFlight)
	if b.StreamLimit > 0 && (a.StreamLimit == 0 || b.StreamLimit < a.StreamLimit) {
		a.StreamLimit = b.StreamLimit
	}
	if a.Latency != nil && b.Latency != nil {
		a.Latency.Merge(b.Latency)
	}
	if a.Uncorrected != nil && b.Uncorrected != nil {
		a.Uncorrected.Merge(b.Uncorrected)
	}
	if a.Connect != nil && b.Connect != nil {
		a.Connect.Merge(b.Connect)
	}
	for _, iv := range b.Intervals {
		iv.Start += offset
		a.Intervals = append(a.Intervals, iv)
	}
	if b.Warning != "" {
		a.Warning = b.Warning
	}
	if b.MaxBehind > a.MaxBehind {
		a.MaxBehind = b.MaxBehind
	}
	return a
}

func hdrCopy(h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	return hdrhistogram.Import(h.Export())
}

// warmSteady runs a warm step with until = "steady" and says how it ended.
func (tr *trialRun) warmSteady(ctx context.Context, st *pipeline.Step, c *steps.LoadConfig, o load.Options,
	run func(context.Context, load.Options) (*measure.Record, error)) (*measure.Record, error) {
	ws, err := parseWarmUntil(c, o)
	if err != nil {
		return nil, err
	}
	res, how, err := warmUntilSteady(ctx, o, ws, run)
	if how != "" {
		if strings.HasPrefix(how, "steady") {
			tr.r.rep.Logf("trial %s: %s %s", tr.trial.ID, st.Addr(), how)
		} else {
			tr.r.rep.Warnf("trial %s: %s %s", tr.trial.ID, st.Addr(), how)
		}
	}
	return res, err
}
