package report

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/results"
)

// write1000 writes a run of 1,000 trials (50 cells × 20 repetitions), each
// with 60 one-second intervals and a full latency histogram (200,000
// log-normal samples, ≈2,700 non-empty buckets).
func write1000(b *testing.B) string {
	rng := rand.New(rand.NewPCG(3, 3))
	hists := make([]*hdrhistogram.Histogram, 8)
	for i := range hists {
		h := hdrhistogram.New(1, 60_000_000, 3)
		for j := 0; j < 200_000; j++ {
			h.RecordValue(int64(300 * math.Exp(0.8*rng.NormFloat64())))
		}
		hists[i] = h
	}
	m := &results.Manifest{RunID: "20261130T044500Z-b1k0", Axes: []string{"deploy", "size"},
		Matrix: map[string]any{}, Environment: map[string]any{"fingerprint": "x"}}
	var recs []*results.TrialRecord
	for i := 0; i < 1000; i++ {
		res := &measure.Record{Started: t0, Duration: 60 * time.Second, Latency: hists[i%len(hists)], Requests: 600_000}
		for s := 0; s < 60; s++ {
			res.Intervals = append(res.Intervals, measure.Interval{Start: time.Duration(s) * time.Second, Requests: 10_000 + int64(rng.IntN(100))})
		}
		rec := &results.TrialRecord{TrialID: fmt.Sprintf("t%04d", i), Index: i, Repetition: i/50 + 1,
			Params: []results.Param{{Name: "deploy", Value: []string{"bare", "nat", "host", "k8s", "ovs"}[i%5]}, {Name: "size", Value: int64(i % 10)}},
			Status: results.StatusOK,
			Steps:  []results.StepRecord{{Name: "wrk", Kind: "load", Status: results.StatusOK, Result: res}},
		}
		for s := 0; s < 10; s++ {
			rec.Processes = append(rec.Processes, results.ProcessSample{Step: "cpu", T: float64(s), Process: "nginx", CPUPct: 90},
				results.ProcessSample{Step: "cpu", T: float64(s), Process: "docker-proxy", CPUPct: 50})
		}
		recs = append(recs, rec)
	}
	w, err := results.Create(b.TempDir(), m, nil, "p.hcl")
	if err != nil {
		b.Fatal(err)
	}
	if err := w.CommitTrials(recs...); err != nil {
		b.Fatal(err)
	}
	if err := w.Finish(results.RunOK, t0); err != nil {
		b.Fatal(err)
	}
	return w.Dir()
}

// BenchmarkReport1000Trials is `benchflow report` on that run: read every
// table, summarise, print the text table.
func BenchmarkReport1000Trials(b *testing.B) {
	dir := write1000(b)
	b.ResetTimer()
	c := cpuTime()
	defer reportCPU(b, c)
	for i := 0; i < b.N; i++ {
		run, err := results.ReadRun(dir)
		if err != nil {
			b.Fatal(err)
		}
		s, err := Summarize(run, Options{Baseline: "deploy=bare"})
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Cells) != 10 {
			b.Fatalf("%d cells", len(s.Cells))
		}
		if err := s.Write(io.Discard, "text"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSummarize1000Trials is the aggregation alone (run in memory).
func BenchmarkSummarize1000Trials(b *testing.B) {
	run, err := results.ReadRun(write1000(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	c := cpuTime()
	defer reportCPU(b, c)
	for i := 0; i < b.N; i++ {
		run2 := *run // fresh histogram index each time
		if _, err := Summarize(&run2, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user+system CPU time (all threads, GC
// included): on a shared machine it measures the work done, where wall
// time measures the contention.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}
