package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// SLO is the objective each probe of a capacity search is judged against:
// latency percentiles (corrected for coordinated omission) below bounds and
// an error ratio below a maximum.
type SLO struct {
	Latency []LatencyBound
	// MaxErrorRatio is the largest accepted errors/requests; < 0 means
	// errors are not judged.
	MaxErrorRatio float64
}

// LatencyBound is "p<Percentile> < Max".
type LatencyBound struct {
	Percentile float64 // 99 for p99, 99.9 for p99.9
	Max        time.Duration
}

// ParseSLO reads an objective such as "p99<10ms,errors<0.1%" (terms
// separated by commas; "p50", "p90", "p99.9" …, and "errors" as a
// percentage or a ratio). At least one term is needed.
func ParseSLO(s string) (SLO, error) {
	slo := SLO{MaxErrorRatio: -1}
	if strings.TrimSpace(s) == "" {
		return slo, errors.New(`empty SLO: give terms like "p99<10ms,errors<0.1%"`)
	}
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		name, bound, ok := strings.Cut(term, "<")
		name, bound = strings.TrimSpace(name), strings.TrimSpace(strings.TrimPrefix(bound, "="))
		if !ok || name == "" || bound == "" {
			return slo, fmt.Errorf("SLO term %q: want NAME<BOUND, e.g. p99<10ms or errors<0.1%%", term)
		}
		switch {
		case name == "errors":
			ratio, err := parseRatio(bound)
			if err != nil {
				return slo, fmt.Errorf("SLO term %q: %w", term, err)
			}
			slo.MaxErrorRatio = ratio
		case strings.HasPrefix(name, "p"):
			p, err := strconv.ParseFloat(name[1:], 64)
			if err != nil || p <= 0 || p >= 100 || math.IsNaN(p) {
				return slo, fmt.Errorf("SLO term %q: %q is not a percentile between p0 and p100 (p50, p99, p99.9)", term, name)
			}
			d, err := time.ParseDuration(bound)
			if err != nil || d <= 0 {
				return slo, fmt.Errorf("SLO term %q: %q is not a positive duration (10ms, 1.5s)", term, bound)
			}
			slo.Latency = append(slo.Latency, LatencyBound{Percentile: p, Max: d})
		default:
			return slo, fmt.Errorf("SLO term %q: unknown measure %q (use p50, p99, p99.9 … or errors)", term, name)
		}
	}
	return slo, nil
}

func parseRatio(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a non-negative number or percentage", s)
	}
	if pct {
		v /= 100
	}
	if v > 1 {
		return 0, fmt.Errorf("%q is more than 100%%", s)
	}
	return v, nil
}

func (s SLO) String() string {
	var parts []string
	for _, b := range s.Latency {
		parts = append(parts, fmt.Sprintf("p%s<%s", strconv.FormatFloat(b.Percentile, 'f', -1, 64), b.Max))
	}
	if s.MaxErrorRatio >= 0 {
		parts = append(parts, fmt.Sprintf("errors<%s%%", strconv.FormatFloat(s.MaxErrorRatio*100, 'f', -1, 64)))
	}
	return strings.Join(parts, ",")
}

// SearchOptions configure FindMax.
type SearchOptions struct {
	// Load is the template of every probe: targets, connections, threads,
	// timeout, headers. Its Rate, Duration and Requests are set per probe.
	Load Options
	SLO  SLO
	// Start is the first probe's rate (default 100 req/s). Rates double
	// while probes pass, then a binary search narrows the interval.
	Start float64
	// Max caps the rate probed (default 10,000,000 req/s).
	Max float64
	// Probe is how long each probe runs (default 5s); its first Settle
	// (default 1s, at most half the probe) is not judged, so connection
	// set-up and a queue left by the previous probe do not count.
	Probe  time.Duration
	Settle time.Duration
	// Pause is the idle time between probes (default 1s), so a probe
	// above capacity leaves no queue behind.
	Pause time.Duration
	// Precision stops the search when the passing and failing rates are
	// within this fraction of each other (default 0.02).
	Precision float64
	// MaxProbes bounds the number of probes (default 30).
	MaxProbes int
	// OnProbe, when set, is called after each probe.
	OnProbe func(Probe)
	// Runner, when set, runs each probe's load instead of Run in this
	// process (distributed probes run on agents): it returns the result
	// and the generator's CPU as a fraction of its threads (the busiest
	// generator's, when there are several), which marks a failing probe
	// generator-limited at 0.9.
	Runner func(ctx context.Context, o Options) (res *Result, loaderCPU float64, err error)
}

// Probe is one constant-rate load of a capacity search.
type Probe struct {
	Rate     float64 // requested req/s
	Achieved float64 // completed req/s over the judged part
	Requests int64
	Errors   int64
	// Latency percentiles (corrected) over the judged part, in µs:
	// P50, P99, P999; and the uncorrected p50 and p99 (from the actual
	// send: the server's response time without the generator's lag).
	P50, P99, P999, UncorrectedP50, UncorrectedP99 float64
	// MeanBehind is how late sends were on average (the generator's lag).
	MeanBehind time.Duration
	// LoaderCPU is the generator's CPU over the probe as a fraction of its
	// threads (1 = every thread busy all the time).
	LoaderCPU float64
	Pass      bool
	// Reason says why the probe failed ("p99 12.3ms > 10ms"), or is "".
	Reason string
	// Result is the probe's whole load (nil in tests of the search).
	Result *Result `json:"-"`
	// GeneratorLimited marks a failure the generator caused: it fell
	// behind its schedule while the server answered as fast as at the
	// lowest passing rate (so the server was not saturated: too few
	// connections), or it used nearly all of its threads' CPU.
	GeneratorLimited bool
	// Stalled marks a failure of latency bounds only, each of which the
	// uncorrected latency (from the actual send) met: the server answered
	// in time, the sends were late — a stall of the generator (its
	// process descheduled, a pause) or too few free connections. The
	// search probes the rate again once before it believes it.
	Stalled bool
}

// Capacity is what FindMax found.
type Capacity struct {
	SLO SLO
	// Rate is the highest probed rate that met the SLO (0 when none did).
	Rate float64
	// Upper is the lowest probed rate that failed (0 when none did).
	Upper float64
	// Limit says what bounded the search: "server" (the SLO failed above
	// Rate), "generator" (the generator could not go higher: Rate is a lower
	// bound of the server's capacity), "max" (Max reached while passing),
	// "probes" (MaxProbes reached before Precision), or "none" (even the
	// lowest rate probed failed).
	Limit  string
	Probes []Probe
}

// Verdict is a one-line explanation of c.
func (c *Capacity) Verdict() string {
	switch c.Limit {
	case "server":
		return fmt.Sprintf("capacity %.0f req/s under %s (%.0f req/s failed: %s)", c.Rate, c.SLO, c.Upper, c.failReason())
	case "generator":
		if c.Rate == 0 {
			return fmt.Sprintf("generator-limited: the load generator could not drive even the first rate within %s (%s) — add connections (-c) or threads (-t), or load from another machine", c.SLO, c.failReason())
		}
		return fmt.Sprintf("generator-limited: the load generator could not drive more than %.0f req/s within %s (%s); the server's capacity is at least that — add connections (-c) or threads (-t), or load from another machine", c.Rate, c.SLO, c.failReason())
	case "max":
		return fmt.Sprintf("capacity above %.0f req/s (the search's maximum rate) under %s", c.Rate, c.SLO)
	case "probes":
		return fmt.Sprintf("capacity between %.0f and %.0f req/s under %s (out of probes before the precision was reached)", c.Rate, c.Upper, c.SLO)
	}
	return fmt.Sprintf("no capacity: even %.0f req/s failed %s (%s)", c.Upper, c.SLO, c.failReason())
}

// At is the probe at the capacity's rate (nil when none passed).
func (c *Capacity) At() *Probe {
	if c == nil {
		return nil
	}
	for i := range c.Probes {
		if p := &c.Probes[i]; p.Pass && p.Rate == c.Rate {
			return p
		}
	}
	return nil
}

// failReason quotes the probe that bounded the search: the last failure
// at Upper (a rate probed again after a stall failed twice), or the
// generator-limited one.
func (c *Capacity) failReason() string {
	reason := ""
	for _, p := range c.Probes {
		if !p.Pass && (p.Rate == c.Upper || p.GeneratorLimited) {
			reason = p.Reason
			if p.GeneratorLimited {
				break
			}
		}
	}
	return reason
}

func (o *SearchOptions) defaults() error {
	if o.Start == 0 {
		o.Start = 100
	}
	if o.Max == 0 {
		o.Max = 1e7
	}
	if o.Probe == 0 {
		o.Probe = 5 * time.Second
	}
	if o.Settle == 0 {
		o.Settle = min(time.Second, o.Probe/2)
	}
	if o.Pause == 0 {
		o.Pause = time.Second
	}
	if o.Precision == 0 {
		o.Precision = 0.02
	}
	if o.MaxProbes == 0 {
		o.MaxProbes = 30
	}
	switch {
	case len(o.SLO.Latency) == 0 && o.SLO.MaxErrorRatio < 0:
		return errors.New("the SLO has no term")
	case o.Start < 0 || o.Max < 0 || o.Start > o.Max || math.IsNaN(o.Start) || math.IsNaN(o.Max):
		return fmt.Errorf("start rate %g and max rate %g: want 0 < start <= max", o.Start, o.Max)
	case o.Probe < 2*time.Second:
		return fmt.Errorf("probe duration %s: want at least 2s (each probe settles before it is judged)", o.Probe)
	case o.Settle < 0 || o.Settle >= o.Probe:
		return fmt.Errorf("settle %s: want at least 0 and less than the probe duration %s", o.Settle, o.Probe)
	case o.Pause < 0:
		return fmt.Errorf("pause %s: must not be negative", o.Pause)
	case o.Precision <= 0 || o.Precision >= 1:
		return fmt.Errorf("precision %g: want a fraction between 0 and 1 (0.02 = 2%%)", o.Precision)
	case o.MaxProbes < 2:
		return fmt.Errorf("max probes %d: want at least 2", o.MaxProbes)
	}
	return nil
}

// FindMax searches for the highest constant request rate at which the
// target meets the SLO: open-loop probes at doubling rates from Start until
// one fails, then a binary search between the last pass and the first
// failure until they are within Precision. A failure the generator caused
// (see Probe.GeneratorLimited) ends the search with Limit "generator",
// never as the server's capacity.
func FindMax(ctx context.Context, o SearchOptions) (*Capacity, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	first := true
	return search(ctx, o, func(ctx context.Context, rate float64) (Probe, error) {
		if !first && o.Pause > 0 {
			select {
			case <-time.After(o.Pause):
			case <-ctx.Done():
				return Probe{}, ctx.Err()
			}
		}
		first = false
		return runProbe(ctx, o, rate)
	})
}

// search is FindMax with the probe as a function, so the search itself can
// be tested against a model of a server.
func search(ctx context.Context, o SearchOptions, run func(context.Context, float64) (Probe, error)) (*Capacity, error) {
	c := &Capacity{SLO: o.SLO}
	var base *Probe // the lowest passing probe: the server's unloaded response time
	serverFailed := false
	var probe func(rate float64) (Probe, error)
	retried := map[float64]bool{}
	probe = func(rate float64) (Probe, error) {
		p, err := run(ctx, rate)
		if err != nil {
			return p, err
		}
		if p.Stalled && !p.GeneratorLimited {
			if !retried[rate] && len(c.Probes)+1 < o.MaxProbes {
				// A stall is usually transient: record the probe and
				// run the same rate again.
				retried[rate] = true
				p.Reason += "; the server answered within the SLO (uncorrected latency), the sends were late: probing the rate again"
				c.Probes = append(c.Probes, p)
				if o.OnProbe != nil {
					o.OnProbe(p)
				}
				return probe(rate)
			}
			if retried[rate] {
				p.GeneratorLimited = true
				p.Reason += "; the sends were late twice at this rate while the server answered within the SLO"
			}
		}
		if !serverFailed {
			// Once the server has failed a probe on its own, a later
			// failure at a lower rate is the server's too, lag or not.
			generatorLag(&p, base)
		}
		if !p.Pass && !p.GeneratorLimited {
			serverFailed = true
		}
		if p.Pass && (base == nil || p.Rate < base.Rate) {
			b := p
			base = &b
		}
		c.Probes = append(c.Probes, p)
		if o.OnProbe != nil {
			o.OnProbe(p)
		}
		return p, nil
	}
	lo, hi := 0.0, 0.0 // highest pass, lowest failure
	finish := func(limit string) (*Capacity, error) {
		c.Rate, c.Upper, c.Limit = lo, hi, limit
		return c, nil
	}
	// Exponential phase.
	for rate := o.Start; ; rate = math.Min(rate*2, o.Max) {
		if len(c.Probes) >= o.MaxProbes {
			return finish("probes")
		}
		p, err := probe(rate)
		if err != nil {
			return nil, err
		}
		if p.GeneratorLimited {
			hi = rate
			return finish("generator")
		}
		if !p.Pass {
			hi = rate
			break
		}
		lo = rate
		if rate >= o.Max {
			return finish("max")
		}
	}
	// Below the start rate: halve until a probe passes.
	for lo == 0 {
		if len(c.Probes) >= o.MaxProbes || hi/2 < 1 {
			return finish("none")
		}
		p, err := probe(hi / 2)
		if err != nil {
			return nil, err
		}
		if p.GeneratorLimited {
			hi /= 2
			return finish("generator")
		}
		if p.Pass {
			lo = hi / 2
		} else {
			hi /= 2
		}
	}
	// Binary phase.
	for (hi-lo)/hi > o.Precision {
		if len(c.Probes) >= o.MaxProbes {
			return finish("probes")
		}
		mid := (lo + hi) / 2
		p, err := probe(mid)
		if err != nil {
			return nil, err
		}
		if p.GeneratorLimited {
			hi = mid
			return finish("generator")
		}
		if p.Pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return finish("server")
}

// runProbe drives one constant-rate load and judges it.
func runProbe(ctx context.Context, o SearchOptions, rate float64) (Probe, error) {
	lo := o.Load
	lo.Rate, lo.Duration, lo.Requests = rate, o.Probe, 0
	lo.Tag = "probe"
	lo.Interval = o.Settle
	if lo.Interval <= 0 {
		lo.Interval = time.Second
	}
	var res *Result
	var loaderCPU float64
	var err error
	threads := Defaults(lo).Threads
	if o.Runner != nil {
		res, loaderCPU, err = o.Runner(ctx, lo)
	} else {
		before := cpuTime()
		res, err = Run(ctx, lo)
		if err == nil && res.Duration > 0 && threads > 0 {
			loaderCPU = (cpuTime() - before).Seconds() / res.Duration.Seconds() / float64(threads)
		}
	}
	if err != nil {
		return Probe{Rate: rate}, fmt.Errorf("probing %.0f req/s: %w", rate, err)
	}
	p := judge(o.SLO, rate, res, o.Settle)
	p.Result = res
	p.LoaderCPU = loaderCPU
	if !p.Pass && p.LoaderCPU >= 0.9 {
		p.GeneratorLimited = true
		if o.Runner != nil {
			p.Reason += fmt.Sprintf("; the busiest generator used %.0f%% of the cores its threads can use", p.LoaderCPU*100)
		} else {
			p.Reason += fmt.Sprintf("; the generator used %.0f%% of its %d thread(s)", p.LoaderCPU*100, threads)
		}
	}
	return p, nil
}

// judge measures a probe's result past its settling time against the SLO.
func judge(slo SLO, rate float64, res *Result, settle time.Duration) Probe {
	p := Probe{Rate: rate, MeanBehind: res.MeanBehind}
	lat, unc := res.Latency, res.Uncorrected
	var judged time.Duration
	if len(res.Intervals) > 1 && res.Intervals[0].Start+res.Intervals[0].Duration <= settle+time.Millisecond {
		// Judge every interval after the settling one.
		lat = nil
		for _, iv := range res.Intervals[1:] {
			p.Requests += iv.Requests
			p.Errors += iv.Errors
			judged += iv.Duration
			if iv.Latency == nil {
				continue
			}
			if lat == nil {
				lat = hdrhistogram.Import(iv.Latency.Export())
			} else {
				lat.Merge(iv.Latency)
			}
		}
	}
	if judged == 0 {
		lat = res.Latency
		p.Requests, p.Errors, judged = res.Requests, res.Errors, res.Duration
	}
	if judged > 0 {
		p.Achieved = float64(p.Requests) / judged.Seconds()
	}
	if lat != nil && lat.TotalCount() > 0 {
		p.P50 = float64(lat.ValueAtQuantile(50))
		p.P99 = float64(lat.ValueAtQuantile(99))
		p.P999 = float64(lat.ValueAtQuantile(99.9))
	}
	if unc == nil {
		unc = lat
	}
	if unc != nil && unc.TotalCount() > 0 {
		p.UncorrectedP50 = float64(unc.ValueAtQuantile(50))
		p.UncorrectedP99 = float64(unc.ValueAtQuantile(99))
	}
	var fails []string
	stalled := 0 // latency failures the uncorrected latency meets
	for _, b := range slo.Latency {
		if lat == nil || lat.TotalCount() == 0 {
			fails = append(fails, "no response")
			break
		}
		v := time.Duration(lat.ValueAtQuantile(b.Percentile)) * time.Microsecond
		if v > b.Max {
			fails = append(fails, fmt.Sprintf("p%s %s > %s", strconv.FormatFloat(b.Percentile, 'f', -1, 64), roundDur(v), b.Max))
			if unc != nil && unc != lat && unc.TotalCount() > 0 && time.Duration(unc.ValueAtQuantile(b.Percentile))*time.Microsecond <= b.Max {
				stalled++
			}
		}
	}
	latencyFails := len(fails)
	if slo.MaxErrorRatio >= 0 {
		total := p.Requests
		if total == 0 {
			total = p.Errors
		}
		ratio := 1.0
		if total > 0 {
			ratio = float64(p.Errors) / float64(total)
		}
		if ratio > slo.MaxErrorRatio {
			fails = append(fails, fmt.Sprintf("errors %.3g%% > %.3g%%", ratio*100, slo.MaxErrorRatio*100))
		}
	}
	// Above capacity the server completes fewer requests than are sent,
	// before the queue has grown enough to break a latency bound.
	// Two requests of slack: at low rates a one-second window counts whole
	// requests, and 48 of 50 is not a shortfall.
	if judged > 0 && float64(p.Requests) < 0.97*rate*judged.Seconds()-2 {
		fails = append(fails, fmt.Sprintf("achieved %.0f req/s, below 97%% of %.0f", p.Achieved, rate))
	}
	p.Pass = len(fails) == 0
	p.Stalled = !p.Pass && stalled > 0 && stalled == latencyFails && latencyFails == len(fails)
	p.Reason = strings.Join(fails, ", ")
	return p
}

// generatorLag marks p as the generator's failure when its sends fell behind
// schedule while the server answered (uncorrected p50) about as fast as at
// base, the lowest passing probe: the server was not saturated, the
// generator could not send fast enough (too few connections).
func generatorLag(p *Probe, base *Probe) {
	if p.Pass || p.GeneratorLimited || base == nil || p.MeanBehind <= time.Millisecond {
		return
	}
	if p.UncorrectedP50 <= 2*base.UncorrectedP50+1000 {
		p.GeneratorLimited = true
		p.Reason += fmt.Sprintf("; sends were %s late on average while the server answered as fast as at %.0f req/s (uncorrected p50 %s, was %s)",
			roundDur(p.MeanBehind), base.Rate, roundDur(time.Duration(p.UncorrectedP50)*time.Microsecond), roundDur(time.Duration(base.UncorrectedP50)*time.Microsecond))
	}
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
