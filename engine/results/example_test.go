package results_test

import (
	"fmt"
	"os"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/results"
)

// A run as the executor writes it: Create, one CommitTrial per finished
// trial, Finish; then ReadRun reads it back.
func Example() {
	out, _ := os.MkdirTemp("", "results-example")
	defer os.RemoveAll(out)

	m := &results.Manifest{
		RunID:    "20261130T044500Z-3f9c",
		Pipeline: results.PipelineInfo{Name: "quickstart", Format: "hcl"},
		Axes:     []string{"workers"},
		Trials:   []results.TrialEntry{{TrialID: "t0", Repetition: 1}},
	}
	w, err := results.Create(out, m, []byte(`pipeline "quickstart" {}`), "quickstart.hcl")
	if err != nil {
		fmt.Println(err)
		return
	}
	lat := hdrhistogram.New(1, 60_000_000, 3)
	for v := int64(100); v <= 1000; v++ {
		lat.RecordValue(v)
	}
	res := &measure.Record{Duration: 10 * time.Second, Requests: 901, Latency: lat}
	err = w.CommitTrial(&results.TrialRecord{
		TrialID: "t0", Repetition: 1, Status: results.StatusOK,
		Params: []results.Param{{Name: "workers", Value: int64(4)}},
		Steps:  []results.StepRecord{{Name: "wrk", Kind: "load", Status: results.StatusOK, Result: res}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Finish(results.RunOK, time.Now()); err != nil {
		fmt.Println(err)
		return
	}

	run, err := results.ReadRun(out) // follows out/latest
	if err != nil {
		fmt.Println(err)
		return
	}
	t := run.Trials[0]
	h := run.Histogram(t.TrialID, t.Step)
	fmt.Println(run.Manifest.Status, run.Axes, t.Param("workers"), t.RPS)
	fmt.Println("p99 from trials:", t.LatencyP99US, "from buckets:", h.Percentile(99))
	// Output:
	// ok [workers] 4 90.1
	// p99 from trials: 991 from buckets: 991
}
