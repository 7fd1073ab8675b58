package claims

import (
	"fmt"
	"math"
	"strconv"

	"github.com/benchflow/benchflow/engine/stats"
	"github.com/benchflow/benchflow/engine/units"
)

// EstimateUnit is the unit of a claim's estimate: the metric's for a
// value claim, none ("") for a ratio or a verdict.
func EstimateUnit(kind, metric string) string {
	if kind != KindValue {
		return ""
	}
	return MetricUnit(metric)
}

// FormatValue writes a claim's estimate or bound in its unit ("" for a
// ratio): "1.20 ms", "12,345.6 req/s", "0.312".
func FormatValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch unit {
	case UnitLatency:
		return units.FormatMS(v) + " ms"
	case UnitRate:
		return units.FormatRate(v) + " req/s"
	case UnitPercent:
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	case UnitSeconds:
		return strconv.FormatFloat(v, 'g', 4, 64) + " s"
	case UnitCount:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case UnitCPUPerRequest:
		return strconv.FormatFloat(v, 'g', 3, 64) + " µs/req"
	}
	if v != 0 && math.Abs(v) < 0.01 {
		return strconv.FormatFloat(v, 'g', 3, 64) // a ratio far below 1
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// formatEstimate is the estimate with its name: "ratio 0.312" or "1.20 ms".
func formatEstimate(iv stats.Interval, unit string) string {
	if unit == "" {
		return "ratio " + FormatValue(iv.Value, unit)
	}
	return FormatValue(iv.Value, unit)
}

// EstimateLabel is a judged claim's estimate for tables: "0.312 [0.290,
// 0.335]" (the 95% interval, in the estimate's unit), or for a verdict
// claim the share of the repetitions that had the verdict, "100% of 8".
func EstimateLabel(kind, unit string, iv stats.Interval) string {
	if kind == KindVerdict {
		if math.IsNaN(iv.Value) {
			return "-"
		}
		return fmt.Sprintf("%.0f%% of %d", 100*iv.Value, iv.N)
	}
	s := FormatValue(iv.Value, unit)
	if !math.IsNaN(iv.Low) && !math.IsNaN(iv.High) {
		s += " [" + FormatValue(iv.Low, unit) + ", " + FormatValue(iv.High, unit) + "]"
	}
	return s
}

// Subject is what a claim judges, for tables: "rps deploy=nat /
// deploy=host", "latency_p99_us / latency_p50_us every cell", "verdict
// deploy=nat". cell and versus are the claim's cells as the report writes
// them ("" for every cell, and for no versus).
func Subject(kind, metric, versusMetric, cell, versus string) string {
	what := metric
	if kind == KindVerdict {
		what = "verdict"
	}
	if versusMetric != "" {
		what += " / " + versusMetric
	}
	if cell == "" {
		cell = "every cell"
	}
	if versus != "" {
		return what + " " + cell + " / " + versus
	}
	return what + " " + cell
}
