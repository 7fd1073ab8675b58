package claims

import (
	"math"
	"sort"
	"strings"
)

// Metric is one metric a claim may name, declared once: its name, its
// unit, and where a trial's value comes from — the trials column of that
// name (engine/report reads it with results.TrialNumber), the CPU time per
// request of the cpu_*_pct columns PerRequest names, or the trial's
// latency histograms.
type Metric struct {
	Name string
	Unit string
	// Derived says what a metric that is not a trials column is ("" for
	// a column).
	Derived string
	// PerRequest names the cpu_*_pct columns whose sum, divided by the
	// trial's rps, is the metric (CPUPerRequest).
	PerRequest []string
	// Histograms marks a metric read from the trial's latency histograms
	// (latency.parquet) rather than from its trials row.
	Histograms bool
}

// FromHistograms reports whether the metric is read from the trials'
// latency histograms rather than from a trials row.
func (m Metric) FromHistograms() bool { return m.Histograms }

// Metrics are the claim metrics, by name.
var Metrics = []Metric{
	{Name: "rps", Unit: UnitRate},
	{Name: "capacity_rps", Unit: UnitRate},
	{Name: "latency_p50_us", Unit: UnitLatency},
	{Name: "latency_p90_us", Unit: UnitLatency},
	{Name: "latency_p99_us", Unit: UnitLatency},
	{Name: "latency_p999_us", Unit: UnitLatency},
	{Name: "latency_p9999_us", Unit: UnitLatency, Derived: "p99.99 from the latency histograms", Histograms: true},
	{Name: "latency_max_us", Unit: UnitLatency},
	{Name: "latency_mean_us", Unit: UnitLatency},
	{Name: "latency_uncorrected_p99_us", Unit: UnitLatency},
	{Name: "connect_p50_us", Unit: UnitLatency},
	{Name: "cpu_total_pct", Unit: UnitPercent},
	{Name: "cpu_loader_pct", Unit: UnitPercent},
	{Name: "cpu_service_pct", Unit: UnitPercent},
	{Name: "cpu_infra_pct", Unit: UnitPercent},
	{Name: "cpu_kernel_pct", Unit: UnitPercent},
	{Name: "cpu_other_pct", Unit: UnitPercent},
	{Name: "cpu_idle_pct", Unit: UnitPercent},
	{Name: "cpu_steal_pct", Unit: UnitPercent},
	{Name: "cpu_unattributed_pct", Unit: UnitPercent},
	{Name: "cpu_service_us_per_req", Unit: UnitCPUPerRequest, Derived: "the service's CPU µs per request", PerRequest: []string{"cpu_service_pct"}},
	{Name: "cpu_infra_us_per_req", Unit: UnitCPUPerRequest, Derived: "the infrastructure's CPU µs per request", PerRequest: []string{"cpu_infra_pct"}},
	{Name: "cpu_loader_us_per_req", Unit: UnitCPUPerRequest, Derived: "the loader's CPU µs per request", PerRequest: []string{"cpu_loader_pct"}},
	{Name: "cpu_stack_us_per_req", Unit: UnitCPUPerRequest, Derived: "the sum of the three", PerRequest: []string{"cpu_service_pct", "cpu_infra_pct", "cpu_loader_pct"}},
	{Name: "requests", Unit: UnitCount},
	{Name: "errors", Unit: UnitCount},
	{Name: "bytes", Unit: UnitCount},
	{Name: "duration_s", Unit: UnitSeconds},
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

// FromCollect reports whether a claim metric comes from the whole-machine
// CPU accounting of a collect step running during the load (the cpu_*
// metrics), rather than from the load step's own result.
func FromCollect(metric string) bool { return strings.HasPrefix(metric, "cpu_") }

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
