package pipeline

import (
	"time"

	"github.com/benchflow/benchflow/engine/units"
)

// ParseDuration parses a duration attribute of a pipeline; see
// units.ParseDuration, which every flag of the same setting uses too.
func ParseDuration(s string) (time.Duration, error) { return units.ParseDuration(s) }

// ParsePercent reads a percentage attribute ("3%" = 0.03, at most 100%);
// see units.ParsePercent.
func ParsePercent(s string) (float64, error) { return units.ParsePercent(s) }
