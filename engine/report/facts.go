package report

import (
	"strings"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/results"
)

// Point is one interval of a repetition's timeseries: the figures the
// time chart and compare's interval samples use.
type Point struct {
	TS        float64 // interval start, seconds since the step started
	IntervalS float64
	Requests  int64
	RPS       float64
	P99US     float64
}

func pointOf(r *results.TimeseriesRow) Point {
	return Point{TS: r.TS, IntervalS: r.IntervalS, Requests: r.Requests, RPS: r.RPS, P99US: r.LatencyP99US}
}

// rowFacts is what the verdicts, the claims and the percentiles without
// histograms need of one trials row (trial × step, warm-up rows left
// out): a few figures, not the row.
type rowFacts struct {
	verdict, evidence string
	busy              bool
	cpu               results.CPUBudget
	claims            []float64 // the value of each claim's metric, in the manifest's order
	versus            []float64 // the value of each claim's versus_metric (0 without one)
	key               [2]string // trial, step
}

// trialFacts collects, as the trials rows are read once, the facts of
// each trial × step and the busy-machine counts of the notices.
type trialFacts struct {
	rows   map[[2]string]*rowFacts
	getter []func(*results.TrialRow) float64 // per claim; nil for a verdict or an unknown metric
	// vgetter: per claim, its versus_metric's; nil without one. Metrics read
	// from histograms (latency_p9999_us) have no getter here: the claims
	// read them from Summary.p9999 (factGetter).
	vgetter []func(*results.TrialRow) float64
	// pct: with noHist, each trial × step's rows' own percentiles (warm-up
	// rows included), in row order.
	pct map[[2]string][][4]float64
	// busy notice
	busy, total, noisy int
	worst              float64
	top                string
	// machine: the machine's state, by results.MachineState's rule
	machine results.MachineState
	// rerun: the discarded attempts (busy_rerun), "c01-r1-a1 (busy
	// start)", in trial order; stillBusy the trials × steps that counted
	// although busy after their re-runs.
	rerun     []string
	seenRerun map[string]bool
	stillBusy int
}

// discarded records a row of an attempt re-run because the machine was
// busy: counted by the machine's state, listed once per attempt.
func (f *trialFacts) discarded(t *results.TrialRow) {
	f.machine.Add(t)
	if t.StepKind == "warm" || f.seenRerun[t.TrialID] {
		return
	}
	if f.seenRerun == nil {
		f.seenRerun = map[string]bool{}
	}
	f.seenRerun[t.TrialID] = true
	why := t.DiscardedWhy
	if i := strings.Index(why, ":"); i > 0 {
		why = why[:i]
	}
	f.rerun = append(f.rerun, t.TrialID+" ("+why+")")
}

func newTrialFacts(run *results.Run, noHist bool) *trialFacts {
	f := &trialFacts{rows: map[[2]string]*rowFacts{}}
	if noHist {
		f.pct = map[[2]string][][4]float64{}
	}
	if run.Manifest != nil {
		for _, sp := range run.Manifest.Claims {
			var get func(*results.TrialRow) float64
			if sp.Kind != claims.KindVerdict {
				get = metricReader(sp.Metric)
			}
			f.getter = append(f.getter, get)
			var vget func(*results.TrialRow) float64
			if sp.Kind != claims.KindVerdict && sp.VersusMetric != "" {
				vget = metricReader(sp.VersusMetric)
			}
			f.vgetter = append(f.vgetter, vget)
		}
	}
	return f
}

// add records one trials row, in trial order.
func (f *trialFacts) add(t *results.TrialRow) {
	f.machine.Add(t)
	if f.pct != nil {
		k := [2]string{t.TrialID, t.Step}
		f.pct[k] = append(f.pct[k], [4]float64{t.LatencyP50US, t.LatencyP90US, t.LatencyP99US, t.LatencyP999US})
	}
	if t.StepKind == "warm" {
		return
	}
	if t.Attempt > 1 && t.Step != "" && (t.BusyStart || t.Verdict == "noisy") {
		f.stillBusy++
	}
	r := &rowFacts{verdict: t.Verdict, evidence: t.VerdictEvidence, busy: t.BusyStart, cpu: results.CPUBudget{
		TotalPct: t.CPUTotalPct, LoaderPct: t.CPULoaderPct, ServicePct: t.CPUServicePct, InfraPct: t.CPUInfraPct,
		KernelPct: t.CPUKernelPct, OtherPct: t.CPUOtherPct, IdlePct: t.CPUIdlePct, StealPct: t.CPUStealPct,
		UnattributedPct: t.CPUUnattributedPct,
	}}
	r.key = [2]string{t.TrialID, t.Step}
	if len(f.getter) > 0 {
		r.claims = make([]float64, len(f.getter))
		r.versus = make([]float64, len(f.getter))
		for i, get := range f.getter {
			if get != nil {
				r.claims[i] = get(t)
			}
			if vget := f.vgetter[i]; vget != nil {
				r.versus[i] = vget(t)
			}
		}
	}
	f.rows[[2]string{t.TrialID, t.Step}] = r
	if t.Step == "" {
		return
	}
	if t.QuietWindowS > 0 {
		f.total++
	}
	if t.BusyStart {
		f.busy++
		if t.QuietPct > f.worst {
			f.worst, f.top = t.QuietPct, t.QuietTop
		}
	} else if t.Verdict == collect.VerdictNoisy {
		f.noisy++
	}
}

// meanPercentiles averages the per-repetition percentiles recorded in the
// trials table for a cell (used when latency histograms are missing).
func (f *trialFacts) meanPercentiles(c *Cell) (p50, p90, p99, p999 float64) {
	seen := map[string]bool{}
	n := 0.0
	for _, id := range c.TrialIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		for _, p := range f.pct[[2]string{id, c.Step}] {
			p50 += p[0]
			p90 += p[1]
			p99 += p[2]
			p999 += p[3]
			n++
		}
	}
	if n == 0 {
		return 0, 0, 0, 0
	}
	return p50 / n, p90 / n, p99 / n, p999 / n
}
