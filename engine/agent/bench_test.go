package agent

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/benchflow/benchflow/engine/measure"
)

// benchParts builds agents results of intervals one-second intervals each,
// with histograms of the load generator's geometry (1 µs to 21 s: a 10 min
// open-loop load with the default 2 s timeout; 3 digits whole-load, 2 per
// interval), each interval holding perInterval latencies.
func benchParts(b *testing.B, agents, intervals, perInterval int) []Part {
	rng := rand.New(rand.NewPCG(7, 7))
	highest := int64(21 * time.Second / time.Microsecond)
	parts := make([]Part, agents)
	for a := range parts {
		r := &measure.Record{Latency: hdrhistogram.New(1, highest, 3), Duration: time.Duration(intervals) * time.Second}
		for i := range intervals {
			h := hdrhistogram.New(1, highest, 2)
			for range perInterval {
				v := int64(rng.ExpFloat64()*400) + 50
				_ = h.RecordValue(v)
				_ = r.Latency.RecordValue(v)
			}
			r.Intervals = append(r.Intervals, measure.Interval{Start: time.Duration(i) * time.Second, Duration: time.Second, Requests: int64(perInterval), Latency: h})
			r.Requests += int64(perInterval)
		}
		parts[a] = Part{Result: r, Offset: time.Duration(rng.IntN(200)) * time.Microsecond}
	}
	return parts
}

// BenchmarkDecodeMerge64x600 is the controller's whole work at the end:
// decoding what 64 agents × 600 intervals sent (their sparse snapshots) and
// merging it, as Run does.
func BenchmarkDecodeMerge64x600(b *testing.B) {
	parts := benchParts(b, 64, 600, 200)
	wires := make([]*Result, len(parts))
	for i, p := range parts {
		w, err := resultToWire(i, p.Result, 0)
		if err != nil {
			b.Fatal(err)
		}
		wires[i] = w
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := rusage()
	for b.Loop() {
		ps := make([]Part, len(wires))
		for i, w := range wires {
			res, ivs, err := w.decode(false)
			if err != nil {
				b.Fatal(err)
			}
			ps[i] = Part{Result: res, Offset: parts[i].Offset, intervals: ivs}
		}
		m, err := Merge(ps, time.Unix(0, 0), time.Second, 0)
		if err != nil || len(m.Intervals) != 600 {
			b.Fatalf("merge: %v, %d intervals", err, len(m.Intervals))
		}
	}
	// CPU time (user + system, all threads) is the work done; on a
	// shared machine the wall time mostly measures the other jobs.
	cpu1 := rusage()
	b.ReportMetric(float64(cpu1[0]+cpu1[1]-cpu0[0]-cpu0[1])/float64(b.N)/1e6, "cpu-ms/op")
}
