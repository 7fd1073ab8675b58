package results

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/load"
)

// BenchRecords builds n trials as a realistic long study produces them:
// 60 one-second intervals each and a full latency histogram (200,000
// log-normal samples, ≈1,000 non-empty HDR buckets). Histograms are shared
// between trials to keep the set-up short; rows are not.
func benchRecords(n int) []*TrialRecord {
	rng := rand.New(rand.NewPCG(9, 9))
	hists := make([]*hdrhistogram.Histogram, 8)
	for i := range hists {
		h := hdrhistogram.New(1, 60_000_000, 3)
		for j := 0; j < 200_000; j++ {
			h.RecordValue(int64(300 * math.Exp(0.8*rng.NormFloat64())))
		}
		hists[i] = h
	}
	recs := make([]*TrialRecord, n)
	for i := range recs {
		res := &load.Result{Started: t0, Duration: 60 * time.Second, Latency: hists[i%len(hists)],
			Status: map[int]int64{200: 600_000}, ErrorsBy: map[string]int64{}}
		for s := 0; s < 60; s++ {
			res.Intervals = append(res.Intervals, load.Interval{Start: time.Duration(s) * time.Second, Requests: 10_000, Bytes: 8_500_000})
		}
		res.Requests = 600_000
		recs[i] = &TrialRecord{
			TrialID: fmt.Sprintf("t%04d", i), Index: i, Repetition: i%5 + 1,
			Params:   []Param{{Name: "deploy", Value: []string{"bare", "nat", "host", "k8s"}[i%4]}, {Name: "size", Value: int64(i % 50)}},
			Provider: "local", Status: StatusOK, StartedAt: t0, FinishedAt: t0.Add(time.Minute),
			Steps: []StepRecord{{Name: "wrk", Kind: "load", Status: StatusOK, Result: res}},
		}
		for s := 0; s < 10; s++ {
			recs[i].Processes = append(recs[i].Processes, ProcessSample{Step: "cpu", T: float64(s), Process: "nginx", PID: 10, CPUPct: 90})
		}
	}
	return recs
}

// BenchmarkWrite1000Trials writes a run of 1,000 trials (60 timeseries
// rows and a full histogram each) in one commit: the cost of the last
// CommitTrial of such a run.
func BenchmarkWrite1000Trials(b *testing.B) {
	recs := benchRecords(1000)
	var cpu time.Duration
	var size int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		out := b.TempDir()
		m := synthManifest(fmt.Sprintf("20261130T044500Z-%04d", i), nil)
		w, err := Create(out, m, nil, "p.hcl")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c := cpuTime()
		if err := w.CommitTrials(recs...); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c
		b.StopTimer()
		size = dirSize(b, w.Dir())
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(size)/1e6, "MB-on-disk")
}

// BenchmarkRead1000Trials reads such a run back (ReadRun).
func BenchmarkRead1000Trials(b *testing.B) {
	out := b.TempDir()
	w, err := Create(out, synthManifest("20261130T044500Z-read", nil), nil, "p.hcl")
	if err != nil {
		b.Fatal(err)
	}
	if err := w.CommitTrials(benchRecords(1000)...); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	c := cpuTime()
	for i := 0; i < b.N; i++ {
		run, err := ReadRun(w.Dir())
		if err != nil {
			b.Fatal(err)
		}
		if len(run.Trials) != 1000 {
			b.Fatalf("%d trials", len(run.Trials))
		}
	}
	b.StopTimer()
	reportCPU(b, c)
	run, _ := ReadRun(w.Dir())
	b.ReportMetric(float64(len(run.Latency))/1000, "buckets/trial")
}

// dirSize is the size of the files in dir.
func dirSize(b *testing.B, dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
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
