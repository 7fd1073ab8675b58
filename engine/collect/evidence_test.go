package collect

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers"
)

// fakeProc is a synthetic /proc: tests set processes and CPU times, then
// take passes of a Sampler built on it (no ticker: passes are explicit).
type fakeProc struct {
	t    *testing.T
	root string
	up   float64 // seconds since boot
	cpu  [8]uint64
}

type fakePID struct {
	pid, ppid          int
	comm               string
	utime, stime       uint64
	cutime, cstime     uint64
	start              uint64 // clock ticks after boot
	threads            int64
	cgroup, ns         string // "" for the host's
	cmdline            []string
	kthread            bool
	removed            bool
	rss                int64
	lastWritten        string
	lastCgroup, lastNS string
}

func newFakeProc(t *testing.T) *fakeProc {
	t.Helper()
	f := &fakeProc{t: t, root: t.TempDir(), up: 1000}
	if err := os.MkdirAll(filepath.Join(f.root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := procfs.Root
	procfs.Root = f.root
	t.Cleanup(func() { procfs.Root = old })
	f.set(0, 0)
	return f
}

func (f *fakeProc) write(name, body string) {
	f.t.Helper()
	p := filepath.Join(f.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// set writes the files of processes and of the machine; busy ticks are
// added to the machine's user time, the rest of 2 CPUs × dt is idle.
func (f *fakeProc) set(dt float64, busy uint64, ps ...*fakePID) {
	f.t.Helper()
	f.up += dt
	f.cpu[0] += busy
	f.cpu[3] += uint64(dt*2*clockTicks) - busy
	f.write("uptime", fmt.Sprintf("%.2f 0.00\n", f.up))
	line := func(name string) string {
		return fmt.Sprintf("%s %d %d %d %d %d %d %d %d 0 0\n", name, f.cpu[0], f.cpu[1], f.cpu[2], f.cpu[3], f.cpu[4], f.cpu[5], f.cpu[6], f.cpu[7])
	}
	f.write("stat", line("cpu ")+line("cpu0")+line("cpu1"))
	for _, p := range ps {
		dir := filepath.Join(f.root, strconv.Itoa(p.pid))
		if p.removed {
			os.RemoveAll(dir)
			continue
		}
		flags := 0
		if p.kthread {
			flags = pfKthread
		}
		th := p.threads
		if th == 0 {
			th = 1
		}
		f.write(filepath.Join(strconv.Itoa(p.pid), "stat"), fmt.Sprintf("%d (%s) S %d %d %d 0 -1 %d 0 0 0 0 %d %d %d %d 20 0 %d 0 %d 1000000 %d 0\n",
			p.pid, p.comm, p.ppid, p.pid, p.pid, flags, p.utime, p.stime, p.cutime, p.cstime, th, p.start, p.rss))
		cg := "/"
		if p.cgroup != "" {
			cg = p.cgroup
		}
		f.write(filepath.Join(strconv.Itoa(p.pid), "cgroup"), "12:pids:"+cg+"\n0::"+cg+"\n")
		f.write(filepath.Join(strconv.Itoa(p.pid), "comm"), p.comm+"\n")
		f.write(filepath.Join(strconv.Itoa(p.pid), "statm"), "100 10 5 1 0 50 0\n")
		f.write(filepath.Join(strconv.Itoa(p.pid), "cmdline"), strings.Join(p.cmdline, "\x00")+"\x00")
		f.write(filepath.Join(strconv.Itoa(p.pid), "status"), "voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t1\n")
		ns := "pid:[4026531836]" // the host's, like the test process's
		if p.ns != "" {
			ns = p.ns
		}
		link := filepath.Join(dir, "ns", "pid")
		os.MkdirAll(filepath.Dir(link), 0o755)
		os.Remove(link)
		if err := os.Symlink(ns, link); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sampler builds a machine-accounting Sampler on the fake /proc; self is
// the pid benchflow has in it.
func (f *fakeProc) sampler(self int, procs func(context.Context) []providers.Process) *Sampler {
	f.t.Helper()
	return f.samplerWith(self, Config{Procs: procs})
}

// samplerWith is sampler with more of the config (the run's relation).
func (f *fakeProc) samplerWith(self int, cfg Config) *Sampler {
	f.t.Helper()
	cfg.Step, cfg.Interval, cfg.Machine = "cpu", time.Second, true
	s := &Sampler{cfg: cfg, ctx: context.Background(), procs: map[int]*procState{}, names: map[int]*nameEntry{},
		net: map[string]ifCounters{}, net2: map[string]ifCounters{}, self: self, tgt: map[int]target{}}
	m, err := newMachine(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	s.m = m
	return s
}

// pass takes one pass at the fake time.
func (f *fakeProc) pass(s *Sampler) {
	f.t.Helper()
	now := time.Unix(0, 0).Add(time.Duration(f.up * float64(time.Second)))
	if s.start.IsZero() {
		s.start = now
	}
	if err := s.sample(context.Background(), now); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeProc) finish(s *Sampler) *Explanation {
	s.mu.Lock()
	s.finishMachine()
	s.mu.Unlock()
	return s.Explain()
}

var pctRe = regexp.MustCompile(`(\d+(?:\.\d+)?)%`)

// checkAddsUp: the percentages the evidence lists after its ":" (leaving
// out those in parentheses, which detail the one before them) add up to
// the total it states first, within the rounding of what it printed.
func checkAddsUp(t *testing.T, ev string) {
	t.Helper()
	head, list, ok := strings.Cut(ev, ": ")
	if !ok {
		t.Fatalf("evidence %q lists nothing", ev)
	}
	m := pctRe.FindStringSubmatch(head)
	if m == nil {
		t.Fatalf("evidence %q states no total", ev)
	}
	total, _ := strconv.ParseFloat(m[1], 64)
	list = regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(list, "")
	sum, n := 0.0, 0
	for _, m := range pctRe.FindAllStringSubmatch(list, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		sum += v
		n++
	}
	// Each printed part is rounded to 0.05 (below 10%) or 0.5.
	if math.Abs(sum-total) > 0.5*float64(n+1) {
		t.Errorf("evidence %q: its parts add up to %.1f%%, not the %.1f%% it states", ev, sum, total)
	}
}

// TestOtherEvidenceAddsUp: a process outside the run that spends little
// CPU itself but reaps short-lived children that burn most of a core (the
// sandbox's process API running builds) makes the load noisy; the
// evidence names it with its children's CPU, and what it lists adds up
// to the CPU it reports for other processes, the small ones included.
func TestOtherEvidenceAddsUp(t *testing.T) {
	f := newFakeProc(t)
	self := &fakePID{pid: 10, ppid: 1, comm: "benchflow", start: 100}
	api := &fakePID{pid: 20, ppid: 1, comm: "process_api", start: 100}
	small := &fakePID{pid: 30, ppid: 1, comm: "cron", start: 100}
	svc := &fakePID{pid: 40, ppid: 10, comm: "nginx", start: 100}
	all := []*fakePID{self, api, small, svc}
	s := f.sampler(10, func(context.Context) []providers.Process {
		return []providers.Process{{PID: 40, Name: "nginx", Role: RoleService}}
	})
	f.set(0, 0, all...)
	f.pass(s)
	for range 4 {
		self.utime += 30
		svc.utime += 40
		api.utime += 2   // 2% of a core itself
		api.cutime += 85 // children that lived less than a pass
		f.set(1, 30+40+2+85, all...)
		f.pass(s)
	}
	small.utime++ // …one tick in 4 s: 0.25%
	f.set(0.5, 1, all...)
	f.pass(s)
	ex := f.finish(s)
	b := *ex.Budget
	if b.OtherPct < 70 {
		t.Fatalf("other %.1f%%, want the process API's children in it: %+v", b.OtherPct, b)
	}
	var api2 *ProcCPU
	for i, p := range ex.Procs {
		if p.PID == 20 {
			api2 = &ex.Procs[i]
		}
	}
	if api2 == nil || api2.Role != RoleOther || api2.ChildrenPct < 60 {
		t.Fatalf("process_api: %+v, want role other with its children's CPU", api2)
	}
	v := Judge(Evidence{Budget: b, Procs: ex.Procs})
	t.Logf("budget other %.2f%%; verdict %s", b.OtherPct, v)
	if v.Kind != VerdictNoisy || !strings.Contains(v.Evidence, "process_api") || !strings.Contains(v.Evidence, "children that ended between samples") {
		t.Errorf("verdict %s: want noisy naming process_api and its children", v)
	}
	if !strings.Contains(v.Evidence, "below the listing threshold") {
		t.Errorf("verdict %s: the cron below the threshold is not accounted for", v)
	}
	checkAddsUp(t, v.Evidence)
}

// TestRunProcessesAreNeverOther: the run's processes count in their role
// for their whole life, whether or not the provider listed them at every
// pass: an agent listed only from the second pass (it was starting) and no
// longer at the last (it was being stopped); a container's worker that
// the provider's listing missed (forked after it). Neither makes the
// load noisy, and their rows carry their role.
func TestRunProcessesAreNeverOther(t *testing.T) {
	f := newFakeProc(t)
	const cid = "96b3e2583d6e37e1a394929d11951e261383b21e46ba979dcc08d7fa1bdb1c8c"
	self := &fakePID{pid: 10, ppid: 1, comm: "benchflow", start: 100}
	agent := &fakePID{pid: 11, ppid: 10, comm: "benchflow", start: 200}
	master := &fakePID{pid: 50, ppid: 45, comm: "nginx", start: 100, cgroup: "/docker/" + cid, ns: "pid:[4026532184]"}
	worker := &fakePID{pid: 51, ppid: 50, comm: "nginx", start: 100, cgroup: "/docker/" + cid, ns: "pid:[4026532184]"}
	all := []*fakePID{self, agent, master, worker}
	pass := 0
	s := f.sampler(10, func(context.Context) []providers.Process {
		ps := []providers.Process{{PID: 50, Name: "nginx", Role: RoleService}}
		if pass >= 2 && pass <= 3 {
			ps = append(ps, providers.Process{PID: 11, Name: "benchflow", Role: RoleLoader})
		}
		return ps
	})
	f.set(0, 0, all...)
	f.pass(s)
	for pass = 1; pass <= 4; pass++ {
		agent.utime += 30
		worker.utime += 40
		master.utime++
		f.set(1, 71, all...)
		f.pass(s)
	}
	ex := f.finish(s)
	b := *ex.Budget
	if b.OtherPct > 0.01 {
		t.Errorf("other %.1f%%: the run's own processes were counted as outside it: %+v", b.OtherPct, b)
	}
	if b.LoaderPct < 29 || b.ServicePct < 40 {
		t.Errorf("loader %.1f%%, service %.1f%%: want the agent's 30%% and nginx's 41%%", b.LoaderPct, b.ServicePct)
	}
	for _, p := range s.ps {
		switch p.PID {
		case 11:
			if p.Role != RoleLoader {
				t.Errorf("agent row at %.1f s has role %q, want loader", p.T, p.Role)
			}
		case 51:
			if p.Role != RoleService {
				t.Errorf("container worker row at %.1f s has role %q, want service", p.T, p.Role)
			}
		}
	}
	if v := Judge(Evidence{Budget: b, Procs: ex.Procs}); v.Kind == VerdictNoisy {
		t.Errorf("verdict %s", v)
	}
}

// TestQuietCheckIgnoresRunContainers: the quiet check before a load does
// not count the processes of the trial's container (found through its
// cgroup, or its PID namespace when the cgroup names no container) even
// when the provider listed only one of them and they do not descend from
// it; a process outside the run still counts, with the children it reaped
// in the window, and the check lists what adds up to its total.
func TestQuietCheckIgnoresRunContainers(t *testing.T) {
	for _, tc := range []struct{ name, cgroup, ns string }{
		{"cgroup", "/docker/96b3e2583d6e37e1a394929d11951e261383b21e46ba979dcc08d7fa1bdb1c8c", ""},
		{"pid namespace", "", "pid:[4026532184]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeProc(t)
			self := &fakePID{pid: os.Getpid(), ppid: 1, comm: "benchflow", start: 100}
			shim := &fakePID{pid: 45, ppid: 1, comm: "containerd-shim", start: 100}
			master := &fakePID{pid: 50, ppid: 45, comm: "nginx", start: 100, cgroup: tc.cgroup, ns: tc.ns}
			worker := &fakePID{pid: 51, ppid: 45, comm: "nginx", start: 100, cgroup: tc.cgroup, ns: tc.ns}
			mk := &fakePID{pid: 60, ppid: 1, comm: "make", start: 100}
			cc := &fakePID{pid: 61, ppid: 60, comm: "cc1", start: 100, utime: 5}
			all := []*fakePID{self, shim, master, worker, mk, cc}
			f.set(0, 0, all...)
			quietHook = func() {
				worker.utime += 30 // the container's nginx, busy finishing the warm-up
				mk.utime += 1
				mk.cutime += 5 + 20 // cc1 ran 20 ticks in the window, then ended
				cc.removed = true
				f.set(1, 51, all...)
			}
			defer func() { quietHook = nil }()
			s := f.sampler(os.Getpid(), nil)
			s.cfg.Quiet = 10 * time.Millisecond
			s.cfg.RunProcs = func(context.Context) []providers.Process {
				return []providers.Process{{PID: 50, Name: "nginx", Role: RoleService}}
			}
			if err := s.quietCheck(context.Background()); err != nil {
				t.Fatal(err)
			}
			q := s.m.quiet
			t.Logf("quiet: %.1f%% (%s), busy %v", q.OtherPct, q.Top, q.Busy)
			if strings.Contains(q.Top, "nginx") {
				t.Errorf("quiet check counted the trial's own nginx: %+v", q)
			}
			if !strings.HasPrefix(q.Top, "make ") || !strings.Contains(q.Top, "in children that ended within the window") {
				t.Errorf("quiet top %q, want make with its compiler's CPU", q.Top)
			}
			// 21 ticks of make and cc1 over the window (the wall time of
			// the test, at least 10 ms); its parts add up to it.
			checkAddsUp(t, fmt.Sprintf("other processes used %s: %s", fmtPct(q.OtherPct), q.Top))
		})
	}
}

// TestRealContainerProcessesAreTheRuns runs a real PID namespace (unshare,
// as a container runtime makes one) detached from the test: a CPU burner
// and a sleep in it. The provider lists only the sleep; the burner does not
// descend from it, yet it is the run's: the quiet check does not count
// it, and the load's accounting gives it the service role.
func TestRealContainerProcessesAreTheRuns(t *testing.T) {
	dir := t.TempDir()
	burner := filepath.Join(dir, "hevburner")
	if err := os.Symlink("/bin/sh", burner); err != nil {
		t.Fatal(err)
	}
	mark := fmt.Sprintf("3000.%d", os.Getpid())
	// The outer sh exits at once: unshare is reparented away from the test.
	script := fmt.Sprintf(`unshare --pid --fork sh -c '%s -c "while :; do :; done" & exec sleep %s' </dev/null >/dev/null 2>&1 &`, burner, mark)
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Skipf("no PID namespace here: %v %s", err, out)
	}
	var sleepPID, burnPID int
	for range 200 {
		if ps := pidsWithArg(mark); len(ps) > 0 {
			for _, p := range ps {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(b)) == "sleep" {
					sleepPID = p
				}
			}
		}
		if ps := pidsWithArg("while :; do :; done"); len(ps) > 0 {
			for _, p := range ps {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(b)) == "hevburner" {
					burnPID = p
				}
			}
		}
		if sleepPID > 0 && burnPID > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() {
		// The namespace's init (the sleep's parent) takes its processes with it.
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleepPID)); err == nil {
			if st, err := parseStat(b); err == nil && st.ppid > 1 {
				syscall.Kill(st.ppid, syscall.SIGKILL)
			}
		}
		for _, p := range []int{sleepPID, burnPID} {
			if p > 0 {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	})
	if sleepPID == 0 || burnPID == 0 {
		t.Skipf("namespace processes not found (sleep %d, burner %d): unshare refused?", sleepPID, burnPID)
	}
	if pidNamespace(burnPID) == pidNamespace(os.Getpid()) {
		t.Skip("unshare made no new PID namespace")
	}
	s, err := Start(context.Background(), Config{
		Step: "cpu", Interval: 200 * time.Millisecond, Machine: true, Quiet: 300 * time.Millisecond,
		Procs: func(context.Context) []providers.Process {
			return []providers.Process{{PID: sleepPID, Name: "sleep", Role: RoleService}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	ps, _, _ := s.Stop()
	ex := s.Explain()
	t.Logf("quiet %+v; budget %+v", ex.Quiet, ex.Budget)
	if strings.Contains(ex.Quiet.Top, "hevburner") {
		t.Errorf("the quiet check counted the burner of the run's namespace as outside the run: %+v", ex.Quiet)
	}
	rows := 0
	for _, p := range ps {
		if p.PID == burnPID {
			rows++
			if p.Role != RoleService {
				t.Errorf("burner row %+v: want role service", p)
			}
		}
	}
	for _, p := range ex.Procs {
		if p.PID == burnPID && p.Role != RoleService {
			t.Errorf("burner %+v: want role service", p)
		}
	}
	if rows == 0 {
		t.Errorf("no row of the burner (pid %d)", burnPID)
	}
	if ex.Budget.ServicePct < 5 {
		t.Errorf("service %.1f%%: the burner is not in it", ex.Budget.ServicePct)
	}
}

// TestEndedGrandchildrenCountedOnce: a shell and the compiler it ran both
// end between two looks (a pass, or the quiet check's two reads); their
// CPU reaches the make above them through its cutime, less what the looks
// before had already seen of them, the compiler's included.
func TestEndedGrandchildrenCountedOnce(t *testing.T) {
	t.Run("machine", func(t *testing.T) {
		f := newFakeProc(t)
		self := &fakePID{pid: 10, ppid: 1, comm: "benchflow", start: 100}
		mk := &fakePID{pid: 60, ppid: 1, comm: "make", start: 100}
		sh := &fakePID{pid: 61, ppid: 60, comm: "sh", start: 100}
		cc := &fakePID{pid: 62, ppid: 61, comm: "cc1", start: 100}
		all := []*fakePID{self, mk, sh, cc}
		s := f.sampler(10, nil)
		f.set(0, 0, all...)
		f.pass(s)
		sh.utime, cc.utime = 2, 50 // seen by the second pass
		f.set(1, 52, all...)
		f.pass(s)
		// Both end: sh used 1 more tick, cc1 20 more; make reaps sh,
		// whose cutime held cc1's whole life.
		sh.removed, cc.removed = true, true
		mk.cutime += (2 + 1) + (50 + 20)
		f.set(1, 21, all...)
		f.pass(s)
		ex := f.finish(s)
		if got, want := ex.Budget.OtherPct, 73.0/2; math.Abs(got-want) > 0.01 {
			t.Errorf("other %.2f%% of a core over 2 s, want %.2f%% (73 ticks: nothing counted twice)", got, want)
		}
	})
	t.Run("quiet check", func(t *testing.T) {
		f := newFakeProc(t)
		self := &fakePID{pid: os.Getpid(), ppid: 1, comm: "benchflow", start: 100}
		mk := &fakePID{pid: 60, ppid: 1, comm: "make", start: 100}
		sh := &fakePID{pid: 61, ppid: 60, comm: "sh", start: 100, utime: 2}
		cc := &fakePID{pid: 62, ppid: 61, comm: "cc1", start: 100, utime: 50}
		all := []*fakePID{self, mk, sh, cc}
		f.set(0, 0, all...)
		quietHook = func() {
			sh.removed, cc.removed = true, true
			mk.cutime += (2 + 1) + (50 + 20)
			f.set(1, 21, all...)
		}
		defer func() { quietHook = nil }()
		s := f.sampler(os.Getpid(), nil)
		s.cfg.Quiet = 10 * time.Millisecond
		if err := s.quietCheck(context.Background()); err != nil {
			t.Fatal(err)
		}
		q := s.m.quiet
		if ticks := q.OtherPct / 100 * q.WindowS * clockTicks; math.Abs(ticks-21) > 0.01 {
			t.Errorf("quiet check counted %.2f ticks (%s), want the 21 of the window", ticks, q.Top)
		}
	})
}
