package report

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 11, 30, 4, 45, 0, 0, time.UTC)

// cellSpec describes one matrix cell of a synthetic run.
type cellSpec struct {
	deploy   string
	log      string
	rps      float64 // true mean req/s
	noise    float64 // relative standard deviation between repetitions
	medianUS float64
	procs    map[string]float64 // process -> CPU%
}

// runSpec is a synthetic run: cells × reps, interleaved.
type runSpec struct {
	id          string
	reps        int
	seed        uint64
	fingerprint string
	cells       []cellSpec
	seconds     int
	samples     int    // latency samples per second
	format      string // results.FormatParquet (default) or FormatArrow
}

func synthLoad(rng *rand.Rand, rps, medianUS float64, seconds, samples int) *measure.Record {
	res := &measure.Record{Started: t0, Duration: time.Duration(seconds) * time.Second,
		Latency: hdrhistogram.New(1, 60_000_000, 3), Status: map[int]int64{}, ErrorsBy: map[string]int64{}}
	for s := 0; s < seconds; s++ {
		n := int64(math.Round(rps * (1 + 0.005*rng.NormFloat64())))
		iv := measure.Interval{Start: time.Duration(s) * time.Second, Requests: n, Bytes: n * 850,
			Latency: hdrhistogram.New(1, 60_000_000, 3)}
		for i := 0; i < samples; i++ {
			v := int64(medianUS * math.Exp(0.4*rng.NormFloat64()))
			iv.Latency.RecordValue(max(v, 1))
			res.Latency.RecordValue(max(v, 1))
		}
		res.Requests += n
		res.Bytes += iv.Bytes
		res.Status[200] += n
		res.Intervals = append(res.Intervals, iv)
	}
	return res
}

// writeSynthRun writes spec into dir and reads it back.
func writeSynthRun(t testing.TB, dir string, spec runSpec) *results.Run {
	t.Helper()
	rng := rand.New(rand.NewPCG(spec.seed, 7))
	if spec.seconds == 0 {
		spec.seconds = 5
	}
	if spec.samples == 0 {
		spec.samples = 200
	}
	m := &results.Manifest{
		RunID: spec.id, Pipeline: results.PipelineInfo{Name: "deploy-overhead", SHA256: "abc", Format: "hcl"},
		BenchflowVersion: "test", StartedAt: t0, Order: "interleaved", Repetitions: spec.reps,
		Matrix: map[string]any{}, Axes: []string{"deploy", "access_log"},
		Environment: map[string]any{"fingerprint": spec.fingerprint}, OutputFormat: spec.format,
	}
	var recs []*results.TrialRecord
	i := 0
	for rep := 1; rep <= spec.reps; rep++ {
		for _, c := range spec.cells {
			rps := c.rps * (1 + c.noise*rng.NormFloat64())
			rec := &results.TrialRecord{
				TrialID: fmt.Sprintf("t%03d", i), Index: i, Repetition: rep,
				Params:   []results.Param{{Name: "deploy", Value: c.deploy}, {Name: "access_log", Value: c.log}},
				Provider: c.deploy, Status: results.StatusOK, StartedAt: t0, FinishedAt: t0.Add(time.Minute),
				Steps: []results.StepRecord{
					{Name: "warm", Kind: "warm", Status: results.StatusOK, Result: synthLoad(rng, rps/3, c.medianUS, 1, 10)},
					{Name: "wrk", Kind: "load", Status: results.StatusOK, Result: synthLoad(rng, rps, c.medianUS, spec.seconds, spec.samples)},
				},
			}
			for s := 0; s < 3; s++ {
				for p, cpu := range c.procs {
					name, host, _ := strings.Cut(p, "@") // "nginx@10.0.0.2": a process of that host
					rec.Processes = append(rec.Processes, results.ProcessSample{Step: "cpu", T: float64(s), Process: name, Host: host, PID: 100, CPUPct: cpu})
				}
			}
			recs = append(recs, rec)
			m.Trials = append(m.Trials, results.TrialEntry{TrialID: rec.TrialID, Index: i, Repetition: rep})
			i++
		}
	}
	var deploys, logs []any
	seen := map[string]bool{}
	for _, c := range spec.cells {
		if !seen["d"+c.deploy] {
			seen["d"+c.deploy] = true
			deploys = append(deploys, c.deploy)
		}
		if !seen["l"+c.log] {
			seen["l"+c.log] = true
			logs = append(logs, c.log)
		}
	}
	m.Matrix["deploy"], m.Matrix["access_log"] = deploys, logs
	w, err := results.Create(dir, m, []byte("pipeline {}"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.CommitTrial(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(results.RunOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadRun(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// s1Spec is study S1's shape: four deployments × access log on/off.
func s1Spec(id string, seed uint64) runSpec {
	base := map[string]float64{"bare": 190000, "docker-nat": 93000, "docker-host": 99500, "k8s": 49000}
	off := map[string]float64{"bare": 302000, "docker-nat": 112000, "docker-host": 186000, "k8s": 51700}
	var cells []cellSpec
	for _, d := range []string{"bare", "docker-nat", "docker-host", "k8s"} {
		for _, l := range []string{"on", "off"} {
			rps := base[d]
			if l == "off" {
				rps = off[d]
			}
			procs := map[string]float64{"nginx": 95}
			if d == "docker-nat" {
				procs["docker-proxy"] = 118.6
				procs["dockerd"] = 28.9
				procs["containerd-shim"] = 8.3
			}
			if d == "k8s" {
				procs["nginx-ingress-controller"] = 49.8
			}
			cells = append(cells, cellSpec{deploy: d, log: l, rps: rps, noise: 0.02, medianUS: 160 * 190000 / rps, procs: procs})
		}
	}
	return runSpec{id: id, reps: 3, seed: seed, fingerprint: "fp-a", cells: cells}
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
