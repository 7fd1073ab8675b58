package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/engine/claims"

	"github.com/benchflow/benchflow/engine/results"
)

// measuredColumns are the trials columns of a load's measurement: counts,
// rates and durations, none of which may be NaN, infinite or negative.
var measuredColumns = []string{"duration_s", "requests", "errors", "rps", "bytes",
	"latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_p999_us", "latency_max_us", "latency_mean_us",
	"latency_uncorrected_p99_us", "connect_p50_us"}

var measuredReaders = func() []func(*results.TrialRow) float64 {
	out := make([]func(*results.TrialRow) float64, len(measuredColumns))
	for i, c := range measuredColumns {
		out[i] = results.TrialNumber(c)
	}
	return out
}()

// invalidNumbers lists the measured values of a trials row that are not
// numbers a measurement can give ("rps NaN", "latency_p99_us -3"): a
// damaged or edited table, never data to judge.
func invalidNumbers(t *results.TrialRow) []string {
	var bad []string
	for i, get := range measuredReaders {
		if get == nil {
			continue
		}
		if why := invalidValue(get(t), true); why != "" {
			bad = append(bad, measuredColumns[i]+" "+why)
		}
	}
	return bad
}

// invalidValue is why v is not a valid measurement ("NaN", "+Inf",
// "-3 (negative)"), or "" when it is; a negative value is valid only
// when !nonNegative.
func invalidValue(v float64, nonNegative bool) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case nonNegative && v < 0:
		return strconv.FormatFloat(v, 'g', -1, 64) + " (negative)"
	}
	return ""
}

// invalidCells says which repetitions of cells hold invalid values ("" when
// none does).
func invalidCells(cells []*Cell) string {
	var why []string
	for _, c := range cells {
		if len(c.InvalidWhy) > 0 {
			why = append(why, c.Label()+": "+strings.Join(c.InvalidWhy, "; "))
		}
	}
	return strings.Join(why, "; ")
}

// invalidMetric says which used repetitions of cells have a value of the
// claim metric that is not a measurement ("" when none): NaN or ±Inf, or
// negative for anything but a percentage (an unattributed CPU share may
// be slightly negative). A metric of the histograms or a derived one is
// left to its reader (NaN there means no histogram, or no requests).
func invalidMetric(cells []*Cell, metric string, get func(*rowFacts) float64, rows map[[2]string]*rowFacts) string {
	m, ok := claims.LookupMetric(metric)
	if !ok || m.FromHistograms() || m.Derived != "" {
		return "" // a derived metric is NaN when it has no value (no requests)
	}
	var why []string
	for _, c := range cells {
		for _, sm := range c.used() {
			t := rows[[2]string{sm.TrialID, c.Step}]
			if t == nil {
				continue
			}
			if w := invalidValue(get(t), m.Unit != claims.UnitPercent); w != "" {
				why = append(why, fmt.Sprintf("trial %s: %s %s", sm.TrialID, metric, w))
			}
		}
	}
	return strings.Join(why, "; ")
}

// invalidPoint says which figures of a timeseries row are not
// measurements ("" when none).
func invalidPoint(r *results.TimeseriesRow) string {
	var bad []string
	for _, f := range []struct {
		name string
		v    float64
	}{{"t_s", r.TS}, {"interval_s", r.IntervalS}, {"requests", float64(r.Requests)}, {"rps", r.RPS}, {"latency_p99_us", r.LatencyP99US}} {
		if w := invalidValue(f.v, true); w != "" {
			bad = append(bad, f.name+" "+w)
		}
	}
	return strings.Join(bad, ", ")
}
