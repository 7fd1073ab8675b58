package results

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchflow/benchflow/engine/scratch"
)

// TableClaims holds one row per claim of the pipeline with its outcome in
// the run (claims.parquet), written when apply finishes.
const TableClaims = "claims"

// ClaimSpec is one claim of the pipeline as recorded in manifest.json
// "claims", so that the report evaluates it from the run folder alone.
type ClaimSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Kind        string `json:"kind"`             // "ratio", "value" or "verdict" (engine/claims' Kind*)
	Metric      string `json:"metric,omitempty"` // a trials column
	// Step is the load step whose rows are judged.
	Step string `json:"step"`
	// Cell and Versus are axis → value (the Go type of the param column).
	Cell   map[string]any `json:"cell,omitempty"`
	Versus map[string]any `json:"versus,omitempty"`
	// VersusMetric is, for a ratio of two metrics of the same trials,
	// the denominator (Metric / VersusMetric per trial); "" otherwise.
	VersusMetric string `json:"versus_metric,omitempty"`
	// Bound is as written ("< 0.6"); BoundOp and BoundValue parsed (in
	// the metric's unit: µs for latencies).
	Bound      string  `json:"bound,omitempty"`
	BoundOp    string  `json:"bound_op,omitempty"`
	BoundValue float64 `json:"bound_value,omitempty"`
	Verdict    string  `json:"verdict,omitempty"`
}

// ClaimRow is one row of claims.parquet.
type ClaimRow struct {
	RunID       string
	Claim       string
	Description string
	Kind        string
	Metric      string
	Step        string
	Cell        string // "deploy=docker-nat"
	Versus      string // "deploy=host"; "" unless Kind is ClaimRatio
	// VersusMetric is the denominator of a ratio of two metrics of the
	// same trials ("latency_p50_us"); "" for any other claim.
	VersusMetric string
	Bound        string // "< 0.6", "= infrastructure-bound"
	BoundOp      string
	BoundValue   float64
	Outcome      string // "holds", "fails", "inconclusive" or "not judged" (engine/claims)
	// Estimate, Low and High: the ratio or value with its 95% interval
	// (NaN when there is none); for a verdict claim, the share of the
	// repetitions that had the verdict.
	Estimate float64
	Low      float64
	High     float64
	Method   string // the interval method (engine/report Method*)
	N        int64  // repetitions (or paired rounds) it rests on
	// MoreRepetitions is, for an inconclusive claim, about how many more
	// repetitions per cell would likely decide it (0: unknown).
	MoreRepetitions int64
	Detail          string
}

var claimColumns = []column[ClaimRow]{
	str("run_id", func(r *ClaimRow) *string { return &r.RunID }),
	str("claim", func(r *ClaimRow) *string { return &r.Claim }),
	str("description", func(r *ClaimRow) *string { return &r.Description }),
	str("kind", func(r *ClaimRow) *string { return &r.Kind }),
	str("metric", func(r *ClaimRow) *string { return &r.Metric }),
	str("step", func(r *ClaimRow) *string { return &r.Step }),
	str("cell", func(r *ClaimRow) *string { return &r.Cell }),
	str("versus", func(r *ClaimRow) *string { return &r.Versus }),
	str("versus_metric", func(r *ClaimRow) *string { return &r.VersusMetric }),
	str("bound", func(r *ClaimRow) *string { return &r.Bound }),
	str("bound_op", func(r *ClaimRow) *string { return &r.BoundOp }),
	f64("bound_value", func(r *ClaimRow) *float64 { return &r.BoundValue }),
	str("outcome", func(r *ClaimRow) *string { return &r.Outcome }),
	f64("estimate", func(r *ClaimRow) *float64 { return &r.Estimate }),
	f64("ci_low", func(r *ClaimRow) *float64 { return &r.Low }),
	f64("ci_high", func(r *ClaimRow) *float64 { return &r.High }),
	str("ci_method", func(r *ClaimRow) *string { return &r.Method }),
	i64("n", func(r *ClaimRow) *int64 { return &r.N }),
	i64("more_repetitions", func(r *ClaimRow) *int64 { return &r.MoreRepetitions }),
	str("detail", func(r *ClaimRow) *string { return &r.Detail }),
}

// WriteClaims writes claims.parquet (claims.arrow in the Arrow format)
// into a run directory, atomically.
func WriteClaims(dir, format string, rows []ClaimRow) error {
	return writeTable(memory.DefaultAllocator, scratch.Run(dir), filepath.Join(dir, TableFile(TableClaims, format)), format, claimColumns, rows)
}

// ReadClaims reads the claims table of a run directory; ok is false when
// the run has none (a run written before claims, or not finished).
func ReadClaims(dir, format string) (rows []ClaimRow, ok bool, err error) {
	path := filepath.Join(dir, TableFile(TableClaims, format))
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	rows, err = readTable(memory.DefaultAllocator, path, format, fixed(claimColumns))
	return rows, err == nil, err
}
