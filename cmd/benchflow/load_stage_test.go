package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadStages: --stage through the real binary ramps the rate: the
// schedule intends the ramp's count (0→200 req/s over 1 s, then 200 for
// 1 s: 100 + 200 sends), every one is accounted for, the load lasts the
// stages' sum, and the per-second timeseries rises.
func TestLoadStages(t *testing.T) {
	srv, _ := helloServer(t)
	out, errOut, code := runLoad(t, "--json", "-c", "4", "-t", "1", "--stage", "1s:200", "--stage", "1s:200", srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var j struct {
		Requests   int64   `json:"requests"`
		Errors     int64   `json:"errors"`
		DurationS  float64 `json:"duration_s"`
		Intended   int64   `json:"intended"`
		Missed     *int64  `json:"missed"`
		Unfinished *int64  `json:"unfinished"`
		Intervals  []struct {
			Requests int64 `json:"requests"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Missed == nil || j.Unfinished == nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if j.Intended != 300 || j.DurationS != 2 {
		t.Errorf("intended %d over %gs, want 300 over 2s", j.Intended, j.DurationS)
	}
	if got := j.Requests + j.Errors + *j.Unfinished + *j.Missed; got != j.Intended {
		t.Errorf("requests %d + errors %d + unfinished %d + missed %d = %d, want %d", j.Requests, j.Errors, *j.Unfinished, *j.Missed, got, j.Intended)
	}
	if len(j.Intervals) < 2 || j.Intervals[0].Requests > 110 || j.Intervals[0].Requests >= j.Intervals[len(j.Intervals)-1].Requests {
		t.Errorf("intervals %+v, want about 100 then 200", j.Intervals)
	}
	// Stages of connections: from 0 (no -c) up to 2 and held; the load
	// lasts their sum and reports the peak.
	out, errOut, code = runLoad(t, "--json", "--stage", "200ms:2c", "--stage", "300ms:2c", srv.URL+"/")
	var c struct {
		Connections int     `json:"connections"`
		DurationS   float64 `json:"duration_s"`
		Requests    int64   `json:"requests"`
	}
	if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil || c.Connections != 2 || c.DurationS != 0.5 || c.Requests < 2 {
		t.Errorf("--stage 200ms:2c --stage 300ms:2c: exit %d, %+v (%v)\n%s%s", code, c, err, out, errOut)
	}
	_, errOut, code = runLoad(t, "--stage", "10s:64c", "--stage", "1s:100", srv.URL+"/")
	if code != 1 || !strings.Contains(errOut, "stage 2 is a rate, stage 1 a number of connections") {
		t.Errorf("--stage 10s:64c --stage 1s:100: exit %d\n%s", code, errOut)
	}
}

// TestApplyStages: stages = [...] in a load step, HCL and Starlark alike:
// the trial intends the ramp's count (0→100 req/s over 1 s: 50 sends) and
// lasts the stages' sum; a bad stage is refused by validate.
func TestApplyStages(t *testing.T) {
	srv, _ := helloServer(t)
	srcs := map[string]string{
		"p.hcl": fmt.Sprintf(`pipeline "p" {}
step "load" "main" {
  target      = "%s/"
  connections = 2
  threads     = 1
  stages      = ["1s:100"]
}
`, srv.URL),
		"p.star": fmt.Sprintf(`pipeline("p")
step.load("main", target = "%s/", connections = 2, threads = 1, stages = ["1s:100"])
`, srv.URL),
	}
	for name, src := range srcs {
		var intended, missed, requests int64
		var dur float64
		file := applyMainStep(t, name, src, "intended, missed, requests, duration_s", &intended, &missed, &requests, &dur)
		// (How many were sent depends on the machine: a stall of the
		// loader is counted as missed sends, not hidden.)
		if intended != 50 || dur != 1 || requests+missed > 50 || requests < 1 {
			t.Errorf("%s: intended %d, missed %d, requests %d over %gs; want 50 intended over 1s", name, intended, missed, requests, dur)
		}
		b, err := validateEdited(t, file, strings.Replace(src, "1s:100", "1s:64k", 1))
		if err == nil || !strings.Contains(string(b), "or a number of connections (64c)") {
			t.Errorf("%s: validate of a bad stage: %v\n%s", name, err, b)
		}
	}
}

// TestApplyConnectionStages: stages of connections in a load step (no
// connections attribute: the ramp starts from 0): the trial runs the
// stages' sum, its connections column is the ramp's peak, and its
// requests are answered.
func TestApplyConnectionStages(t *testing.T) {
	srv, hits := helloServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := fmt.Sprintf(`pipeline "p" {}
step "load" "main" {
  target  = "%s/"
  threads = 1
  stages  = ["300ms:3c", "300ms:3c"]
}
`, srv.URL)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if b, err := exec.Command(bin, "apply", file, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var conns, requests, errs int64
	var dur float64
	err = db.QueryRow(fmt.Sprintf(`SELECT connections, requests, errors, duration_s FROM read_parquet('%s') WHERE step = 'main'`,
		filepath.Join(out, "latest", "trials.parquet"))).Scan(&conns, &requests, &errs, &dur)
	if err != nil {
		t.Fatal(err)
	}
	if conns != 3 || dur != 0.6 || requests < 3 || errs != 0 || hits.Load() < 3 {
		t.Errorf("connections %d, duration %gs, requests %d, errors %d, server hits %d; want 3, 0.6s, at least 3, 0", conns, dur, requests, errs, hits.Load())
	}
}
