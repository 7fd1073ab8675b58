package serve

import "github.com/benchflow/benchflow/engine/units"

// MaxSize is the largest size ParseSize accepts (units.MaxSize, 1 TiB).
const MaxSize = units.MaxSize

// ParseSize parses a byte count (--size, ?size=): see units.ParseSize, the
// one grammar of sizes a pipeline's attributes also use.
func ParseSize(s string) (int64, error) { return units.ParseSize(s) }
