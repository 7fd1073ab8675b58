package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
)

func TestReportGolden(t *testing.T) {
	run := writeSynthRun(t, t.TempDir(), s1Spec("20261130T044500Z-s1s1", 1))
	s, err := Summarize(run, Options{Baseline: "deploy=bare"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"text", "markdown", "csv", "json"} {
		var b bytes.Buffer
		if err := s.Write(&b, f); err != nil {
			t.Fatal(err)
		}
		golden(t, "report_s1."+f+".golden", b.Bytes())
	}
}

func TestSummarize(t *testing.T) {
	spec := s1Spec("20261130T044500Z-s1s2", 2)
	run := writeSynthRun(t, t.TempDir(), spec)
	s, err := Summarize(run, Options{Baseline: "deploy=bare"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != len(spec.cells) {
		t.Fatalf("%d cells, want %d", len(s.Cells), len(spec.cells))
	}
	for i, c := range s.Cells {
		want := spec.cells[i]
		if c.Params[0].Value != want.deploy || c.Params[1].Value != want.log {
			t.Errorf("cell %d = %s, want deploy=%s access_log=%s (matrix order)", i, c.Label(), want.deploy, want.log)
		}
		if c.N != spec.reps || c.Step != "wrk" {
			t.Errorf("%s: n=%d step=%q; warm rows must be ignored", c.Label(), c.N, c.Step)
		}
		// Recompute the geometric mean from the trial rows independently.
		var sumLog float64
		var p99s []float64
		for _, tr := range run.Trials {
			if tr.StepKind == "load" && tr.Param("deploy") == want.deploy && tr.Param("access_log") == want.log {
				sumLog += math.Log(tr.RPS)
				p99s = append(p99s, tr.LatencyP99US)
			}
		}
		if m := math.Exp(sumLog / float64(spec.reps)); math.Abs(m-c.RPS.Value) > 1e-9*m {
			t.Errorf("%s: geometric mean rps %v, recomputed %v", c.Label(), c.RPS.Value, m)
		}
		if c.RPS.Method != stats.MethodLogT || c.RPS.N != spec.reps {
			t.Errorf("%s: interval method %q n=%d, want log-t over %d", c.Label(), c.RPS.Method, c.RPS.N, spec.reps)
		}
		if !(c.RPS.Low < c.RPS.Value && c.RPS.Value < c.RPS.High) {
			t.Errorf("%s: CI %+v does not bracket the mean", c.Label(), c.RPS)
		}
		// The true mean lies within a few CI widths (noise is 2%).
		if math.Abs(c.RPS.Value-want.rps) > 0.1*want.rps {
			t.Errorf("%s: mean %v far from %v", c.Label(), c.RPS.Value, want.rps)
		}
		// Merged p99 lies between the per-repetition p99s.
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range p99s {
			lo, hi = math.Min(lo, p), math.Max(hi, p)
		}
		if c.P99US < lo*0.999 || c.P99US > hi*1.001 {
			t.Errorf("%s: merged p99 %v outside repetitions' [%v, %v]", c.Label(), c.P99US, lo, hi)
		}
		if !(c.P50US < c.P99US && c.P99US <= c.P999US) {
			t.Errorf("%s: percentiles not ordered: %v %v %v", c.Label(), c.P50US, c.P99US, c.P999US)
		}
		if c.Baseline == nil {
			t.Fatalf("%s: no baseline ratio", c.Label())
		}
		if want.deploy == "bare" {
			if c.Baseline.Value != 1 {
				t.Errorf("baseline cell ratio %v", c.Baseline.Value)
			}
		} else {
			base := s1Spec("", 0)
			var b float64
			for _, bc := range base.cells {
				if bc.deploy == "bare" && bc.log == want.log {
					b = bc.rps
				}
			}
			if r := want.rps / b; math.Abs(c.Baseline.Value-r) > 0.1*r || !(c.Baseline.Low < c.Baseline.Value && c.Baseline.Value < c.Baseline.High) {
				t.Errorf("%s: ratio %+v, expected about %.3f", c.Label(), *c.Baseline, r)
			}
		}
	}
	nat := s.Cells[2]
	if len(nat.Processes) != 3 || nat.Processes[0].Process != "docker-proxy" || math.Abs(nat.Processes[0].CPUPct-118.6) > 1e-9 {
		t.Errorf("docker-nat top processes = %+v", nat.Processes)
	}
}

func TestSummarizeBaselineErrors(t *testing.T) {
	run := writeSynthRun(t, t.TempDir(), s1Spec("20261130T044500Z-s1s3", 3))
	for spec, want := range map[string]string{
		"deploy":           "want axis=value",
		"nope=1":           `no matrix axis "nope"`,
		"deploy=vm":        "no cell has deploy=vm (values: bare, docker-nat, docker-host, k8s)",
		"=bare":            "want axis=value",
		"access_log=maybe": "values: on, off",
	} {
		_, err := Summarize(run, Options{Baseline: spec})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("baseline %q: error %v, want it to mention %q", spec, err, want)
		}
	}
	if err := (&Summary{}).Write(&bytes.Buffer{}, "yaml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestSummarizeFailedAndSingle(t *testing.T) {
	spec := s1Spec("20261130T044500Z-s1s4", 4)
	spec.reps = 1
	spec.cells = spec.cells[:2]
	run := writeSynthRun(t, t.TempDir(), spec)
	// Mark the second trial failed, as the executor would: it failed
	// before measuring, so it has one row without a step.
	var kept []results.TrialRow
	for _, tr := range run.Trials {
		if tr.TrialID == "t001" {
			if tr.StepKind == "warm" {
				continue
			}
			tr.Status, tr.Step, tr.StepKind = results.StatusFailed, "", ""
		}
		kept = append(kept, tr)
	}
	run.Trials = kept
	s, err := Summarize(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cells[0].RPS.HasCI() {
		t.Error("n=1 must have no CI")
	}
	if s.Cells[1].N != 0 || s.Cells[1].Failed != 1 || len(s.Warnings) != 1 {
		t.Errorf("failed cell n=%d failed=%d warnings=%v", s.Cells[1].N, s.Cells[1].Failed, s.Warnings)
	}
	var b bytes.Buffer
	if err := s.Write(&b, "json"); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatalf("json output does not parse: %v", err)
	}
	if err := s.Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
}

// TestReportArrowEqualsParquet: a run written as Arrow IPC reports exactly
// as the same run written as Parquet.
func TestReportArrowEqualsParquet(t *testing.T) {
	var out [2]string
	for i, f := range []string{results.FormatParquet, results.FormatArrow} {
		spec := s1Spec("20261130T044500Z-fmt0", 9)
		spec.cells, spec.seconds, spec.samples, spec.format = spec.cells[:4], 3, 50, f
		run := writeSynthRun(t, t.TempDir(), spec)
		if run.Format != f {
			t.Fatalf("run format %q, want %q", run.Format, f)
		}
		s, err := Summarize(run, Options{Baseline: "deploy=bare"})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := s.Write(&b, "json"); err != nil {
			t.Fatal(err)
		}
		out[i] = b.String()
	}
	if out[0] != out[1] {
		t.Errorf("reports differ:\n--- parquet\n%s\n--- arrow\n%s", out[0], out[1])
	}
}
