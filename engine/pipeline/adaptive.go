package pipeline

import "time"

// Adaptive is `repetitions = { min = 3, max = 30, precision = "3%",
// budget = "20m" }`: the run starts with Min interleaved rounds, then adds
// rounds of the cells whose 95% interval of req/s is still wider than
// ±Precision of the estimate, until every cell is precise enough, a cell
// reaches Max, or the next round would not fit in Budget (0: no budget).
// Pipeline.Repetitions is Min.
type Adaptive struct {
	Min, Max  int
	Precision float64 // fraction: 0.03 for "3%"
	Budget    time.Duration
}
