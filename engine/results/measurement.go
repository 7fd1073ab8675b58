package results

import "github.com/benchflow/benchflow/engine/pipeline"

// IsMeasurement reports whether the row is a measurement: a warm step's
// rows are not (pipeline.IsMeasurement).
func (t *TrialRow) IsMeasurement() bool { return pipeline.IsMeasurement(t.StepKind) }
