package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Observer reads a load's totals while it runs (live metrics: the
// Prometheus endpoint of `benchflow load --metrics-addr`). Options.OnStart
// hands one over when the measured phase begins; it stays readable after
// the load ended, when its totals are the result's. Reading takes the
// slots' locks as the once-a-second collector does: nothing is added to
// the requests' path.
type Observer struct{ r *runner }

// Totals are a load's running totals.
type Totals struct {
	Elapsed  time.Duration
	Requests int64 // responses (any status)
	Errors   int64
	ErrorsBy map[string]int64 // by class, every class present
	// Latency is the corrected latency (µs) of the responses recorded so
	// far (a slot buffers up to 256 before they reach it).
	Latency *hdrhistogram.Histogram
	// Connections is the load's connection slots (Options.Connections).
	Connections int
	// MaxBehind is how far behind its schedule the latest send was, at
	// most (open loop).
	MaxBehind time.Duration
	LoaderCPU time.Duration
}

// Totals reads the load's totals now.
func (o *Observer) Totals() Totals {
	r := o.r
	t := Totals{Elapsed: time.Since(r.start), ErrorsBy: map[string]int64{}, Latency: r.newHist(), Connections: r.opts.Connections, LoaderCPU: max(cpuTime()-r.cpuStart, 0)}
	for _, k := range ErrorClasses {
		t.ErrorsBy[k] = 0
	}
	for _, c := range r.conns {
		c.mu.Lock()
		t.Requests += c.requests
		t.Errors += c.errors
		for k, n := range c.errs {
			t.ErrorsBy[ErrorClasses[k]] += n
		}
		t.MaxBehind = max(t.MaxBehind, c.maxBehind)
		c.mu.Unlock()
	}
	for _, sh := range r.shards {
		sh.mu.Lock()
		t.Latency.Merge(sh.lat)
		sh.mu.Unlock()
	}
	return t
}
