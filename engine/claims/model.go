package claims

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/engine/units"
)

// Claim outcomes (a judged claim's Outcome; claims.parquet's outcome).
const (
	Holds        = "holds"
	Fails        = "fails"
	Inconclusive = "inconclusive"
	// Invalid: the values the claim reads hold numbers that are not (NaN,
	// ±Inf) or a negative count, rate or duration; the claim is not
	// judged.
	Invalid = "invalid"
	// NotJudged: no trial of the selected cells succeeded in the run (a
	// stack that was not up): there is nothing to judge, which says
	// nothing about the claim — unlike inconclusive, whose interval
	// straddles the bound. Neither counts as a failure.
	NotJudged = "not judged"
)

// Claim kinds (Claim.Kind; manifest.json's and claims.parquet's kind).
const (
	KindRatio   = "ratio"   // metric of cell / metric of versus (or / versus_metric of the same trials), against a bound
	KindValue   = "value"   // metric of cell against an absolute bound
	KindVerdict = "verdict" // the cell's bottleneck verdict
)

// Claim is a `claim "name" {}` block: one conclusion of the study, checked
// against every run (engine/report computes its interval on a run's
// trials, Judge judges it).
//
// Cell selects the matrix cells whose parameters equal all of its entries;
// the axes it does not name are averaged over (the geometric mean of the
// selected cells, round by round). Versus selects, for each selected cell,
// the cell with the same parameters except Versus's entries.
//
// A ratio claim with VersusMetric instead of Versus divides two metrics of
// the same trials (latency_p9999_us / latency_p50_us): the ratio is
// computed per trial, so the two metrics pair naturally.
type Claim struct {
	Name        string
	Description string
	Kind        string // KindRatio, KindValue or KindVerdict
	// Metric is a trials column (Metrics); "" for a verdict claim.
	Metric string
	// Step is the load step whose rows are judged; "" means the
	// pipeline's only load step.
	Step   string
	Cell   []Param
	Versus []Param // KindRatio only
	// VersusMetric is the denominator of a ratio of two metrics of the
	// same trials (KindRatio without Versus); "" otherwise.
	VersusMetric string
	Bound        Bound  // KindRatio and KindValue
	Verdict      string // KindVerdict only
	// Enabled is the claim's enabled = expression (nil without one: the
	// claim is on). It may use only variables and functions; engine/plan
	// evaluates it with the plan's variables, and a claim it makes false
	// is neither matched against the matrix nor judged.
	Enabled hcl.Expression

	DeclRange   hcl.Range
	CellRange   hcl.Range
	VersusRange hcl.Range
	StepRange   hcl.Range
	MetricRange hcl.Range
	// VersusMetricRange locates versus_metric (DeclRange without one).
	VersusMetricRange hcl.Range
	// EnabledRange locates enabled (DeclRange without one).
	EnabledRange hcl.Range
}

// Param is one axis = value entry of a claim's cell or versus.
type Param struct {
	Name  string
	Value cty.Value // a primitive
	Range hcl.Range
}

// Bound is a claim's bound: "< 0.6", ">= 2", "< 10ms". Value is in the
// metric's unit (µs for latencies, % of one core for CPU) or, for a ratio,
// the ratio itself.
type Bound struct {
	Op    string // "<", "<=", ">", ">="
	Value float64
	Text  string // as written
}

// Holds reports whether x is on the claimed side of the bound.
func (b Bound) Holds(x float64) bool {
	switch b.Op {
	case "<":
		return x < b.Value
	case "<=":
		return x <= b.Value
	case ">":
		return x > b.Value
	case ">=":
		return x >= b.Value
	}
	return false
}

// Upper reports whether the bound is an upper bound (< or <=).
func (b Bound) Upper() bool { return b.Op == "<" || b.Op == "<=" }

// Metric units: how a value bound on a metric is written.
const (
	UnitRate    = "req/s"
	UnitLatency = "µs"
	UnitPercent = "%"
	UnitCount   = "count"
	UnitSeconds = "s"
	// UnitCPUPerRequest is CPU time per request: µs of one core's time
	// spent per completed request (the cpu_*_us_per_req metrics).
	UnitCPUPerRequest = "µs/req"
)

// Verdicts are the bottleneck verdicts a verdict claim may name (the
// verdict kinds of engine/collect; a test keeps the two lists equal).
var Verdicts = []string{"server-bound", "infrastructure-bound", "loader-bound", "not CPU-bound", "noisy", "undetermined"}

// ParseBound parses "OP NUMBER[UNIT]" for a ratio (unit "") or a value of
// a metric with unit. Latencies take a duration ("10ms", "250us") or a
// bare number of µs; percentages an optional "%"; CPU per request a
// number of µs with an optional "us"/"µs" or "/req" ("< 50", "< 50us/req");
// rates and counts a bare number.
func ParseBound(s, unit string) (Bound, error) {
	b := Bound{Text: s}
	t := strings.TrimSpace(s)
	for _, op := range []string{"<=", ">=", "<", ">"} {
		if strings.HasPrefix(t, op) {
			b.Op, t = op, strings.TrimSpace(t[len(op):])
			break
		}
	}
	if b.Op == "" {
		return b, fmt.Errorf("%q does not start with <, <=, > or >=; write it like \"< 0.6\"", s)
	}
	if t == "" {
		return b, fmt.Errorf("%q has no number after %s", s, b.Op)
	}
	var v float64
	var err error
	switch unit {
	case UnitLatency:
		// A bare number is in the column's own unit (latency_*_us:
		// µs), as for every claim column; with a unit it is a latency
		// in units' grammar, the one SLOs use.
		if n, e := strconv.ParseFloat(t, 64); e == nil {
			v = n
		} else {
			var d time.Duration
			d, err = units.ParseLatency(t)
			if err != nil {
				return b, fmt.Errorf("%q: %v, or a bare number of µs", s, err)
			}
			v = float64(d) / float64(time.Microsecond)
		}
	case UnitPercent:
		v, err = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	case UnitRate:
		v, err = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "/s")), 64)
	case UnitCPUPerRequest:
		n := strings.TrimSpace(strings.TrimSuffix(t, "/req"))
		n = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(n, "us"), "µs"))
		v, err = strconv.ParseFloat(n, 64)
	default:
		v, err = strconv.ParseFloat(t, 64)
	}
	if err != nil {
		return b, fmt.Errorf("%q: %q is not a number", s, t)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return b, fmt.Errorf("%q is not a finite number", s)
	}
	if unit == "" && v <= 0 {
		return b, fmt.Errorf("%q: a ratio bound must be above 0", s)
	}
	if v < 0 {
		return b, fmt.Errorf("%q: the bound must not be negative", s)
	}
	b.Value = v
	return b, nil
}

// ParamString renders claim parameters as "a=1, b=x".
func ParamString(ps []Param) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, p.Name+"="+PrimitiveString(p.Value))
	}
	return strings.Join(parts, ", ")
}

// PrimitiveString renders a primitive cty value as the report prints
// parameters (fmt's %v of the Go value): strings unquoted, integers without
// a fraction.
func PrimitiveString(v cty.Value) string {
	if v.IsNull() || !v.IsKnown() {
		return ""
	}
	switch v.Type() {
	case cty.String:
		return v.AsString()
	case cty.Bool:
		return strconv.FormatBool(v.True())
	case cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == 0 {
				return strconv.FormatInt(i, 10)
			}
		}
		f, _ := bf.Float64()
		return fmt.Sprint(f)
	}
	return v.GoString()
}
