package claims

import (
	"math"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/results"
)

// Metric is one metric a claim may name, declared once: its name (a
// trials column, or a value derived per trial), its unit, what a derived
// one is, and how a trial's value is read.
type Metric struct {
	Name string
	Unit string
	// Derived says what a metric that is not a trials column is ("" for
	// a column).
	Derived string
	// Of reads the metric from a trials row; nil for a metric read from
	// the trial's latency histograms (FromHistograms).
	Of func(*results.TrialRow) float64
}

// FromHistograms reports whether the metric is read from the trials'
// latency histograms rather than from a trials row.
func (m Metric) FromHistograms() bool { return m.Of == nil }

// Metrics are the claim metrics, by name.
var Metrics = []Metric{
	{Name: "rps", Unit: UnitRate, Of: func(t *results.TrialRow) float64 { return t.RPS }},
	{Name: "capacity_rps", Unit: UnitRate, Of: func(t *results.TrialRow) float64 { return t.CapacityRPS }},
	{Name: "latency_p50_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.LatencyP50US }},
	{Name: "latency_p90_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.LatencyP90US }},
	{Name: "latency_p99_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.LatencyP99US }},
	{Name: "latency_p999_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.LatencyP999US }},
	{Name: "latency_p9999_us", Unit: UnitLatency, Derived: "p99.99 from the latency histograms"},
	{Name: "latency_max_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.LatencyMaxUS }},
	{Name: "latency_mean_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.LatencyMeanUS }},
	{Name: "latency_uncorrected_p99_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.LatencyUncorrectedP99US }},
	{Name: "connect_p50_us", Unit: UnitLatency, Of: func(t *results.TrialRow) float64 { return t.ConnectP50US }},
	{Name: "cpu_total_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUTotalPct }},
	{Name: "cpu_loader_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPULoaderPct }},
	{Name: "cpu_service_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUServicePct }},
	{Name: "cpu_infra_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUInfraPct }},
	{Name: "cpu_kernel_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUKernelPct }},
	{Name: "cpu_other_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUOtherPct }},
	{Name: "cpu_idle_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUIdlePct }},
	{Name: "cpu_steal_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUStealPct }},
	{Name: "cpu_unattributed_pct", Unit: UnitPercent, Of: func(t *results.TrialRow) float64 { return t.CPUUnattributedPct }},
	{Name: "cpu_service_us_per_req", Unit: UnitCPUPerRequest, Derived: "the service's CPU µs per request",
		Of: func(t *results.TrialRow) float64 { return CPUPerRequest(t.CPUServicePct, t.RPS) }},
	{Name: "cpu_infra_us_per_req", Unit: UnitCPUPerRequest, Derived: "the infrastructure's CPU µs per request",
		Of: func(t *results.TrialRow) float64 { return CPUPerRequest(t.CPUInfraPct, t.RPS) }},
	{Name: "cpu_loader_us_per_req", Unit: UnitCPUPerRequest, Derived: "the loader's CPU µs per request",
		Of: func(t *results.TrialRow) float64 { return CPUPerRequest(t.CPULoaderPct, t.RPS) }},
	{Name: "cpu_stack_us_per_req", Unit: UnitCPUPerRequest, Derived: "the sum of the three",
		Of: func(t *results.TrialRow) float64 {
			return CPUPerRequest(t.CPUServicePct+t.CPUInfraPct+t.CPULoaderPct, t.RPS)
		}},
	{Name: "requests", Unit: UnitCount, Of: func(t *results.TrialRow) float64 { return float64(t.Requests) }},
	{Name: "errors", Unit: UnitCount, Of: func(t *results.TrialRow) float64 { return float64(t.Errors) }},
	{Name: "bytes", Unit: UnitCount, Of: func(t *results.TrialRow) float64 { return float64(t.Bytes) }},
	{Name: "duration_s", Unit: UnitSeconds, Of: func(t *results.TrialRow) float64 { return t.DurationS }},
}

// LookupMetric finds a claim metric by name.
func LookupMetric(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// LookupMetricOf is the reader of a claim metric from a trials row: nil
// for a metric read from the histograms, or one this benchflow does not
// know.
func LookupMetricOf(name string) func(*results.TrialRow) float64 {
	m, _ := LookupMetric(name)
	return m.Of
}

// MetricUnit is a claim metric's unit ("" for a metric this benchflow
// does not know).
func MetricUnit(name string) string {
	m, _ := LookupMetric(name)
	return m.Unit
}

// CPUPerRequest is the CPU time per request, in µs, of a part of the
// budget that used pct % of one core while the trial completed rps
// requests a second: pct/100 core-seconds a second over rps requests.
// NaN without requests (no rate to divide by).
func CPUPerRequest(pct, rps float64) float64 {
	if !(rps > 0) {
		return math.NaN()
	}
	return pct / 100 * 1e6 / rps
}

// MetricNames lists the claim metrics sorted.
func MetricNames() []string {
	out := make([]string, 0, len(Metrics))
	for _, m := range Metrics {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

// MetricsText says what the claim metrics are: "the trials columns
// (bytes, …) and, derived per trial, latency_p9999_us (p99.99 from the
// latency histograms), …" — the lead-in of an unknown metric's error.
func MetricsText() string {
	var cols, derived []string
	for _, k := range MetricNames() {
		if m, _ := LookupMetric(k); m.Derived != "" {
			derived = append(derived, k+" ("+m.Derived+")")
		} else {
			cols = append(cols, k)
		}
	}
	s := "the trials columns (" + strings.Join(cols, ", ") + ")"
	if len(derived) > 0 {
		s += " and, derived per trial, " + strings.Join(derived, ", ")
	}
	return s
}
