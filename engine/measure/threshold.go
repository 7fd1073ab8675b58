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

// Threshold is one pass/fail bound on a load's result (`benchflow load
// --threshold 'p99<10ms'`, k6's thresholds): a measure, a comparison and a
// bound. The grammar is the one of SLO terms (ParseSLO reads its terms
// with parseTerm): latencies in units' grammar (10ms, 250us, 1.5s; a bare
// number is refused), error ratios as a percentage or a ratio.
//
//	p50 p90 p99 p99.9 …   corrected latency percentile   p99<10ms
//	mean, max             corrected latency              mean<=2ms
//	rps                   responses per second           rps>1000
//	errors                errors ÷ attempts (a ratio)    errors<1%
//	missed                open-loop sends never made     missed==0
//
// Comparisons: <, <=, >, >=, == (== only for missed).
type Threshold struct {
	Expr       string  // as written, trimmed
	Measure    string  // "p", "mean", "max", "rps", "errors", "missed"
	Percentile float64 // Measure "p": 99 for p99
	Op         string
	// Bound is in the measure's unit: µs for latencies, req/s, a ratio
	// (0.01 for 1%), a count.
	Bound float64
	// Latency is the bound of a latency measure, as parsed.
	Latency time.Duration
}

// ThresholdResult is a Threshold judged against a result: what `load
// --json` prints under "thresholds". Value is in the threshold's unit (µs
// for latencies).
type ThresholdResult struct {
	Expr  string  `json:"expr"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"` // "us", "req/s", "ratio" or "count"
	OK    bool    `json:"ok"`
	// Text is the value as the expression writes it ("8.12ms", "0.5%").
	Text string `json:"text"`
}

// thresholdOps are the comparisons, longest first so that "<=" is not
// read as "<".
var thresholdOps = []string{"<=", ">=", "==", "<", ">"}

// ThresholdError locates a problem in a threshold expression: Column is
// the 1-based byte offset of the part at fault in Expr.
type ThresholdError struct {
	Expr   string
	Column int
	Msg    string
}

func (e *ThresholdError) Error() string {
	return fmt.Sprintf("%q, column %d: %s", e.Expr, e.Column, e.Msg)
}

// ParseThreshold reads one threshold expression.
func ParseThreshold(s string) (Threshold, error) {
	t, err := parseTerm(s)
	if err != nil {
		return t, err
	}
	if t.Op == "==" && t.Measure != "missed" {
		return t, &ThresholdError{s, strings.Index(s, "==") + 1, "== compares counts (missed==0): bound a latency, rate or ratio with <, <=, > or >="}
	}
	return t, nil
}

// parseTerm reads MEASURE OP BOUND, spaces allowed around each part.
func parseTerm(s string) (Threshold, error) {
	t := Threshold{Expr: strings.TrimSpace(s)}
	bad := func(at int, format string, args ...any) (Threshold, error) {
		return t, &ThresholdError{s, at + 1, fmt.Sprintf(format, args...)}
	}
	opAt, op := -1, ""
	for i := 0; i < len(s) && opAt < 0; i++ {
		for _, o := range thresholdOps {
			if strings.HasPrefix(s[i:], o) {
				opAt, op = i, o
				break
			}
		}
	}
	if strings.TrimSpace(s) == "" {
		return bad(0, "empty: write MEASURE OP BOUND, e.g. p99<10ms, rps>1000, errors<1%%")
	}
	if opAt < 0 {
		return bad(0, "no comparison: write MEASURE OP BOUND with <, <=, >, >= or ==, e.g. p99<10ms")
	}
	t.Op = op
	name := strings.TrimSpace(s[:opAt])
	boundAt := opAt + len(op)
	bound := strings.TrimSpace(s[boundAt:])
	boundAt += len(s[boundAt:]) - len(strings.TrimLeft(s[boundAt:], " \t"))
	nameAt := len(s[:opAt]) - len(strings.TrimLeft(s[:opAt], " \t"))
	if name == "" {
		return bad(0, "no measure before %s: one of p50, p99, p99.9 …, mean, max, rps, errors, missed", op)
	}
	if bound == "" {
		return bad(boundAt, "no bound after %s", op)
	}
	switch {
	case name == "mean" || name == "max" || (strings.HasPrefix(name, "p") && len(name) > 1):
		if name[0] == 'p' {
			p, err := strconv.ParseFloat(name[1:], 64)
			if err != nil || !(p > 0 && p < 100) {
				return bad(nameAt, "%q is not a percentile between p0 and p100 (p50, p99, p99.9)", name)
			}
			t.Measure, t.Percentile = "p", p
		} else {
			t.Measure = name
		}
		d, err := units.ParseLatency(bound)
		if err == nil && d <= 0 {
			err = fmt.Errorf("%q is not a positive latency (examples: 250us, 10ms, 1.5s)", bound)
		}
		if err != nil {
			return bad(boundAt, "%v", err)
		}
		t.Bound, t.Latency = float64(d)/float64(time.Microsecond), d
	case name == "rps":
		v, err := strconv.ParseFloat(bound, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return bad(boundAt, "%q is not a rate: a number of responses per second (rps>1000)", bound)
		}
		t.Measure, t.Bound = name, v
	case name == "errors":
		v, err := parseRatio(bound)
		if err != nil {
			return bad(boundAt, "%v", err)
		}
		t.Measure, t.Bound = name, v
	case name == "missed":
		v, err := strconv.ParseInt(bound, 10, 64)
		if err != nil || v < 0 {
			return bad(boundAt, "%q is not a count of sends (missed==0, missed<10)", bound)
		}
		t.Measure, t.Bound = name, float64(v)
	default:
		return bad(nameAt, "unknown measure %q: one of p50, p99, p99.9 …, mean, max, rps, errors, missed", name)
	}
	return t, nil
}

// ParseThresholds reads every expression, the first problem named by its
// position in the list (1-based) as the flag's repetition.
func ParseThresholds(exprs []string) ([]Threshold, error) {
	var out []Threshold
	for i, e := range exprs {
		t, err := ParseThreshold(e)
		if err != nil {
			if len(exprs) > 1 {
				return nil, fmt.Errorf("threshold %d: %w", i+1, err)
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// errNoLatency is the value of a latency threshold on a result without a
// response: it cannot hold.
var errNoLatency = errors.New("no response")

// Judge measures t on r. A latency threshold on a result without any
// response fails (Text "no response").
func (t Threshold) Judge(r *Record) ThresholdResult {
	res := ThresholdResult{Expr: t.Expr}
	var v float64
	var err error
	switch t.Measure {
	case "p", "mean", "max":
		res.Unit = "us"
		h := r.Latency
		if h == nil || h.TotalCount() == 0 {
			err = errNoLatency
			break
		}
		switch t.Measure {
		case "p":
			v = float64(h.ValueAtQuantile(t.Percentile))
		case "mean":
			v = h.Mean()
		default:
			v = float64(h.Max())
		}
		res.Text = (time.Duration(v * float64(time.Microsecond))).Round(time.Microsecond).String()
	case "rps":
		res.Unit = "req/s"
		v = r.RPS()
		res.Text = strconv.FormatFloat(v, 'f', 2, 64)
	case "errors":
		res.Unit = "ratio"
		v = r.ErrorRatio()
		res.Text = strconv.FormatFloat(v*100, 'g', 4, 64) + "%"
	case "missed":
		res.Unit = "count"
		v = float64(r.Missed)
		res.Text = strconv.FormatInt(r.Missed, 10)
	}
	if err != nil {
		res.Text = err.Error()
		return res
	}
	res.Value = v
	switch t.Op {
	case "<":
		res.OK = v < t.Bound
	case "<=":
		res.OK = v <= t.Bound
	case ">":
		res.OK = v > t.Bound
	case ">=":
		res.OK = v >= t.Bound
	case "==":
		res.OK = v == t.Bound
	}
	return res
}

// ErrorRatio is the share of attempted requests that failed: Errors over
// the attempts (responses, plus the requests that got none). 0 when
// nothing was attempted.
func (r *Record) ErrorRatio() float64 {
	attempts := r.Requests + r.Errors - r.ErrorsBy["http"]
	if attempts <= 0 {
		return 0
	}
	return float64(r.Errors) / float64(attempts)
}

// JudgeThresholds judges every threshold on r, records the outcomes in
// r.Thresholds and returns the failed ones.
func JudgeThresholds(ts []Threshold, r *Record) (failed []ThresholdResult) {
	r.Thresholds = nil
	for _, t := range ts {
		res := t.Judge(r)
		r.Thresholds = append(r.Thresholds, res)
		if !res.OK {
			failed = append(failed, res)
		}
	}
	return failed
}
