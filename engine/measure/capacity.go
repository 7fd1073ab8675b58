package measure

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/units"
)

// DefaultConnections is engine/load's default number of connections (its
// Defaults), which a capacity verdict names when no probe recorded its own.
const DefaultConnections = 10

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
		// The terms are thresholds' (parseTerm: one grammar), limited to
		// upper bounds on percentiles and the error ratio.
		term = strings.TrimSpace(term)
		t, err := parseTerm(term)
		if name, bound, _ := strings.Cut(term, "<"); err != nil && (strings.TrimSpace(name) == "" || strings.TrimSpace(strings.TrimPrefix(bound, "=")) == "") {
			err = errors.New("want NAME<BOUND, e.g. p99<10ms or errors<0.1%")
		}
		if err != nil {
			var te *ThresholdError
			if errors.As(err, &te) {
				err = errors.New(te.Msg)
			}
			return slo, fmt.Errorf("SLO term %q: %w", term, err)
		}
		if t.Op != "<" && t.Op != "<=" {
			return slo, fmt.Errorf("SLO term %q: want NAME<BOUND, e.g. p99<10ms or errors<0.1%%", term)
		}
		switch t.Measure {
		case "errors":
			slo.MaxErrorRatio = t.Bound
		case "p":
			slo.Latency = append(slo.Latency, LatencyBound{Percentile: t.Percentile, Max: t.Latency})
		default:
			return slo, fmt.Errorf("SLO term %q: unknown measure %q (use p50, p99, p99.9 … or errors)", term, strings.TrimSpace(term[:strings.IndexAny(term, "<>=")]))
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
	Result *Record `json:"-"`
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
	// ErrorsFailed marks a probe that failed on its error ratio: the
	// server's failure, whatever the latency or the generator's state.
	ErrorsFailed bool `json:"-"`
	// CPUNote words LoaderCPU for a CPU-limited probe's Reason.
	CPUNote string `json:"-"`
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
		return fmt.Sprintf("capacity %.0f req/s under %s (%.0f req/s failed: %s)", c.Rate, c.SLO, c.Upper, c.FailReason())
	case "generator":
		what := fmt.Sprintf("could not drive more than %.0f req/s within %s (%s); the server's capacity is at least that", c.Rate, c.SLO, c.FailReason())
		if c.Rate == 0 {
			what = fmt.Sprintf("could not drive even the first rate within %s (%s)", c.SLO, c.FailReason())
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
	return fmt.Sprintf("no capacity: even %.0f req/s failed %s (%s)", c.Upper, c.SLO, c.FailReason())
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
	return DefaultConnections, 1
}

// FailReason quotes the probe that bounded the search: the last failure
// at Upper (a rate probed again after a stall failed twice), or the
// generator-limited one.
func (c *Capacity) FailReason() string {
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
