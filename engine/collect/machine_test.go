package collect

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
)

// TestMachineAccounting runs a real nginx under load next to a CPU burner
// that nothing names and that is not a descendant of this process (which
// plays benchflow: its children are the loader's): the whole-machine accounting must find the burner
// (role other, in processes.parquet) and count it in the budget, whose
// parts add up to the machine.
func TestMachineAccounting(t *testing.T) {
	addr, dir, master := startNginx(t)
	bpid := startOrphan(t, "while :; do :; done")
	s, err := Start(context.Background(), Config{
		Step:     "cpu",
		Interval: 250 * time.Millisecond,
		Names:    []string{"nginx"},
		System:   true,
		Machine:  true,
		Quiet:    200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	okReqs := load(t, "http://"+addr+"/", 20000, 3*time.Second)
	ps, ss, _ := s.Stop()
	if okReqs == 0 {
		t.Fatal("no request succeeded")
	}
	ex := s.Explain()
	if ex == nil || ex.Budget == nil {
		t.Fatalf("no explanation: %+v", ex)
	}
	b := *ex.Budget

	var burnRows, nginxRows, loaderRows int
	burnCPU := 0.0
	for _, p := range ps {
		switch {
		case p.PID == bpid:
			burnRows++
			burnCPU += p.CPUPct
			if p.Role != RoleOther || p.Process != "sh" {
				t.Errorf("burner row %+v, want role other, process sh", p)
			}
		case p.Process == "nginx" && (p.PID == master || p.Role == RoleNamed):
			nginxRows++
		case p.Role == RoleLoader:
			loaderRows++
			if p.Process != LoaderName || p.PID != os.Getpid() {
				t.Errorf("loader row %+v", p)
			}
		}
		if p.Role == RoleKernel && p.Container != "" {
			t.Errorf("kernel thread in a container: %+v", p)
		}
		if p.CPUPct < 0 || p.T <= 0 {
			t.Errorf("implausible row %+v", p)
		}
	}
	if burnRows == 0 || burnCPU <= 0 {
		t.Fatalf("burner pid %d: %d rows, CPU %.1f", bpid, burnRows, burnCPU)
	}
	if nginxRows == 0 || loaderRows == 0 {
		t.Errorf("nginx rows %d, loader rows %d", nginxRows, loaderRows)
	}
	var burner ProcCPU
	for _, p := range ex.Procs {
		if p.PID == bpid {
			burner = p
		}
	}
	if burner.CPUPct < 5 {
		t.Errorf("burner averaged %.1f%% of a core", burner.CPUPct)
	}
	// The burner is part of "other" in the budget.
	if b.OtherPct+1e-6 < burner.CPUPct {
		t.Errorf("budget other %.1f%% < burner %.1f%%", b.OtherPct, burner.CPUPct)
	}
	if b.ServicePct <= 0 || b.LoaderPct <= 0 {
		t.Errorf("budget without service or loader: %+v", b)
	}
	sum := 0.0
	for _, part := range BudgetParts(b) {
		sum += part.Pct
	}
	if math.Abs(sum-b.TotalPct) > 1e-6 {
		t.Errorf("budget parts add up to %.3f, total %.3f: %+v", sum, b.TotalPct, b)
	}
	if n := countCPUsOnline(t); b.TotalPct != float64(n)*100 {
		t.Errorf("total %.0f for %d CPUs", b.TotalPct, n)
	}
	if ex.Quiet == nil || ex.Quiet.WindowS < 0.2 || ex.Quiet.OtherPct < 0 || ex.Quiet.LoadAvg < 0 {
		t.Errorf("quiet check %+v", ex.Quiet)
	}
	t.Logf("budget %+v; burner %.1f%%; verdict %s", b, burner.CPUPct, Judge(Evidence{Budget: b, Procs: ex.Procs, Quiet: ex.Quiet}))

	// Through the results writer and back.
	out := filepath.Join(dir, "results")
	runID := results.NewRunID(time.Now())
	w, err := results.Create(out, &results.Manifest{RunID: runID, Trials: []results.TrialEntry{{TrialID: "t1"}}}, []byte("pipeline {}"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(Evidence{Budget: b, Procs: ex.Procs, Quiet: ex.Quiet})
	rec := &results.TrialRecord{TrialID: "t1", Status: results.StatusOK, Processes: ps, System: ss,
		Steps: []results.StepRecord{{Name: "wrk", Kind: "load", Status: results.StatusOK, CPU: ex.Budget,
			Verdict: v.Kind, VerdictEvidence: v.Evidence, Quiet: ex.Quiet}}}
	if err := w.CommitTrial(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(results.StatusOK, time.Now()); err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadRun(filepath.Join(out, runID))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range run.Processes {
		if int(r.PID) == bpid && r.Role == RoleOther {
			found = true
		}
	}
	if !found {
		t.Error("processes.parquet has no row of the burner with role other")
	}
	if len(run.Trials) != 1 {
		t.Fatalf("%d trial rows", len(run.Trials))
	}
	tr := run.Trials[0]
	if tr.CPUTotalPct != b.TotalPct || tr.CPUOtherPct != b.OtherPct || tr.Verdict != v.Kind || tr.VerdictEvidence != v.Evidence ||
		tr.QuietWindowS != ex.Quiet.WindowS || tr.BusyStart != ex.Quiet.Busy || tr.QuietLoadAvg != ex.Quiet.LoadAvg {
		t.Errorf("trials.parquet row %+v, budget %+v, verdict %v", tr, b, v)
	}
	got := tr.CPULoaderPct + tr.CPUServicePct + tr.CPUInfraPct + tr.CPUKernelPct + tr.CPUOtherPct + tr.CPUIdlePct + tr.CPUStealPct + tr.CPUUnattributedPct
	if math.Abs(got-tr.CPUTotalPct) > 1e-6 {
		t.Errorf("trials.parquet cpu_* columns add up to %.3f, cpu_total_pct %.3f", got, tr.CPUTotalPct)
	}
}

func countCPUsOnline(t *testing.T) int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	return countCPUs(b)
}

// TestReapedChildren: a shell that runs short-lived CPU-bound children
// (each lives a fraction of an interval, so most are never sampled): the
// CPU its children used reaches the budget through the shell's
// cutime+cstime, without counting the children that were sampled twice.
func TestReapedChildren(t *testing.T) {
	gen := startSleep(t, "sh", "-c", `while :; do sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done'; done`)
	pid := gen.Process.Pid
	lifetime := func() uint64 { // the shell's own CPU and its waited-for children's
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := parseStat(b)
		if err != nil {
			t.Fatal(err)
		}
		return st.utime + st.stime + st.ctime
	}
	before := lifetime()
	s, err := Start(context.Background(), Config{Step: "c", Interval: 250 * time.Millisecond, Machine: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	s.Stop()
	used := lifetime() - before
	s.mu.Lock()
	mp := s.m.procs[pid]
	s.mu.Unlock()
	if mp == nil {
		t.Fatal("the generator shell is not in the machine accounting")
	}
	// Ticks the accounting gave the shell: its own, plus its children's
	// (sampled alive or reaped unseen).
	var children uint64
	for _, g := range append(append([]*machProc(nil), s.m.gone...), mapValues(s.m.procs)...) {
		if g.ppid == pid {
			children += g.total
		}
	}
	got := mp.total + mp.reaped + children
	t.Logf("shell and children used %d ticks; accounted %d (own %d, reaped %d, sampled children %d)", used, got, mp.total, mp.reaped, children)
	if used < 20 {
		t.Skipf("the generator got only %d ticks of CPU: too little to compare", used)
	}
	// Children alive at either end make the two differ by at most a few
	// children's lives; without the reaped children it would be far less.
	if float64(got) < 0.7*float64(used) || float64(got) > 1.3*float64(used)+10 {
		t.Errorf("accounted %d ticks for %d used", got, used)
	}
}

func mapValues(m map[int]*machProc) []*machProc {
	out := make([]*machProc, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// startOrphan runs script in a shell whose parent exits at once, so it is
// no descendant of the test process (it is reparented to init or the
// nearest subreaper); it is killed by its pid at the end of the test.
func startOrphan(t *testing.T, script string) int {
	t.Helper()
	out, err := exec.Command("sh", "-c", "sh -c '"+script+"' >/dev/null 2>&1 </dev/null & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan's pid %q: %v", out, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}
