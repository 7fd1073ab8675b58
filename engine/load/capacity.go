package load

import (
	"cmp"
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

// The thresholds of the search's rules (docs/load.md, "Who is the
// limit").
const (
	// busyFull is the connection occupancy the offered rate needs
	// (Probe.Busy) from which every connection counts as busy.
	busyFull = 0.8
	// grownFactor is how much slower than at the lowest passing rate the
	// server's uncorrected p50 must be, with every connection busy, to be
	// the server's own queue (a plateau) rather than too few connections.
	grownFactor = 1.5
	// cpuFull is the loader CPU (fraction of its threads) from which a
	// failure is the generator's.
	cpuFull = 0.9
	// majorityErrors is the error ratio above which a probe fails when the
	// SLO has no errors term.
	majorityErrors = 0.5
)

// The limits of SearchOptions (see SearchOptions.Validate).
const (
	// MinStartRate is the lowest first probe: the search halves the rate
	// below a failing start down to 1 req/s.
	MinStartRate = 1.0
	// MaxSearchRate bounds the start and maximum rates.
	MaxSearchRate = 1e9
	// MinProbe and MaxProbe bound a probe's length: each settles for up to
	// a second before it is judged.
	MinProbe = 2 * time.Second
	MaxProbe = time.Hour
	// MaxPause bounds the idle time between probes.
	MaxPause = time.Hour
	// MaxSearchProbes bounds MaxProbes.
	MaxSearchProbes = 1000
)

// Validate is the one rule for the settings of a capacity search, whichever
// front end built them (the `benchflow load --find-max` flags, a load
// step's search block, FindMax itself). Zero fields take their defaults.
// It returns nil or every problem found, each a *FieldError whose Field is
// the search block's attribute ("slo", "start_rate", "max_rate", "probe",
// "settle", "pause", "precision", "max_probes"), joined with errors.Join:
//
//   - an SLO with at least one term;
//   - start and max rates 0 or finite, from MinStartRate to MaxSearchRate,
//     the start at most the maximum (10,000,000 when 0);
//   - probe 0 or from MinProbe to MaxProbe; settle 0 or from MinInterval
//     (it is the probe's timeseries interval) to less than the probe;
//     pause from 0 to MaxPause;
//   - precision 0 or a fraction strictly between 0 and 1;
//   - max probes 0 or from 2 to MaxSearchProbes.
//
// The load template (Load) is checked by Options.Validate when each probe
// runs; its rate, duration and requests are the search's own.
func (o SearchOptions) Validate() error {
	var errs []error
	bad := func(field, value, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	if len(o.SLO.Latency) == 0 && o.SLO.MaxErrorRatio < 0 {
		bad("slo", "", "the SLO has no term: give terms like \"p99<10ms,errors<0.1%\"")
	}
	rate := func(field string, v float64) bool {
		s := strconv.FormatFloat(v, 'g', -1, 64)
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			bad(field, s, "must be a positive number of requests per second")
		case v != 0 && v < MinStartRate:
			bad(field, s, fmt.Sprintf("must be at least %g request per second", MinStartRate))
		case v > MaxSearchRate:
			bad(field, s, fmt.Sprintf("must be at most %g requests per second", MaxSearchRate))
		default:
			return true
		}
		return false
	}
	okStart, okMax := rate("start_rate", o.Start), rate("max_rate", o.Max)
	if max := cmp.Or(o.Max, 1e7); okStart && okMax && o.Start > max {
		bad("max_rate", strconv.FormatFloat(max, 'g', -1, 64), fmt.Sprintf("is below the start rate %g", o.Start))
	}
	probe := cmp.Or(o.Probe, 5*time.Second)
	switch {
	case o.Probe != 0 && o.Probe < MinProbe:
		bad("probe", o.Probe.String(), fmt.Sprintf("must be at least %s (each probe settles before it is judged)", MinProbe))
	case o.Probe > MaxProbe:
		bad("probe", o.Probe.String(), fmt.Sprintf("must be at most %s", MaxProbe))
	}
	switch {
	case o.Settle < 0 || (o.Settle > 0 && o.Settle < MinInterval):
		bad("settle", o.Settle.String(), fmt.Sprintf("must be 0 (the default) or at least %s", MinInterval))
	case o.Settle >= probe:
		bad("settle", o.Settle.String(), fmt.Sprintf("must be shorter than the probe (%s)", probe))
	}
	if o.Pause < 0 || o.Pause > MaxPause {
		bad("pause", o.Pause.String(), fmt.Sprintf("must be from 0 to %s", MaxPause))
	}
	if p := o.Precision; p < 0 || p >= 1 || math.IsNaN(p) {
		bad("precision", strconv.FormatFloat(p*100, 'g', -1, 64)+"%", "must be a fraction between 0 and 1 (0.02 = 2%)")
	}
	if n := o.MaxProbes; n < 0 || n == 1 || n > MaxSearchProbes {
		bad("max_probes", strconv.Itoa(n), fmt.Sprintf("must be from 2 to %d", MaxSearchProbes))
	}
	return errors.Join(errs...)
}

// defaults validates o and fills its zero fields.
func (o *SearchOptions) defaults() error {
	if err := o.Validate(); err != nil {
		return err
	}
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
		if !p.Pass && !p.ErrorsFailed && p.LoaderCPU >= cpuFull {
			p.GeneratorLimited, p.Cause = true, CauseCPU
			if p.CPUNote == "" {
				p.CPUNote = fmt.Sprintf("; the generator used %.0f%% of its CPU", p.LoaderCPU*100)
			}
			p.Reason += p.CPUNote
		}
		if !p.Pass && !p.GeneratorLimited && !p.ErrorsFailed {
			switch lateCause(&p, base) {
			case CauseClock:
				if !retried[rate] && len(c.Probes)+1 < o.MaxProbes {
					// A stall is usually transient: record the probe and
					// run the same rate again.
					retried[rate] = true
					p.Reason += "; probing the rate again"
					c.Probes = append(c.Probes, p)
					if o.OnProbe != nil {
						o.OnProbe(p)
					}
					return probe(rate)
				}
				if retried[rate] {
					p.GeneratorLimited, p.Cause = true, CauseClock
					p.Reason += "; the sends were late twice at this rate"
				}
			case CauseConnections:
				// Once the server has failed a probe on its own, a later
				// failure at a lower rate is the server's too.
				if !serverFailed {
					p.GeneratorLimited, p.Cause = true, CauseConnections
				}
			}
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
		if limit == "generator" {
			for _, p := range c.Probes {
				if p.GeneratorLimited {
					c.Cause = p.Cause
				}
			}
		}
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
	if o.Runner != nil {
		p.CPUNote = fmt.Sprintf("; the busiest generator used %.0f%% of the cores its threads can use", p.LoaderCPU*100)
	} else {
		p.CPUNote = fmt.Sprintf("; the generator used %.0f%% of its %d thread(s)", p.LoaderCPU*100, threads)
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
	p.Connections, p.Streams = res.Connections, max(res.StreamLimit, 1)
	if whole := res.Uncorrected; whole != nil && whole.TotalCount() > 0 && res.Connections > 0 {
		p.Busy = rate * whole.Mean() / 1e6 / float64(res.Connections*p.Streams)
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
	// Requests counts responses (errors among them: status >= 400), and
	// Errors also counts the requests that got no response at all.
	ratio := 1.0
	if p.Requests > 0 {
		ratio = min(1, float64(p.Errors)/float64(p.Requests))
	}
	switch {
	case slo.MaxErrorRatio >= 0 && ratio > slo.MaxErrorRatio:
		fails = append(fails, fmt.Sprintf("errors %.3g%% > %.3g%%", ratio*100, slo.MaxErrorRatio*100))
		p.ErrorsFailed = true
	case slo.MaxErrorRatio < 0 && p.Errors > 0 && ratio > majorityErrors:
		fails = append(fails, fmt.Sprintf("errors %.3g%% of the requests (the SLO has no errors term; more than half failing fails a probe)", ratio*100))
		p.ErrorsFailed = true
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

// lateCause says whose failure a failing probe whose sends were late is,
// and notes why in its Reason: CauseClock when the connections were free
// (the generator itself fell behind: its process was not scheduled in
// time), CauseConnections when every connection was busy while the server
// answered about as fast as at base, the lowest passing probe (more
// connections would have carried more), and "" — the server's limit — when
// every connection was busy and the server's own response time had grown
// (the queue formed in the client because the server was saturated: a
// plateau), or when the server was slow itself. A probe whose sends were on
// time is the server's failure.
func lateCause(p *Probe, base *Probe) string {
	if p.MeanBehind <= time.Millisecond && !p.Stalled {
		return ""
	}
	fast := base != nil && p.UncorrectedP50 <= grownFactor*base.UncorrectedP50+100
	was := func() string {
		return fmt.Sprintf("uncorrected p50 %s, was %s at %.0f req/s", roundDur(time.Duration(p.UncorrectedP50)*time.Microsecond),
			roundDur(time.Duration(base.UncorrectedP50)*time.Microsecond), base.Rate)
	}
	switch {
	case p.Busy >= busyFull && !fast:
		p.Reason += fmt.Sprintf("; all %s connections busy, sends %s late: the server's plateau", connCount(p), roundDur(p.MeanBehind))
		if base != nil {
			p.Reason += " (" + was() + ")"
		}
		return ""
	case p.Busy >= busyFull:
		p.Reason += fmt.Sprintf("; all %s connections busy, sends %s late, while the server answered as fast as unloaded (%s)", connCount(p), roundDur(p.MeanBehind), was())
		return CauseConnections
	case p.Stalled || fast:
		p.Reason += fmt.Sprintf("; sends %s late with %.0f%% of the connections busy, the server answering in time", roundDur(p.MeanBehind), p.Busy*100)
		return CauseClock
	}
	return ""
}

func connCount(p *Probe) string {
	if p.Connections > 0 && p.Streams > 1 {
		return fmt.Sprintf("%d streams of the %d", p.Connections*p.Streams, p.Connections)
	}
	if p.Connections > 0 {
		return strconv.Itoa(p.Connections)
	}
	return "the"
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
