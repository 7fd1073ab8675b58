package collect

import (
	"context"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// namedNeighbour is a machine where a collect step names "nginx": the
// run's nginx master (reported by the provider) and its worker (matched
// by name, the run's by lineage), and a neighbour's nginx that the run did
// not start (a child of init), busier than both.
type namedNeighbour struct {
	self, master, worker, theirs *fakePID
}

func newNamedNeighbour() *namedNeighbour {
	return &namedNeighbour{
		self:   &fakePID{pid: 10, ppid: 1, comm: "benchflow", start: 100},
		master: &fakePID{pid: 50, ppid: 10, comm: "nginx", start: 150},
		worker: &fakePID{pid: 51, ppid: 50, comm: "nginx", start: 160},
		theirs: &fakePID{pid: 90, ppid: 1, comm: "nginx", start: 50},
	}
}

// run takes 4 passes of 1 s: the master and worker use 10 ticks a pass
// (10% of a core each), the neighbour's nginx 60.
func (x *namedNeighbour) run(f *fakeProc, s *Sampler) *Explanation {
	all := []*fakePID{x.self, x.master, x.worker, x.theirs}
	f.set(0, 0, all...)
	f.pass(s)
	for range 4 {
		x.master.utime += 10
		x.worker.utime += 10
		x.theirs.utime += 60
		f.set(1, 80, all...)
		f.pass(s)
	}
	return f.finish(s)
}

func outsideByPID(t *testing.T, ps []results.ProcessSample) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for _, p := range ps {
		if p.Role != RoleNamed {
			continue
		}
		if was, ok := out[p.PID]; ok && was != p.OutsideRun {
			t.Errorf("pid %d: outside_run changes between rows", p.PID)
		}
		out[p.PID] = p.OutsideRun
	}
	return out
}

// TestNamedOutsideRunMarked: `processes = ["nginx"]` samples every nginx
// on the machine; the one the run did not start is marked outside_run and,
// while the run has a service of its own, counts in the budget and the
// noisy evidence as another's, not as the server; the run's worker (a
// child of its reported master) is not marked. The progress line's CPU
// summary lists the neighbour apart, never added to the run's nginx.
func TestNamedOutsideRunMarked(t *testing.T) {
	f := newFakeProc(t)
	x := newNamedNeighbour()
	cfg := Config{Names: []string{"nginx"}, Procs: func(context.Context) []providers.Process {
		return []providers.Process{{PID: x.master.pid, Name: "nginx", Role: RoleService}}
	}}
	ms, err := compileNames(cfg.Names)
	if err != nil {
		t.Fatal(err)
	}
	s := f.samplerWith(x.self.pid, cfg)
	s.matchers = ms
	ex := x.run(f, s)

	out := outsideByPID(t, s.ps)
	if len(out) != 2 || out[x.worker.pid] || !out[x.theirs.pid] {
		t.Errorf("outside_run by pid of the named rows: %v; want the worker (%d) false, the neighbour (%d) true", out, x.worker.pid, x.theirs.pid)
	}
	b := *ex.Budget
	if b.ServicePct < 19 || b.ServicePct > 21 {
		t.Errorf("service %.1f%% of a core: want 20%% (the run's master and worker, not the neighbour's 60%%)", b.ServicePct)
	}
	if b.OtherPct < 59 || b.OtherPct > 61 {
		t.Errorf("other %.1f%% of a core: want the neighbour's 60%%", b.OtherPct)
	}
	var neighbour *ProcCPU
	for i := range ex.Procs {
		if ex.Procs[i].PID == x.theirs.pid {
			neighbour = &ex.Procs[i]
		}
	}
	if neighbour == nil || neighbour.Role != RoleOther {
		t.Errorf("the neighbour's nginx in the evidence: %+v, want role other", neighbour)
	}
	sum := FormatSummary(Summary(s.ps))
	if want := "nginx" + OutsideRunSuffix; !strings.Contains(sum, want) {
		t.Errorf("summary %q lacks %q", sum, want)
	}
	for _, c := range Summary(s.ps) {
		if c.Process == "nginx" && c.CPUPct > 25 {
			t.Errorf("the run's nginx at %.1f%%: the neighbour's was added to it", c.CPUPct)
		}
	}
}

// TestNamedOutsideRunNoService: a study that only watches a server it did
// not start (no provider reports a service) still marks it outside_run,
// but the name is all there is: it counts as the service.
func TestNamedOutsideRunNoService(t *testing.T) {
	f := newFakeProc(t)
	x := newNamedNeighbour()
	x.master.ppid = 1 // nobody's child: the run reports no service
	cfg := Config{Names: []string{"nginx"}}
	ms, err := compileNames(cfg.Names)
	if err != nil {
		t.Fatal(err)
	}
	s := f.samplerWith(x.self.pid, cfg)
	s.matchers = ms
	ex := x.run(f, s)
	out := outsideByPID(t, s.ps)
	if !out[x.master.pid] || !out[x.worker.pid] || !out[x.theirs.pid] {
		t.Errorf("outside_run by pid: %v; want every nginx marked", out)
	}
	if b := ex.Budget; b.ServicePct < 79 || b.ServicePct > 81 {
		t.Errorf("service %.1f%% of a core: want the 80%% of every nginx", b.ServicePct)
	}
}
