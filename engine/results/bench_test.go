package results

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/benchflow/benchflow/engine/measure"
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
		res := &measure.Record{Started: t0, Duration: 60 * time.Second, Latency: hists[i%len(hists)],
			Status: map[int]int64{200: 600_000}, ErrorsBy: map[string]int64{}}
		for s := 0; s < 60; s++ {
			res.Intervals = append(res.Intervals, measure.Interval{Start: time.Duration(s) * time.Second, Requests: 10_000, Bytes: 8_500_000})
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
// rows and a full histogram each) in one CommitTrials: 1,000 part folders
// (a bulk import's cost; compaction is not included, see
// BenchmarkCommitScale).
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
	if err := w.Finish(RunOK, t0); err != nil { // the tables, compacted
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

// BenchmarkCommitScale commits BENCH_TRIALS (default 1,000) trials of
// benchRecords' size one at a time, as apply does, then finishes the run
// (compaction), and prints a table: the median commit time around trial
// 10, 100, 1,000 and 10,000 (±5 trials), the total writer time, the
// compaction, and the peak RSS of the writer during the commits and
// during compaction (each phase's own, see resetPeak). With BENCHFLOW_BIN
// set it also times `benchflow report` and `benchflow compare` (the run
// with itself) on the run and reports their peak RSS. Not a timed test:
// run it on a quiet machine (docs/performance.md). BENCH_OUT=DIR keeps
// the run in DIR.
//
//	BENCH_TRIALS=10000 BENCHFLOW_BIN=$PWD/bin/benchflow go test ./engine/results/ \
//	  -run '^$' -bench CommitScale -benchtime 1x -timeout 0
func BenchmarkCommitScale(b *testing.B) {
	n := 1000
	if s := os.Getenv("BENCH_TRIALS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil || n < 20 {
			b.Fatalf("BENCH_TRIALS=%q: want a number of at least 20", s)
		}
	}
	for i := 0; i < b.N; i++ {
		out := b.TempDir()
		if keep := os.Getenv("BENCH_OUT"); keep != "" {
			out = keep // the run is kept there, to profile readers on it
		}
		w, err := Create(out, synthManifest(fmt.Sprintf("20261130T044500Z-%04x", i), nil), nil, "p.hcl")
		if err != nil {
			b.Fatal(err)
		}
		// Records are made one at a time from a few shared templates, so
		// the set-up holds no trial's rows either.
		tmpl := benchRecords(8)
		commits := make([]time.Duration, n)
		resetPeak()
		start := time.Now()
		for t := 0; t < n; t++ {
			rec := *tmpl[t%len(tmpl)]
			rec.TrialID, rec.Index = fmt.Sprintf("t%05d", t), t
			c := time.Now()
			if err := w.CommitTrial(&rec); err != nil {
				b.Fatal(err)
			}
			commits[t] = time.Since(c)
		}
		committed := time.Since(start)
		commitPeak := vmHWM(os.Getpid())
		resetPeak()
		f := time.Now()
		if err := w.Finish(RunOK, time.Now()); err != nil {
			b.Fatal(err)
		}
		compact := time.Since(f)
		compactPeak := vmHWM(os.Getpid())
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		median := func(at int) string {
			if at > n {
				return "—"
			}
			lo, hi := max(at-6, 0), min(at+5, n)
			w := append([]time.Duration(nil), commits[lo:hi]...)
			sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
			return fmt.Sprintf("%.1f ms", float64(w[len(w)/2])/1e6)
		}
		mb := func(kib int64) string {
			if kib < 0 {
				return "?"
			}
			return fmt.Sprintf("%d MB", kib>>10)
		}
		fmt.Printf("\n%d trials of benchRecords' size, committed one at a time (load average %s)\n\n", n, loadAvg())
		fmt.Printf("| commit (median of ±5) | 10th | 100th | 1,000th | 10,000th |\n|---|---|---|---|---|\n")
		fmt.Printf("| time | %s | %s | %s | %s |\n\n", median(10), median(100), median(1000), median(10000))
		fmt.Printf("| total of the commits | mean commit | compaction (Finish) | run on disk |\n|---|---|---|---|\n")
		fmt.Printf("| %.1f s | %.1f ms | %.1f s | %.1f MB |\n", committed.Seconds(), float64(committed)/float64(n)/1e6,
			compact.Seconds(), float64(treeSize(w.Dir()))/1e6)
		// Peak RSS (VmHWM) of this process, reset before each phase where
		// the kernel allows it (/proc/self/clear_refs); the whole
		// process's peak (getrusage) includes the set-up.
		fmt.Printf("\n| writer peak RSS | commits | compaction (Finish) | whole process |\n|---|---|---|---|\n")
		fmt.Printf("| %d trials | %s | %s | %s |\n", n, mb(commitPeak), mb(compactPeak), mb(ru.Maxrss))
		if bin := os.Getenv("BENCHFLOW_BIN"); bin != "" {
			fmt.Printf("\n| command on the run | time | peak RSS |\n|---|---|---|\n")
			for _, args := range [][]string{{"report", w.Dir()}, {"compare", w.Dir(), w.Dir()}} {
				took, peak := runPeak(b, bin, args...)
				fmt.Printf("| `benchflow %s` (%d trials) | %.1f s | %s |\n", args[0], n, took.Seconds(), mb(peak))
			}
		}
	}
}

// runPeak runs bin with args, output discarded, and returns its wall time
// and peak RSS in KiB.
func runPeak(b *testing.B, bin string, args ...string) (time.Duration, int64) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	r := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// The child's rusage maxrss starts at this process's (fork copies
	// it): poll its own high-water mark instead.
	peak := make(chan int64)
	go func() {
		var hwm int64
		for {
			if v := vmHWM(cmd.Process.Pid); v > hwm {
				hwm = v
			} else if v < 0 {
				peak <- hwm
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	err := cmd.Wait()
	took := time.Since(r)
	if err != nil {
		b.Fatalf("%s: %v\n%s", args[0], err, stderr.String())
	}
	return took, <-peak
}

// resetPeak resets this process's VmHWM to its current RSS (Linux ≥ 4.0);
// without it the peaks reported include the earlier phases.
func resetPeak() {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// treeSize is the size of the regular files under dir.
func treeSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// vmHWM is the peak resident set of process pid in KiB (VmHWM), or -1
// once the process is gone.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	if strings.Contains(string(b), "State:\tZ") {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb
		}
	}
	return -1
}
