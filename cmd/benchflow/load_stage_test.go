package main

import (
	"encoding/json"
	"fmt"
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
	_, errOut, code = runLoad(t, "--stage", "10s:64c", srv.URL+"/")
	if code != 1 || !strings.Contains(errOut, "ramping connections (closed loop) is not supported") {
		t.Errorf("--stage 10s:64c: exit %d\n%s", code, errOut)
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
		b, err := validateEdited(t, file, strings.Replace(src, "1s:100", "1s:64c", 1))
		if err == nil || !strings.Contains(string(b), "ramping connections") {
			t.Errorf("%s: validate of a closed-loop stage: %v\n%s", name, err, b)
		}
	}
}
