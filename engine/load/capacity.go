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

	"github.com/benchflow/benchflow/engine/units"
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
			d, err := units.ParseLatency(bound)
			if err == nil && d <= 0 {
				err = fmt.Errorf("%q is not a positive latency (examples: 250us, 10ms, 1.5s)", bound)
			}
			if err != nil {
				return slo, fmt.Errorf("SLO term %q: %w", term, err)
			}
			slo.Latency = append(slo.Latency, LatencyBound{Percentile: p, Max: d})
		default:
			return slo, fmt.Errorf("SLO term %q: unknown measure %q (use p50, p99, p99.9 … or errors)", term, name)
		}
	}
	return slo, nil
}

// parseRatio reads an error bound: a percentage ("0.1%", units'
// grammar) or a bare ratio ("0.001"), at most 100%.
func parseRatio(s string) (float64, error) {
	var v float64
	var err error
	if strings.HasSuffix(strings.TrimSpace(s), "%") {
		v, err = units.ParsePercentAny(s)
	} else {
		v, err = strconv.ParseFloat(s, 64)
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			err = errors.New("out of range")
		}
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a non-negative number or percentage", s)
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
	// Busy is the share of the connections' time the offered rate needs
	// at the response time measured (Little's law: rate × mean
	// uncorrected latency ÷ the requests that can be in flight at once,
	// connections × streams per connection over HTTP/2). Near 1 or
	// above, every connection (or stream) is in use and a send that comes
	// due waits for one: the queue forms in the client. Well below 1 the
	// connections had room, so late sends are the generator's own delay
	// (a catch-up after a stall fills the connections too, but does not
	// raise Busy).
	Busy float64
	// Connections is the number of connections the probe used, Streams
	// the concurrent streams each could carry (Result.StreamLimit: 1 over
	// HTTP/1.1).
	Connections int
	Streams     int
	// GeneratorLimited marks a failure the generator caused; Cause says
	// what it was short of (CauseCPU, CauseConnections, CauseClock). A
	// failure is the generator's only then: a probe that failed on errors,
	// or whose connections were all busy while the server's response time
	// grew (a server-side plateau), is the server's.
	GeneratorLimited bool
	Cause            string
	// Stalled marks a failure of latency bounds only, each of which the
	// uncorrected latency (from the actual send) met: the server answered
	// in time, the sends were late. Whose failure that is depends on Busy
	// (see the search's rules in docs/load.md).
	Stalled bool
	// errorsFailed marks a probe that failed on its error ratio: the
	// server's failure, whatever the latency or the generator's state.
	errorsFailed bool
	// cpuNote words LoaderCPU for a CPU-limited probe's Reason.
	cpuNote string
}

// What a generator-limited probe was short of (Probe.Cause,
// Capacity.Cause).
const (
	// CauseCPU: the generator used nearly all the CPU its threads can use.
	CauseCPU = "cpu"
	// CauseConnections: every connection was busy while the server
	// answered about as fast as unloaded, so more connections would have
	// carried more requests.
	CauseConnections = "connections"
	// CauseClock: the sends fell behind schedule while connections were
	// free and the CPU was not saturated, at two tries of the same rate:
	// the generator's process was not given time on the clock (a busy
	// machine, a descheduled process).
	CauseClock = "clock"
)

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
	Limit string
	// Cause is what the generator was short of when Limit is "generator"
	// (CauseCPU, CauseConnections, CauseClock).
	Cause  string
	Probes []Probe
}

// Verdict is a one-line explanation of c.
func (c *Capacity) Verdict() string {
	switch c.Limit {
	case "server":
		return fmt.Sprintf("capacity %.0f req/s under %s (%.0f req/s failed: %s)", c.Rate, c.SLO, c.Upper, c.failReason())
	case "generator":
		what := fmt.Sprintf("could not drive more than %.0f req/s within %s (%s); the server's capacity is at least that", c.Rate, c.SLO, c.failReason())
		if c.Rate == 0 {
			what = fmt.Sprintf("could not drive even the first rate within %s (%s)", c.SLO, c.failReason())
		}
		short, advice := "", "add connections (-c) or threads (-t), or load from another machine"
		switch c.Cause {
		case CauseCPU:
			short, advice = " (CPU)", "add threads (-t) if cores are free, or load from another machine"
		case CauseConnections:
			n, streams := c.connections()
			short, advice = " (connections)", fmt.Sprintf("all %d connections (-c) were busy: search again with more, e.g. -c %d", n, 2*n)
			if streams > 1 {
				advice = fmt.Sprintf("all %d streams (%d connections (-c) × %d streams) were busy: search again with more connections or streams (--streams, up to the server's limit), e.g. -c %d", n*streams, n, streams, 2*n)
			}
		case CauseClock:
			short, advice = " (clock)", "its process was not given the CPU in time: search again on a quieter machine"
		}
		return fmt.Sprintf("generator-limited%s: the load generator %s — %s", short, what, advice)
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

// connections is the number of connections of the generator-limited probe
// and the streams each could carry.
func (c *Capacity) connections() (conns, streams int) {
	for _, p := range c.Probes {
		if p.GeneratorLimited && p.Connections > 0 {
			return p.Connections, max(p.Streams, 1)
		}
	}
	return Defaults(Options{}).Connections, 1
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
		if !p.Pass && !p.errorsFailed && p.LoaderCPU >= cpuFull {
			p.GeneratorLimited, p.Cause = true, CauseCPU
			if p.cpuNote == "" {
				p.cpuNote = fmt.Sprintf("; the generator used %.0f%% of its CPU", p.LoaderCPU*100)
			}
			p.Reason += p.cpuNote
		}
		if !p.Pass && !p.GeneratorLimited && !p.errorsFailed {
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
		p.cpuNote = fmt.Sprintf("; the busiest generator used %.0f%% of the cores its threads can use", p.LoaderCPU*100)
	} else {
		p.cpuNote = fmt.Sprintf("; the generator used %.0f%% of its %d thread(s)", p.LoaderCPU*100, threads)
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
		p.errorsFailed = true
	case slo.MaxErrorRatio < 0 && p.Errors > 0 && ratio > majorityErrors:
		fails = append(fails, fmt.Sprintf("errors %.3g%% of the requests (the SLO has no errors term; more than half failing fails a probe)", ratio*100))
		p.errorsFailed = true
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
