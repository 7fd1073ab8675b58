package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/benchflow/benchflow/engine/results"
)

// explainedRun is a run of two cells × two repetitions whose trials rows
// carry budgets and verdicts, with fuse-overlayfs in the processes and
// one busy start.
func explainedRun() *results.Run {
	m := &results.Manifest{RunID: "20261201T100000Z-expl", Status: results.RunOK, Axes: []string{"deploy"},
		Matrix: map[string]any{"deploy": []any{"host", "docker-host"}}}
	m.Pipeline.Name = "explained"
	run := &results.Run{Manifest: m, Axes: []string{"deploy"}}
	add := func(id, deploy, verdict, evidence string, busy bool, b results.CPUBudget) {
		m.Trials = append(m.Trials, results.TrialEntry{TrialID: id, Status: results.StatusOK, Provider: map[string]string{"host": "local", "docker-host": "docker"}[deploy]})
		run.Trials = append(run.Trials, results.TrialRow{RunID: m.RunID, TrialID: id, Step: "wrk", StepKind: "load",
			Params: []results.Param{{Name: "deploy", Value: deploy}}, Status: results.StatusOK, RPS: 1000, Requests: 1000, DurationS: 1,
			CPUTotalPct: b.TotalPct, CPULoaderPct: b.LoaderPct, CPUServicePct: b.ServicePct, CPUInfraPct: b.InfraPct,
			CPUKernelPct: b.KernelPct, CPUOtherPct: b.OtherPct, CPUIdlePct: b.IdlePct, CPUStealPct: b.StealPct,
			CPUUnattributedPct: b.UnattributedPct, Verdict: verdict, VerdictEvidence: evidence,
			QuietWindowS: 1, QuietPct: map[bool]float64{true: 42, false: 1}[busy], QuietTop: map[bool]string{true: "compile 40%"}[busy], BusyStart: busy})
	}
	host := results.CPUBudget{TotalPct: 200, LoaderPct: 30, ServicePct: 100, KernelPct: 10, IdlePct: 58, UnattributedPct: 2}
	dock := results.CPUBudget{TotalPct: 200, LoaderPct: 20, ServicePct: 41, InfraPct: 31, KernelPct: 6, IdlePct: 100, UnattributedPct: 2}
	add("t1", "host", "server-bound", "nginx pid 1 at 99% of a core, 1 thread", false, host)
	add("t2", "docker-host", "not CPU-bound", "50% idle while closed-loop: waiting on something — top waiter fuse-overlayfs 29%", false, dock)
	add("t3", "host", "server-bound", "nginx pid 1 at 98% of a core, 1 thread", false, host)
	add("t4", "docker-host", "noisy", "other processes used 42% of a core in the 1.0 s before the load: compile 40%", true, dock)
	for _, id := range []string{"t2", "t4"} {
		for _, ts := range []float64{1, 2} {
			run.Processes = append(run.Processes, results.ProcessRow{RunID: m.RunID, TrialID: id, Step: "cpu", TS: ts,
				Process: "fuse-overlayfs", PID: 480, Role: "infra", CPUPct: 29})
		}
	}
	return run
}

func TestReportVerdicts(t *testing.T) {
	s, err := Summarize(explainedRun(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var host, dock *Cell
	for _, c := range s.Cells {
		switch c.Params[0].Value {
		case "host":
			host = c
		case "docker-host":
			dock = c
		}
	}
	if host == nil || dock == nil || host.Verdict == nil || dock.Verdict == nil {
		t.Fatalf("cells %+v", s.Cells)
	}
	if l := host.Verdict.Label(); l != "server-bound (nginx pid 1 at 99% of a core, 1 thread)" || host.Verdict.Evidence != "nginx pid 1 at 99% of a core, 1 thread" {
		t.Errorf("host verdict %q (%s)", l, host.Verdict.Evidence)
	}
	// Tied kinds: the first repetition's wins; the busy start is counted.
	if l := dock.Verdict.Label(); l != "not CPU-bound 1/2 (50% idle while closed-loop: waiting on something — top waiter fuse-overlayfs 29%), 1 busy start" {
		t.Errorf("docker-host verdict label %q", l)
	}
	if b := dock.Verdict.CPU; b == nil || b.InfraPct != 31 || b.TotalPct != 200 {
		t.Errorf("docker-host mean budget %+v", b)
	}

	var text bytes.Buffer
	if err := s.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	table := strings.Index(out, "deploy ")
	for _, want := range []string{
		"warning: 1 of 4 trials started on a busy machine: processes outside the run used up to 42% of a core just before the load (busiest: compile 40%)",
		"warning: fuse-overlayfs used 29% of a core during deploy=docker-host: every file a container opens crosses a FUSE filesystem",
	} {
		i := strings.Index(out, want)
		if i < 0 || i > table {
			t.Errorf("text report lacks %q above the table:\n%s", want, out)
		}
	}
	// The table holds the verdict's word and a note number; the
	// evidence is in the numbered notes below it.
	if !strings.Contains(out, "verdict") || !strings.Contains(out, "not CPU-bound 1/2 [2]") || !strings.Contains(out, "[2] deploy=docker-host: not CPU-bound 1/2 — 50% idle") {
		t.Errorf("no verdict column with a word and a note:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > TextWidth {
			t.Errorf("a line of %d columns (at most %d):\n%s", n, TextWidth, l)
		}
	}
	if strings.Index(out, "[2] deploy=docker-host") < strings.Index(out, "not CPU-bound 1/2 [2]") {
		t.Errorf("the verdict notes are not below the table:\n%s", out)
	}

	var md bytes.Buffer
	if err := s.Write(&md, "markdown"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| verdict |") || !strings.Contains(md.String(), "> warning: fuse-overlayfs used 29%") {
		t.Errorf("markdown:\n%s", md.String())
	}

	var c bytes.Buffer
	if err := s.Write(&c, "csv"); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, r := range recs[1:] {
		if r[col["param_deploy"]] == "host" && (r[col["verdict"]] != "server-bound" || r[col["cpu_service_pct"]] != "100" || r[col["verdict_count"]] != "2") {
			t.Errorf("csv row %v", r)
		}
	}

	var j bytes.Buffer
	if err := s.Write(&j, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Notices []string `json:"notices"`
		Cells   []struct {
			Verdict *struct {
				Verdict string             `json:"verdict"`
				CPU     *results.CPUBudget `json:"cpu"`
			} `json:"verdict"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// The machine's state leads the notices, in the words the page's
	// environment row and reproduce use (results.MachineState).
	if len(doc.Notices) != 3 || doc.Notices[0] != "machine: partly busy (1 of 4 trials started busy; 1 of 4 noisy)" || len(doc.Cells) != 2 || doc.Cells[0].Verdict == nil || doc.Cells[0].Verdict.Verdict != "server-bound" {
		t.Errorf("json: %s", j.String())
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	if !strings.Contains(page, `id="chart-cpu"`) || !strings.Contains(page, "fuse-overlayfs used 29%") {
		t.Error("HTML lacks the CPU chart or the notices")
	}
	if strings.Index(page, "fuse-overlayfs used 29%") > strings.Index(page, "<table") {
		t.Error("HTML notices are not above the table")
	}

	dir := t.TempDir()
	paths, err := WritePNG(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 || filepath.Base(paths[len(paths)-1]) != "cpu.png" {
		t.Fatalf("PNG files %v", paths)
	}
	if st, err := os.Stat(filepath.Join(dir, "cpu.png")); err != nil || st.Size() < 1000 {
		t.Errorf("cpu.png: %v", err)
	}
}

// TestReportWithoutBudgets: a run without whole-machine accounting has no
// verdict column, no CPU chart and no notices.
func TestReportWithoutBudgets(t *testing.T) {
	run := explainedRun()
	for i := range run.Trials {
		r := &run.Trials[i]
		r.CPUTotalPct, r.Verdict, r.BusyStart, r.QuietWindowS = 0, "", false, 0
	}
	run.Processes = nil
	s, err := Summarize(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	s.Write(&text, "text")
	if strings.Contains(text.String(), "verdict") || strings.HasPrefix(strings.SplitN(text.String(), "\n", 3)[2], "warning") || cpuChartSVG(s) != "" || len(s.Notices) != 0 {
		t.Errorf("report without budgets:\n%s", text.String())
	}
}

// TestReportUnexplained: a cell half as fast as its baseline with the same
// verdict and no more CPU outside the service gets a notice; one whose
// verdict names another limit does not.
func TestReportUnexplained(t *testing.T) {
	run := explainedRun()
	for i := range run.Trials {
		r := &run.Trials[i]
		if r.Param("deploy") == "docker-host" {
			r.RPS = 500
			if r.TrialID == "t4" {
				r.Verdict, r.BusyStart = "server-bound", false
			}
		}
	}
	s, err := Summarize(run, Options{Baseline: "deploy=host"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notices) != 1 {
		t.Fatalf("notices %q, want only the fuse-overlayfs one (different verdicts explain the gap)", s.Notices)
	}
	for i := range run.Trials {
		if r := &run.Trials[i]; r.Param("deploy") == "docker-host" {
			r.Verdict, r.CPUInfraPct, r.CPUIdlePct = "server-bound", 5, r.CPUIdlePct+26
		}
	}
	run.Processes = nil
	s, err = Summarize(run, Options{Baseline: "deploy=host"})
	if err != nil {
		t.Fatal(err)
	}
	want := "deploy=docker-host is 0.50× deploy=host and the accounting does not explain it (server-bound vs server-bound; infra+kernel+other 11% vs 10% of a core); the service used 82.0% vs 100.0% of a core per 1,000 req/s"
	if len(s.Notices) != 1 || s.Notices[0] != want {
		t.Errorf("notices %q\nwant %q", s.Notices, want)
	}
}
