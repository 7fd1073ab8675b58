package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

// loadRun is a run in memory of one cell (3 repetitions at rps req/s),
// recorded with the load average la on 2 CPUs and quiet checks that
// found otherPct of a core outside the run (busy at 10% and more).
func loadRun(id string, rps float64, la []any, otherPct float64, version string) *results.Run {
	m := &results.Manifest{RunID: id, Status: results.RunOK, Axes: []string{"size"},
		Matrix: map[string]any{"size": []any{"64"}},
		Environment: map[string]any{"allowed_cpus": 2.0, "cpu_threads": 2.0, "benchflow_version": version,
			"collected_at": id, "load_average": la}}
	m.Pipeline.Name = "load"
	run := &results.Run{Manifest: m, Axes: []string{"size"}}
	for r := 1; r <= 3; r++ {
		tid := fmt.Sprintf("c01-r%d", r)
		m.Trials = append(m.Trials, results.TrialEntry{TrialID: tid, Repetition: r, Status: results.StatusOK})
		run.Trials = append(run.Trials, results.TrialRow{RunID: id, TrialID: tid, Repetition: int64(r), Step: "main", StepKind: "load",
			Params: []results.Param{{Name: "size", Value: "64"}}, Status: results.StatusOK,
			RPS: rps * (1 + 0.01*float64(r)), Requests: int64(rps), DurationS: 1, LatencyP99US: 1000,
			QuietWindowS: 1, QuietPct: otherPct + float64(r), BusyStart: otherPct+float64(r) >= 10})
	}
	return run
}

// TestMachineLoadOverTrials: the load average at each trial's start
// (quiet_load_avg) is shown but does not judge: taken seconds after the
// previous trial's load, it counts the run's own loader and server (a
// run alone on 2 CPUs reads about 2 there). The quiet checks judge; the
// load average before the first trial only without them.
func TestMachineLoadOverTrials(t *testing.T) {
	r := loadRun("a", 1000, []any{0.3, 0.2, 0.1}, 1, "v1")
	for i, la := range []float64{3.5, 2.5, 12} {
		r.Trials[i].QuietLoadAvg = la
	}
	l := MachineLoad(r)
	if l.Busy || l.TrialLoads != 3 || l.TrialLoadMedian != 3.5 || l.TrialLoadMax != 12 || l.Why != "" {
		t.Errorf("a run's own load judged busy: %+v", l)
	}
	if got := l.TrialsText(); got != "median 3.50, max 12.00 over 3 trials (counting the run's own previous loads)" {
		t.Errorf("TrialsText: %q", got)
	}
	r = loadRun("b", 1000, []any{24.1, 18.5, 9.6}, 1, "v1")
	for i := range r.Trials {
		r.Trials[i].QuietLoadAvg = 0.5
	}
	if l := MachineLoad(r); l.Busy || !strings.Contains(l.String(), "at the trials' start median 0.50, max 0.50 over 3 trials") {
		t.Errorf("load average before the first trial judged over quiet checks: %+v, %s", l, l)
	}
	// Without quiet checks (no collect step) the load average before the
	// first trial judges.
	r.Trials = nil
	if l := MachineLoad(r); !l.Busy || l.Why != "load average before the first trial 24.10 ≥ 2 CPUs" {
		t.Errorf("no quiet check, load average 24.10 before the first trial: %+v", l)
	}
}

func TestMachineLoad(t *testing.T) {
	busy := MachineLoad(loadRun("a", 1000, []any{24.1, 18.5, 9.6}, 150, "v1"))
	if !busy.Busy || busy.CPUs != 2 || busy.QuietChecks != 3 || busy.BusyStarts != 3 || busy.QuietMedianPct != 152 || busy.QuietMaxPct != 153 {
		t.Errorf("busy run: %+v", busy)
	}
	if busy.Why != "3 of 3 trials started busy" {
		t.Errorf("busy run: why %q", busy.Why)
	}
	quiet := MachineLoad(loadRun("b", 1000, []any{0.4, 0.5, 0.6}, 1, "v1"))
	if quiet.Busy || quiet.Verdict() != "quiet" || !strings.Contains(quiet.String(), "0.40 / 0.50 / 0.60 (1 / 5 / 15 min) on 2 CPUs") {
		t.Errorf("quiet run: %+v, %s", quiet, quiet)
	}
	// The load average alone decides without quiet checks (no collect
	// step), and the quiet checks alone without a load average (a run
	// recorded before it was).
	r := loadRun("c", 1000, []any{2.0, 1, 1}, 0, "v1")
	for i := range r.Trials {
		r.Trials[i].QuietWindowS = 0
	}
	if l := MachineLoad(r); !l.Busy || l.QuietText() != "no quiet check" {
		t.Errorf("load average 2 on 2 CPUs: %+v", l)
	}
	r = loadRun("d", 1000, nil, 50, "v1")
	delete(r.Manifest.Environment, "load_average")
	if l := MachineLoad(r); !l.Busy || l.AverageText() != "not recorded" {
		t.Errorf("quiet checks only: %+v", l)
	}
	if l := MachineLoad(&results.Run{Manifest: &results.Manifest{}}); l.Busy || l.Recorded() || !strings.HasPrefix(l.String(), "not recorded") {
		t.Errorf("nothing recorded: %+v", l)
	}
}

// TestVerdictNamesTheLoad: a bundle measured on a busy machine (load
// average 24 on 2 CPUs), reproduced on a quiet one twice as fast: the
// cell did not reproduce, and the verdict names the machine's load first,
// before benchflow_version, the only environment field that differs.
func TestVerdictNamesTheLoad(t *testing.T) {
	a := loadRun("20261201T000000Z-aaaa", 1000, []any{24.1, 18.5, 9.6}, 150, "v1")
	b := loadRun("20261202T000000Z-bbbb", 2000, []any{0.4, 0.5, 0.6}, 1, "v2")
	v, err := Judge("bundle", a, b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Environment) != 1 || v.Environment[0].Field != "benchflow_version" {
		t.Errorf("environment differences: %v (load_average is compared apart)", v.Environment)
	}
	if len(v.Cells) != 1 || v.Cells[0].Reproduced != "no" {
		t.Fatalf("cells: %+v", v.Cells)
	}
	want := []string{"machine load", "benchflow_version"}
	if strings.Join(v.Cells[0].Explain, "|") != strings.Join(want, "|") {
		t.Errorf("cell explained by %q, want %q", v.Cells[0].Explain, want)
	}
	var text, md, js bytes.Buffer
	for f, w := range map[string]*bytes.Buffer{"text": &text, "markdown": &md, "json": &js} {
		if err := v.Write(w, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"machine load (bundle → here)", "24.10 / 18.50 / 9.60 (1 / 5 / 15 min) on 2 CPUs", "0.40 / 0.50 / 0.60", "load average at the trials' start",
		"busy (3 of 3 trials started busy", "median 152.0%, max 153.0% of a core outside the run; 3 of 3 trials started busy", "not comparable",
		"summary: ", "machine load (bundle busy"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text verdict lacks %q:\n%s", s, text.String())
		}
	}
	if !strings.Contains(md.String(), "| load average before the first trial | 24.10 / 18.50 / 9.60 (1 / 5 / 15 min) on 2 CPUs | 0.40 / 0.50 / 0.60 (1 / 5 / 15 min) on 2 CPUs |") {
		t.Errorf("markdown verdict lacks the load row:\n%s", md.String())
	}
	var doc struct {
		Load struct {
			Bundle struct {
				Busy        bool      `json:"busy"`
				LoadAverage []float64 `json:"load_average"`
			} `json:"bundle"`
			Here struct {
				Busy bool `json:"busy"`
			} `json:"here"`
		} `json:"load"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Load.Bundle.Busy || doc.Load.Here.Busy || len(doc.Load.Bundle.LoadAverage) != 3 {
		t.Errorf("json verdict load: %+v", doc.Load)
	}

	// Both quiet: the load is shown, and explains nothing.
	a = loadRun("20261201T000000Z-aaaa", 1000, []any{0.5, 0.5, 0.5}, 1, "v1")
	if v, err = Judge("bundle", a, b, nil, nil); err != nil {
		t.Fatal(err)
	}
	if v.Load.Busy() || strings.Join(v.Cells[0].Explain, "|") != "benchflow_version" || strings.Contains(v.Summary(), "machine load") {
		t.Errorf("quiet on both sides: explain %q, summary %q", v.Cells[0].Explain, v.Summary())
	}
}

// TestReproduceMDStatesTheLoad: REPRODUCE.md says what load the bundle
// was measured under, and says so loudly when the machine was busy.
func TestReproduceMDStatesTheLoad(t *testing.T) {
	busy := loadRun("a", 1000, []any{24.1, 18.5, 9.6}, 150, "v1")
	md := reproduceMD("bundle", busy.Manifest, MachineLoad(busy), nil, nil, nil)
	for _, s := range []string{"## The load it was measured under", "| load average before the first trial | 24.10 / 18.50 / 9.60 (1 / 5 / 15 min) on 2 CPUs |",
		"**This bundle was measured on a busy machine**"} {
		if !strings.Contains(md, s) {
			t.Errorf("REPRODUCE.md lacks %q:\n%s", s, md)
		}
	}
	quiet := loadRun("b", 1000, []any{0.4, 0.5, 0.6}, 1, "v1")
	if md := reproduceMD("bundle", quiet.Manifest, MachineLoad(quiet), nil, nil, nil); strings.Contains(md, "busy machine**") || !strings.Contains(md, "| machine | quiet |") {
		t.Errorf("REPRODUCE.md of a quiet run:\n%s", md)
	}
}

// TestVariableDifferences: a variable set otherwise here (reproduce
// --var duration=1s) is listed, and one set the same is not.
func TestVariableDifferences(t *testing.T) {
	a := &results.Manifest{Pipeline: results.PipelineInfo{Variables: map[string]any{"duration": "3s", "workers": float64(2), "same": "x"}}}
	b := &results.Manifest{Pipeline: results.PipelineInfo{Variables: map[string]any{"duration": "1s", "workers": float64(2), "same": "x", "new": true}}}
	got := variableDifferences(a, b)
	want := []VariableDifference{{Name: "duration", Bundle: "3s", Here: "1s"}, {Name: "new", Bundle: "(not set)", Here: "true"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("variableDifferences = %+v, want %+v", got, want)
	}
}

// TestMachineLoadNoisyIsNeverQuiet: a run whose trials are all noisy, one
// of three started busy (the rule "busy only when more than half started
// busy" called it quiet): its state is busy in the words of
// results.MachineState, which the report's notices use too, and the line
// the page's environment row and the README state never says quiet.
func TestMachineLoadNoisyIsNeverQuiet(t *testing.T) {
	r := loadRun("a", 1000, []any{0.4, 0.5, 0.6}, 1, "v1")
	r.Trials[0].BusyStart = true
	for i := range r.Trials {
		r.Trials[i].Verdict = "noisy"
	}
	l := MachineLoad(r)
	want := results.MachineStateOf(r.Trials).String()
	if !l.Busy || l.Verdict() != want || want != "busy (1 of 3 trials started busy; 3 of 3 noisy)" {
		t.Errorf("all noisy: %+v, verdict %q, want %q", l, l.Verdict(), want)
	}
	if s := l.String(); !strings.HasPrefix(s, want+";") || strings.Contains(s, "quiet;") {
		t.Errorf("all noisy: %s", s)
	}
	// One noisy trial of three: partly busy, not busy (reproduce does not
	// name it as a difference) and not quiet.
	r.Trials[1].Verdict, r.Trials[2].Verdict = "server-bound", "server-bound"
	if l := MachineLoad(r); l.Busy || l.State != results.MachinePartly || l.Verdict() != "partly busy (1 of 3 trials started busy; 1 of 3 noisy)" {
		t.Errorf("one noisy trial: %+v, %q", l, l.Verdict())
	}
}
