package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
)

// TestStreamedEqualsLoaded: a run read with StreamTables (what `report`
// and `compare` do: the trials, timeseries, processes and probes tables
// read batch by batch and aggregated as they are read) summarises, prints
// (text, markdown, csv, json, HTML) and compares exactly as the run read
// whole: recorded runs, the published quickstart bundle (claims), a
// synthesised run in Parquet and in Arrow IPC, and a run still going
// (parts only, a warm-up step named like its load step).
func TestStreamedEqualsLoaded(t *testing.T) {
	dirs := map[string]string{
		"recorded A": filepath.Join("testdata", "recorded", recordedA),
		"recorded B": filepath.Join("testdata", "recorded", recordedB),
		"bundle":     filepath.Join("..", "..", "examples", "quickstart", "bundle"),
		"reproduced": filepath.Join("..", "..", "examples", "quickstart", "reproduced"),
	}
	dirs["s1 parquet"] = writeSynthRun(t, t.TempDir(), s1Spec("20261130T044500Z-s1s1", 1)).Dir
	arrow := s1Spec("20261130T044500Z-s1ar", 2)
	arrow.format = results.FormatArrow
	dirs["s1 arrow"] = writeSynthRun(t, t.TempDir(), arrow).Dir
	dirs["running"] = runningRun(t)
	for name, dir := range dirs {
		loaded, err := results.ReadRun(dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		streamed, err := results.ReadRunWith(dir, results.ReadOptions{StreamTables: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !streamed.Streamed() || len(streamed.Trials)+len(streamed.Timeseries)+len(streamed.Processes) != 0 {
			t.Fatalf("%s: a streamed run holds rows", name)
		}
		for _, opts := range []Options{{}, {TopProcesses: 5, ExcludeUnsteady: true}} {
			a, err := Summarize(loaded, opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b, err := Summarize(streamed, opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if name == "bundle" && len(b.Claims) == 0 || name == "running" && len(b.Cells) != 2 {
				t.Fatalf("%s: %d claims, %d cells", name, len(b.Claims), len(b.Cells))
			}
			for _, f := range []string{"text", "markdown", "csv", "json", "html"} {
				var wa, wb bytes.Buffer
				if f == "html" {
					err = WriteHTML(&wa, a)
					if err == nil {
						err = WriteHTML(&wb, b)
					}
				} else {
					err = a.Write(&wa, f)
					if err == nil {
						err = b.Write(&wb, f)
					}
				}
				if err != nil {
					t.Fatalf("%s %s: %v", name, f, err)
				}
				if !bytes.Equal(wa.Bytes(), wb.Bytes()) {
					t.Errorf("%s, %s, %+v: streamed differs from loaded\nloaded:\n%s\nstreamed:\n%s", name, f, opts, wa.String(), wb.String())
				}
				if f == "html" {
					continue
				}
				// What report prints without --html or --png.
				noSeries := opts
				noSeries.NoSeries = true
				c, err := Summarize(streamed, noSeries)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var wc bytes.Buffer
				if err := c.Write(&wc, f); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(wa.Bytes(), wc.Bytes()) {
					t.Errorf("%s, %s, %+v: without series differs from loaded\nloaded:\n%s\nwithout:\n%s", name, f, opts, wa.String(), wc.String())
				}
			}
		}
	}
	// compare: both runs streamed against both loaded.
	var out [2]bytes.Buffer
	for i, opts := range []results.ReadOptions{{}, {StreamTables: true}} {
		a, err := results.ReadRunWith(dirs["recorded A"], opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := results.ReadRunWith(dirs["recorded B"], opts)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compare(a, b, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(&out[i], "text"); err != nil {
			t.Fatal(err)
		}
	}
	if out[0].String() != out[1].String() {
		t.Errorf("compare streamed differs from loaded\nloaded:\n%s\nstreamed:\n%s", out[0].String(), out[1].String())
	}
}

// runningRun writes a run that is still going: six trials committed (one
// failed, one committed twice), no Finish, so every row is in parts/.
// Its warm-up step has the load step's name.
func runningRun(t *testing.T) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 5))
	m := &results.Manifest{RunID: "20261130T044500Z-runn", Pipeline: results.PipelineInfo{Name: "running", SHA256: "abc", Format: "hcl"},
		BenchflowVersion: "test", StartedAt: t0, Axes: []string{"deploy"}, Matrix: map[string]any{"deploy": []any{"a", "b"}}}
	for i := 0; i < 6; i++ {
		m.Trials = append(m.Trials, results.TrialEntry{TrialID: fmt.Sprintf("t%d", i), Index: i, Repetition: i/2 + 1})
	}
	w, err := results.Create(t.TempDir(), m, []byte("pipeline {}"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	for _, i := range []int{0, 1, 2, 3, 4, 5, 2} {
		deploy := []string{"a", "b"}[i%2]
		rec := &results.TrialRecord{TrialID: fmt.Sprintf("t%d", i), Index: i, Repetition: i/2 + 1,
			Params: []results.Param{{Name: "deploy", Value: deploy}}, Provider: "local", Status: results.StatusOK,
			StartedAt: t0, FinishedAt: t0.Add(time.Minute),
			Steps: []results.StepRecord{
				{Name: "main", Kind: "warm", Status: results.StatusOK, Result: synthLoad(rng, 300, 900, 1, 10)},
				{Name: "main", Kind: "load", Status: results.StatusOK, Result: synthLoad(rng, 1000*float64(1+i%2), 800, 3, 50)},
			}}
		if i == 3 {
			rec.Status, rec.Error = results.StatusFailed, "it broke"
			rec.Steps[1].Status = results.StatusFailed
		}
		for s := 0; s < 3; s++ {
			rec.Processes = append(rec.Processes, results.ProcessSample{Step: "cpu", T: float64(s), Process: "nginx", PID: 100 + s%2, CPUPct: float64(10 * (i + s))})
		}
		if err := w.CommitTrial(rec); err != nil {
			t.Fatal(err)
		}
	}
	return w.Dir()
}
