package collect

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/results"
)

// machine is the state of the whole-machine accounting: every pid of
// /proc is read at every pass; CPU ticks are added up per budget role, and
// the per-pass deltas of the processes no one named are kept until Stop
// decides which ones crossed the threshold.
type machine struct {
	threshold float64
	rel       *relation // what ties processes to the run (relation.go)
	ncpu      int

	passT     []float64 // t_s of each pass; pass 0 is the baseline
	upTicks   uint64    // uptime at the previous pass, clock ticks
	procs     map[int]*machProc
	gone      []*machProc // exited processes that used CPU
	roleTicks map[string]uint64
	// roleKids is the part of roleTicks that came from children no pass
	// saw (countReaped): what BudgetFromParts takes an excess from first.
	roleKids map[string]uint64
	reaped   map[int]uint64 // scratch: counted ticks of children gone this pass, by parent
	goneUp   map[int]int    // scratch: the parent of each process gone this pass
	cpuFirst cpuTimes
	cpuLast  cpuTimes
	threads  map[int]*threadAcc // hottest-thread tracking of services and the loader

	// The containers and PID namespaces of the processes providers
	// reported, with their roles (noteRunGroups); selfNS and selfCont
	// are benchflow's own, never a group of the run.
	runCont, runNS   map[string]string
	selfNS, selfCont string
	// runParents are the parents of the service processes providers
	// reported: a containerd-shim among them serves the run.
	runParents map[int]bool

	quiet    *results.QuietCheck
	budget   *results.CPUBudget
	procsCPU []ProcCPU
	finished bool
}

// machProc is one process seen by the machine accounting.
type machProc struct {
	pid       int
	starttime uint64
	comm      string
	ppid      int
	kthread   bool
	utime     uint64
	stime     uint64
	ctime     uint64 // cutime+cstime at the last pass
	debt      uint64 // reaped ticks already counted, not yet in ctime
	reaped    uint64 // ticks of children it reaped that no pass counted
	rss       int64
	threads   int64
	born      int    // first pass with a delta (the sighting pass when born after the previous one)
	last      int    // last pass seen
	total     uint64 // ticks counted while no provider reported it and no name matched it
	kids      uint64 // ticks of children it reaped that no pass counted, while untargeted
	container string
	pidNS     string // its PID namespace ("pid:[4026532184]"), read with container
	cgDone    bool
	// argv is its command line, read once (again after an exec changed
	// its comm, argvComm): relations are read from it, and a process of
	// another is listed by it.
	argv     []string
	argvComm string
	argvRead bool
	// runRole and runName: the role and name a provider reported it with
	// at some pass (service, infra or loader). A process keeps its
	// identity for its whole life, so its passes before the provider
	// listed it and after it stopped listing it count in that role too.
	runRole, runName string
	samples          []machSample
}

// machSample is the state of a machProc at one pass; passes without a
// sample repeat the previous one's rss, threads and targeted with 0 CPU.
type machSample struct {
	pass     int32
	du, ds   uint32
	threads  int32
	targeted bool
	rss      int64
}

// threadAcc follows the threads of one process: ticks at first and last
// sighting per thread id.
type threadAcc struct {
	starttime uint64
	first     map[int]uint64
	last      map[int]uint64
	tasks     []string
}

func newMachine(cfg Config) (*machine, error) {
	th := cfg.Threshold
	if th == 0 {
		th = DefaultThreshold
	}
	if th < 0 || math.IsNaN(th) {
		return nil, fmt.Errorf("threshold %v is negative", cfg.Threshold)
	}
	if cfg.BusyThreshold < 0 {
		return nil, fmt.Errorf("busy threshold %v is negative", cfg.BusyThreshold)
	}
	var r reader
	b, err := r.read(filepath.Join(procfs.Root, "stat"))
	if err != nil {
		return nil, err
	}
	n := countCPUs(b)
	if n == 0 {
		return nil, errors.New("no cpuN line in /proc/stat")
	}
	return &machine{
		threshold: th, rel: newRelation(cfg), ncpu: n, runParents: map[int]bool{},
		procs: map[int]*machProc{}, roleTicks: map[string]uint64{}, roleKids: map[string]uint64{}, threads: map[int]*threadAcc{}, reaped: map[int]uint64{}, goneUp: map[int]int{},
	}, nil
}

// uptimeTicks reads /proc/uptime in clock ticks.
func (s *Sampler) uptimeTicks() uint64 {
	b, err := s.rd.read(filepath.Join(procfs.Root, "uptime"))
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil {
		return 0
	}
	return uint64(v * clockTicks)
}

// classify gives its role to a process no provider reported and that is
// in no container or PID namespace of the run (relation.go): benchflow
// itself and its descendants are the loader's, a descendant of a service
// or an agent is theirs, kernel threads are the kernel's, a helper that
// serves one of the run's containers or an engine or agent of the
// trial's providers is infrastructure; anything else is another's.
func (s *Sampler) classify(mp *machProc) string {
	switch {
	case mp.pid == s.self:
		return s.selfRole()
	case mp.kthread:
		return RoleKernel
	}
	if r := s.lineage(mp); r != "" {
		return r
	}
	if s.infraOf(mp) {
		return RoleInfra
	}
	return RoleOther
}

// selfRole is the role of the sampling process and of its descendants no
// provider reported: the loader's (benchflow), or, in the ssh provider's
// remote helper (Config.Helper), the infrastructure's.
func (s *Sampler) selfRole() string {
	if s.cfg.Helper {
		return RoleInfra
	}
	return RoleLoader
}

// lineage is the role of the nearest ancestor that is benchflow (loader)
// or a process a provider reported as a service or the loader (an agent),
// or "". Infrastructure passes nothing on: dockerd is the parent of every
// run's docker-proxy.
func (s *Sampler) lineage(mp *machProc) string {
	m := s.m
	child, pid := mp, mp.ppid
	for range 64 {
		if pid <= 1 {
			return ""
		}
		if pid == s.self {
			return s.selfRole()
		}
		a := m.procs[pid]
		if a == nil || a.starttime > child.starttime {
			return "" // gone, or the pid was reused
		}
		if a.runRole == RoleService || a.runRole == RoleLoader {
			return a.runRole
		}
		child, pid = a, a.ppid
	}
	return ""
}

// infraOf reports a process that serves the run by relation: a helper of
// one of its containers, a container engine in a trial with containers,
// an infrastructure name of the trial's provider types.
func (s *Sampler) infraOf(mp *machProc) bool {
	m := s.m
	r := m.rel
	switch {
	case mp.comm == commDockerProxy:
		return r.proxyOf(s.argv(mp))
	case strings.HasPrefix(mp.comm, commShim):
		return m.runParents[mp.pid] || shimOf(s.argv(mp), s.runIDs())
	case mp.comm == commFuseOverlay:
		return r.fuseOf(s.argv(mp))
	case r.infra.match(mp.comm):
		return true
	case r.engines.match(mp.comm):
		return len(r.ids) > 0 || len(m.runCont) > 0
	}
	return false
}

// runIDs are the 12-digit prefixes of the run's container ids: those the
// providers reported, and those of the containers their processes run in.
func (s *Sampler) runIDs() map[string]bool {
	m := s.m
	if len(m.runCont) == 0 {
		return m.rel.ids
	}
	ids := make(map[string]bool, len(m.rel.ids)+len(m.runCont))
	for id := range m.rel.ids {
		ids[id] = true
	}
	for c := range m.runCont {
		if _, id, ok := strings.Cut(c, ":"); ok && len(id) == 12 {
			ids[id] = true
		}
	}
	return ids
}

// argv reads a process's command line once (again when an exec changed
// its comm); nil when it is gone or a kernel thread.
func (s *Sampler) argv(mp *machProc) []string {
	if !mp.argvRead || mp.argvComm != mp.comm {
		mp.argvRead, mp.argvComm = true, mp.comm
		mp.argv, _ = procfs.Cmdline(mp.pid)
	}
	return mp.argv
}

// budgetRole maps a row role to the budget part it counts in: a process
// matched by name counts as the service unless it is a kernel thread, or
// infrastructure of the run by relation — or a helper of a container that
// is not the run's (another's docker-proxy is other even when named).
func (s *Sampler) budgetRole(mp *machProc, tg target) string {
	switch tg.role {
	case RoleService, RoleInfra, RoleLoader:
		return tg.role
	}
	switch {
	case mp.kthread:
		return RoleKernel
	case s.infraOf(mp):
		return RoleInfra
	case relationOnly(mp.comm):
		return RoleOther
	case s.outsideNow[mp.pid] && s.runHasService():
		return RoleOther // another's process of the same name (outside.go)
	}
	return RoleService
}

// relationOnly reports the helpers of one container, which are the run's
// only by relation, whatever a collect step names.
func relationOnly(comm string) bool {
	return comm == commDockerProxy || comm == commFuseOverlay || strings.HasPrefix(comm, commShim)
}

// eachStat calls fn with the parsed /proc/PID/stat of every process of
// s.ents that can still be read.
func (s *Sampler) eachStat(fn func(ent string, pid int, st procStat)) {
	for _, ent := range s.ents {
		if ent == "" || ent[0] < '0' || ent[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(ent)
		if err != nil {
			continue
		}
		b, err := s.rd.read(filepath.Join(procfs.Root, ent, "stat"))
		if err != nil {
			continue
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		fn(ent, pid, st)
	}
}

// sampleMachine reads every process of s.ents.
func (s *Sampler) sampleMachine(tsec float64, first bool) {
	m := s.m
	pass := len(m.passT)
	m.passT = append(m.passT, tsec)
	up := s.uptimeTicks()
	bornAfter := m.upTicks // a process started after the previous pass lived its whole life in this interval
	m.upTicks = up
	var waits []waited
	s.noteRunGroups()
	s.eachStat(func(ent string, pid int, st procStat) {
		mp := m.procs[pid]
		if mp != nil && mp.starttime != st.starttime {
			m.vanished(mp)
			mp = nil
		}
		var du, ds, dc uint64
		if mp == nil {
			mp = &machProc{pid: pid, starttime: st.starttime, comm: st.comm,
				kthread: isKernelThread(pid, st), born: pass + 1}
			m.procs[pid] = mp
			if !first && bornAfter > 0 && st.starttime >= bornAfter {
				du, ds, dc = st.utime, st.stime, st.ctime
				mp.born = pass
				// Born in this interval: it ran within it, on every
				// CPU at most.
				if c := (up - min(up, bornAfter)) * uint64(m.ncpu); up > bornAfter && du+ds > c {
					du, ds = min(du, c), min(ds, c-min(du, c))
				}
			}
		} else {
			du, ds, dc = delta(st.utime, mp.utime), delta(st.stime, mp.stime), delta(st.ctime, mp.ctime)
		}
		mp.utime, mp.stime, mp.ctime, mp.ppid, mp.last, mp.comm = st.utime, st.stime, st.ctime, st.ppid, pass, st.comm
		if first {
			mp.rss, mp.threads = st.rssPages*pageSize, st.threads
			return
		}
		tg, targeted := s.tgt[pid]
		if targeted && runRole(tg.role) {
			mp.runRole, mp.runName = tg.role, tg.name
			if mp.runName == "" {
				mp.runName = st.comm
			}
		}
		if targeted {
			// Counted now; untargeted ticks are counted in finishMachine,
			// once the process's role is known for its whole life.
			if tg.role == RoleService {
				m.runParents[st.ppid] = true
			}
			role := s.budgetRole(mp, tg)
			m.roleTicks[role] += du + ds
			if dc > 0 {
				waits = append(waits, waited{mp, role, dc})
			}
		} else if dc > 0 {
			waits = append(waits, waited{mp, "", dc})
		}
		rss := st.rssPages * pageSize
		prevTargeted := len(mp.samples) > 0 && mp.samples[len(mp.samples)-1].targeted
		if du+ds > 0 || rss != mp.rss || st.threads != mp.threads || len(mp.samples) == 0 || targeted != prevTargeted {
			mp.samples = append(mp.samples, machSample{pass: int32(pass), du: uint32(du), ds: uint32(ds),
				threads: int32(st.threads), targeted: targeted, rss: rss})
		}
		mp.rss, mp.threads = rss, st.threads
		if !targeted {
			mp.total += du + ds
			if du+ds+dc > 0 && !mp.cgDone {
				mp.cgDone = true
				if b, err := s.rd.read(filepath.Join(procfs.Root, ent, "cgroup")); err == nil {
					mp.container = containerOf(b)
				}
				mp.pidNS = pidNamespace(pid)
				s.argv(mp) // while it lives: it names it if it is another's
			}
		}
	})
	for pid, mp := range m.procs {
		if mp.last != pass {
			delete(m.procs, pid)
			m.vanished(mp)
		}
	}
	// The children that ended in this pass's interval without a pass
	// seeing them ran within it: together at most every CPU for its
	// length.
	var capTicks uint64
	if bornAfter > 0 && up > bornAfter {
		capTicks = (up - bornAfter) * uint64(m.ncpu)
	}
	m.countReaped(waits, capTicks)
}

// waited is a process whose children's CPU (cutime+cstime) grew by dc
// ticks in a pass, and the budget role it counts in ("" when untargeted:
// the ticks go to its kids, counted in finishMachine).
type waited struct {
	mp   *machProc
	role string
	dc   uint64
}

// vanished notes an exited process: kept if it used CPU while
// untargeted, and its lifetime CPU (its own and its children's, as last
// read) is what its parent's cutime will grow by for the part already
// counted.
func (m *machine) vanished(mp *machProc) {
	if mp.total+mp.kids > 0 {
		m.gone = append(m.gone, mp)
	}
	m.reaped[mp.ppid] += mp.utime + mp.stime + mp.ctime
	m.goneUp[mp.pid] = mp.ppid
}

// countReaped adds to the budget the CPU of children that no pass saw
// (or saw only part of): a parent's cutime+cstime growth minus what its
// children that vanished had when last read. A growth smaller than that
// (the parent's stat was read before it reaped them) becomes a debt paid
// from its next growth, so nothing is counted twice. What is credited in
// one pass is clamped to capTicks (all CPUs over the pass's interval; 0
// means no clamp): a child's CPU from before the window can never make a
// role use more than the machine had.
func (m *machine) countReaped(waits []waited, capTicks uint64) {
	left, clamp := capTicks, capTicks > 0
	// A parent gone this pass too took its children's counted ticks into
	// its own cutime, which its own parent's grows by: they are owed
	// there (a shell that ran a compiler, both ended).
	for pid := range m.reaped {
		if _, gone := m.goneUp[pid]; !gone {
			continue
		}
		t := m.reaped[pid]
		delete(m.reaped, pid)
		up := pid
		for range 64 {
			next, gone := m.goneUp[up]
			if !gone || next == up {
				break
			}
			up = next
		}
		m.reaped[up] += t
	}
	clear(m.goneUp)
	for _, w := range waits {
		owed := m.reaped[w.mp.pid] + w.mp.debt
		delete(m.reaped, w.mp.pid)
		if w.dc >= owed {
			credit := w.dc - owed
			if clamp {
				credit = min(credit, left)
				left -= credit
			}
			if w.role == "" {
				w.mp.kids += credit
			} else {
				m.roleTicks[w.role] += credit
				m.roleKids[w.role] += credit
			}
			w.mp.reaped += credit
			w.mp.debt = 0
		} else {
			w.mp.debt = owed - w.dc
		}
	}
	for ppid, t := range m.reaped {
		if mp := m.procs[ppid]; mp != nil {
			mp.debt += t
		}
	}
	clear(m.reaped)
}

// cpuAt records /proc/stat at a pass.
func (m *machine) cpuAt(c cpuTimes, first bool) {
	if first {
		m.cpuFirst = c
	}
	m.cpuLast = c
}

// sampleThreads records the CPU ticks of each thread of a service or
// loader process, for the hottest thread of the verdict.
func (s *Sampler) sampleThreads(pid int, st procStat) {
	acc := s.m.threads[pid]
	if acc == nil || acc.starttime != st.starttime {
		acc = &threadAcc{starttime: st.starttime, first: map[int]uint64{}, last: map[int]uint64{}}
		s.m.threads[pid] = acc
	}
	if st.threads <= 1 {
		t := st.utime + st.stime
		if _, ok := acc.first[pid]; !ok {
			acc.first[pid] = t
		}
		acc.last[pid] = t
		return
	}
	dir := pidPath(pid, "task")
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	acc.tasks, _ = f.Readdirnames(-1)
	f.Close()
	for _, e := range acc.tasks {
		tid, err := strconv.Atoi(e)
		if err != nil {
			continue
		}
		b, err := s.rd.read(dir + "/" + e + "/stat")
		if err != nil {
			continue
		}
		ts, err := parseStat(b)
		if err != nil {
			continue
		}
		t := ts.utime + ts.stime
		if _, ok := acc.first[tid]; !ok {
			acc.first[tid] = t
		}
		acc.last[tid] = t
	}
}

// window is the seconds from the baseline pass to the last one.
func (m *machine) window() float64 {
	if len(m.passT) < 2 {
		return 0
	}
	return m.passT[len(m.passT)-1] - m.passT[0]
}

// finishMachine runs once after the last pass: it adds the rows of the
// processes above the threshold, computes the budget and the per-process
// averages. Called with s.mu held.
func (s *Sampler) finishMachine() {
	m := s.m
	if m.finished {
		return
	}
	m.finished = true
	w := m.window()
	if w <= 0 {
		return
	}
	minTicks := m.threshold / 100 * w * clockTicks
	all := append([]*machProc(nil), m.gone...)
	for _, mp := range m.procs {
		all = append(all, mp)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].pid < all[j].pid })
	for _, mp := range all {
		// Untargeted CPU counts in the role of the process's whole life.
		role, _ := s.finalRole(mp)
		m.roleTicks[role] += mp.total + mp.kids
		m.roleKids[role] += mp.kids
		if mp.total == 0 || float64(mp.total) < minTicks && !s.ofRun(mp) {
			continue
		}
		s.ps = append(s.ps, s.machineRows(mp)...)
	}
	sort.SliceStable(s.ps, func(i, j int) bool { return s.ps[i].T < s.ps[j].T })

	// The budget: /proc/stat over the window, processes per role.
	d := cpuTimes{
		user: delta(m.cpuLast.user, m.cpuFirst.user), nice: delta(m.cpuLast.nice, m.cpuFirst.nice),
		system: delta(m.cpuLast.system, m.cpuFirst.system), idle: delta(m.cpuLast.idle, m.cpuFirst.idle),
		iowait: delta(m.cpuLast.iowait, m.cpuFirst.iowait), irq: delta(m.cpuLast.irq, m.cpuFirst.irq),
		softirq: delta(m.cpuLast.softirq, m.cpuFirst.softirq), steal: delta(m.cpuLast.steal, m.cpuFirst.steal),
	}
	tot := float64(d.total())
	if tot > 0 {
		p := func(v uint64) float64 { return float64(v) / tot * 100 }
		split := results.SystemSample{UserPct: p(d.user), NicePct: p(d.nice), SystemPct: p(d.system), IdlePct: p(d.idle),
			IOWaitPct: p(d.iowait), IRQPct: p(d.irq), SoftIRQPct: p(d.softirq), StealPct: p(d.steal)}
		roles, kids := map[string]float64{}, map[string]float64{}
		for r, t := range m.roleTicks {
			roles[r] = float64(t) / clockTicks / w * 100
		}
		for r, t := range m.roleKids {
			kids[r] = float64(t) / clockTicks / w * 100
		}
		b := BudgetFromParts(m.ncpu, split, roles, kids)
		m.budget = &b
	}
	m.procsCPU = s.procAverages(w)
	s.addChildren(all, w, minTicks)
}

// addChildren gives each process that reaped children no pass saw (they
// lived less than an interval, or their last interval) their CPU as
// ChildrenPct, so the processes listed for a role add up to the role's
// budget; a process whose own CPU stayed below the threshold is listed
// when its children's take it above.
func (s *Sampler) addChildren(all []*machProc, w, minTicks float64) {
	m := s.m
	for _, mp := range all {
		if mp.kids == 0 || float64(mp.total+mp.kids) < minTicks && !s.ofRun(mp) {
			continue
		}
		role, name := s.finalRole(mp)
		kids := float64(mp.kids) / clockTicks / w * 100
		found := false
		for i := range m.procsCPU {
			if p := &m.procsCPU[i]; p.PID == mp.pid && p.Process == name {
				p.ChildrenPct += kids
				found = true
				break
			}
		}
		if !found {
			m.procsCPU = append(m.procsCPU, ProcCPU{Process: name, PID: mp.pid, Role: role, Container: mp.container,
				CPUPct: float64(mp.total) / clockTicks / w * 100, Threads: mp.threads, ChildrenPct: kids})
		}
	}
	sort.SliceStable(m.procsCPU, func(i, j int) bool {
		return m.procsCPU[i].CPUPct+m.procsCPU[i].ChildrenPct > m.procsCPU[j].CPUPct+m.procsCPU[j].ChildrenPct
	})
}

// runRole reports a role a provider gives the run's own processes.
func runRole(role string) bool {
	return role == RoleService || role == RoleInfra || role == RoleLoader
}

// noteRunGroups records the containers and PID namespaces of the
// processes the providers reported this pass (s.tgt), with their roles:
// a process of the same container or namespace that the provider missed
// (forked after it listed them, or listed by a slow engine a pass late)
// is the run's too, never another process. The host's own namespace is
// not a group, nor the container benchflow itself runs in (a CI job's:
// its neighbours there are not the run's, and it deploys no container).
func (s *Sampler) noteRunGroups() {
	m := s.m
	if m.runCont == nil {
		m.runCont, m.runNS = map[string]string{}, map[string]string{}
		m.selfNS = pidNamespace(s.self)
		if b, err := s.rd.read(pidPath(s.self, "cgroup")); err == nil {
			m.selfCont = containerOf(b)
		}
	}
	for pid, tg := range s.tgt {
		if !runRole(tg.role) {
			continue
		}
		if ps := s.procs[pid]; ps != nil && ps.container != "" && ps.container != m.selfCont {
			if _, ok := m.runCont[ps.container]; !ok {
				m.runCont[ps.container] = tg.role
			}
		}
		if ns := pidNamespace(pid); ns != "" && ns != m.selfNS {
			if _, ok := m.runNS[ns]; !ok {
				m.runNS[ns] = tg.role
			}
		}
	}
}

// finalRole is the budget role and row name of a process's untargeted
// CPU: the role a provider reported it with at any pass, else the role of
// the run's container or PID namespace it belongs to, else what classify
// says (loader for benchflow itself, kernel, infra, other).
func (s *Sampler) finalRole(mp *machProc) (role, name string) {
	role, name, _ = s.roleOf(mp)
	return role, name
}

// ofRun reports a process of the run (reported by a provider at some
// pass, or in a container or PID namespace of one that was): its rows are
// kept whatever the threshold, like those of the passes it was reported.
func (s *Sampler) ofRun(mp *machProc) bool {
	_, _, run := s.roleOf(mp)
	return run
}

func (s *Sampler) roleOf(mp *machProc) (role, name string, run bool) {
	m := s.m
	switch {
	case mp.pid == s.self:
		if s.cfg.Helper {
			return RoleInfra, HelperName, false
		}
		return RoleLoader, LoaderName, false
	case mp.runRole != "":
		return mp.runRole, mp.runName, true
	case mp.container != "" && m.runCont[mp.container] != "":
		return m.runCont[mp.container], mp.comm, true
	case mp.pidNS != "" && mp.pidNS != m.selfNS && m.runNS[mp.pidNS] != "":
		return m.runNS[mp.pidNS], mp.comm, true
	}
	return s.classify(mp), mp.comm, false
}

// pidNamespace reads /proc/PID/ns/pid ("pid:[4026531836]"), or "".
func pidNamespace(pid int) string {
	ns, err := os.Readlink(filepath.Join(procfs.Root, strconv.Itoa(pid), "ns", "pid"))
	if err != nil {
		return ""
	}
	return ns
}

// machineRows turns a kept process's samples into rows.
func (s *Sampler) machineRows(mp *machProc) []results.ProcessSample {
	m := s.m
	role, name := s.finalRole(mp)
	var out []results.ProcessSample
	k := -1
	for p := max(mp.born, 1); p <= mp.last && p < len(m.passT); p++ {
		for k+1 < len(mp.samples) && int(mp.samples[k+1].pass) <= p {
			k++
		}
		if k < 0 {
			continue
		}
		sm := mp.samples[k]
		if sm.targeted {
			continue
		}
		var du, ds uint32
		if int(sm.pass) == p {
			du, ds = sm.du, sm.ds
		}
		dt := m.passT[p] - m.passT[p-1]
		if dt <= 0 {
			continue
		}
		user, sys := pct(uint64(du), dt), pct(uint64(ds), dt)
		out = append(out, results.ProcessSample{
			Step: s.cfg.Step, T: m.passT[p], Process: name, PID: mp.pid, Role: role,
			CPUPct: user + sys, UserPct: user, SystemPct: sys, RSSBytes: sm.rss, Threads: int64(sm.threads),
			Container: mp.container,
		})
	}
	return out
}

// ProcCPU is one process over a load with the whole-machine accounting:
// its mean CPU over the load window and, for services and the loader,
// its hottest thread.
type ProcCPU struct {
	Process      string  `json:"process"`
	PID          int     `json:"pid"`
	Role         string  `json:"role"`
	Container    string  `json:"container,omitempty"`
	CPUPct       float64 `json:"cpu_pct"`        // mean over the load, 100 = one core
	Threads      int64   `json:"threads"`        // highest thread count seen
	HotThreadPct float64 `json:"hot_thread_pct"` // mean CPU of its busiest thread (0 when not followed)
	// ChildrenPct is the CPU of its children that no sample saw (they
	// ended within an interval; their CPU reached it when it reaped them),
	// counted in its role's budget with it; 0 for most processes.
	ChildrenPct float64 `json:"children_pct,omitempty"`
}

// Label names the process in a listing: by its program name, whoever's
// it is (procLabel).
func (p ProcCPU) Label() string {
	return procLabel(p.Process, p.PID, "")
}

// procAverages averages the rows per pid over the window (a process that
// lived part of the load is averaged over the whole load: its share of
// the load's CPU).
func (s *Sampler) procAverages(w float64) []ProcCPU {
	m := s.m
	dts := map[float64]float64{}
	for i := 1; i < len(m.passT); i++ {
		dts[m.passT[i]] = m.passT[i] - m.passT[i-1]
	}
	type key struct {
		pid  int
		name string
	}
	by := map[key]*ProcCPU{}
	var order []key
	for _, r := range s.ps {
		k := key{r.PID, r.Process}
		pc := by[k]
		if pc == nil {
			pc = &ProcCPU{Process: r.Process, PID: r.PID, Role: r.Role, Container: r.Container}
			if r.OutsideRun && s.runHasService() {
				pc.Role = RoleOther // counted as another's in the budget: its evidence
			}
			by[k] = pc
			order = append(order, k)
		}
		dt, ok := dts[r.T]
		if !ok {
			dt = s.cfg.Interval.Seconds()
		}
		pc.CPUPct += r.CPUPct * dt / w
		pc.Threads = max(pc.Threads, r.Threads)
	}
	out := make([]ProcCPU, 0, len(order))
	for _, k := range order {
		pc := by[k]
		if acc := m.threads[k.pid]; acc != nil {
			for tid, last := range acc.last {
				pc.HotThreadPct = max(pc.HotThreadPct, float64(delta(last, acc.first[tid]))/clockTicks/w*100)
			}
		}
		out = append(out, *pc)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CPUPct > out[j].CPUPct })
	return out
}

// Explanation is what the whole-machine accounting found during a load.
type Explanation struct {
	Budget *results.CPUBudget  // nil when the load was shorter than one interval
	Quiet  *results.QuietCheck // nil without a quiet check
	Procs  []ProcCPU           // every process with rows, busiest first
}

// Explain returns the whole-machine accounting of the load, after Stop;
// nil when Config.Machine was off.
func (s *Sampler) Explain() *Explanation {
	if s.m == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Explanation{Budget: s.m.budget, Quiet: s.m.quiet, Procs: s.m.procsCPU}
}

// quietCheck measures, over Config.Quiet, the CPU of the processes
// outside the run: not reported by Config.RunProcs (nor their children,
// nor processes of their containers or PID namespaces), not benchflow or
// its children, not the run's infrastructure by relation (infraOf), not
// kernel threads. A process's CPU includes that of its
// children that ended within the window (the growth of its
// cutime+cstime, less what those children had used when the window
// began), so a build's compilers count with the make that ran them.
func (s *Sampler) quietCheck(ctx context.Context) error {
	win := s.cfg.Quiet
	type snap struct {
		start uint64
		ticks uint64
		ctime uint64
		comm  string
		ppid  int
		kth   bool
	}
	read := func() (map[int]snap, error) {
		s.listProc()
		if len(s.ents) == 0 {
			return nil, errors.New("reading /proc: no entries")
		}
		out := make(map[int]snap, len(s.ents))
		s.eachStat(func(_ string, pid int, st procStat) {
			out[pid] = snap{st.starttime, st.utime + st.stime, st.ctime, st.comm, st.ppid, isKernelThread(pid, st)}
		})
		return out, nil
	}
	t0 := time.Now()
	up0 := s.uptimeTicks()
	a, err := read()
	if err != nil {
		return err
	}
	if quietHook != nil {
		quietHook()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(win):
	}
	b, err := read()
	if err != nil {
		return err
	}
	dt := time.Since(t0).Seconds()
	run := map[int]bool{s.self: true}
	procs := s.cfg.RunProcs
	if procs == nil {
		procs = s.cfg.Procs
	}
	if procs != nil {
		pctx, cancel := context.WithTimeout(ctx, procsTimeout(s.cfg.Interval))
		for _, p := range procs(pctx) {
			if p.PID > 0 {
				run[p.PID] = true
			}
		}
		cancel()
	}
	groups := newRunGroups(s.self)
	for pid := range run {
		if pid != s.self {
			groups.add(pid)
		}
	}
	// Descendants of the run's processes belong to the run, and so do the
	// processes of its containers and PID namespaces.
	inRun := func(pid int) bool {
		if groups.has(pid) {
			return true
		}
		for range 64 {
			if run[pid] {
				return true
			}
			sn, ok := b[pid]
			if !ok || sn.ppid <= 1 {
				return false
			}
			pid = sn.ppid
		}
		return false
	}
	// What the processes that ended within the window had used at its
	// start, by their nearest ancestor still alive (a child's CPU reaches
	// its grandparent's cutime when both ended): that part of the
	// ancestor's cutime growth is from before the window.
	alive := func(pid int) bool {
		sa, inA := a[pid]
		sb, inB := b[pid]
		return inB && (!inA || sa.start == sb.start)
	}
	before := map[int]uint64{}
	for pid, sa := range a {
		if alive(pid) {
			continue
		}
		up := sa.ppid
		for range 64 {
			if alive(up) {
				break
			}
			sp, ok := a[up]
			if !ok {
				break
			}
			up = sp.ppid
		}
		before[up] += sa.ticks + sa.ctime
	}
	parts := map[string]*quietPart{} // by name: processes of one name add up
	total := 0.0
	for pid, sn := range b {
		if sn.kth {
			continue
		}
		var d, kids uint64
		if old, ok := a[pid]; ok && old.start == sn.start {
			d = delta(sn.ticks, old.ticks)
			kids = delta(delta(sn.ctime, old.ctime), before[pid])
		} else if up0 > 0 && sn.start >= up0 {
			d, kids = sn.ticks, sn.ctime // started during the window
		}
		if d+kids == 0 || inRun(pid) || s.infraOf(&machProc{pid: pid, comm: sn.comm, ppid: sn.ppid, starttime: sn.start}) {
			continue // the run's, or its infrastructure by relation
		}
		p := parts[sn.comm]
		if p == nil {
			p = &quietPart{name: procLabel(sn.comm, pid, "")}
			parts[sn.comm] = p
		}
		p.own += float64(d) / clockTicks / dt * 100
		p.kids += float64(kids) / clockTicks / dt * 100
		p.n++
		total += float64(d+kids) / clockTicks / dt * 100
	}
	q := &results.QuietCheck{WindowS: dt, OtherPct: total, Top: quietTop(parts, 3)}
	busy := s.cfg.BusyThreshold
	if busy == 0 {
		busy = DefaultBusyThreshold
	}
	q.Busy = total >= busy
	if b, err := s.rd.read(filepath.Join(procfs.Root, "loadavg")); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if la, err := strconv.ParseFloat(f[0], 64); err == nil && la >= 0 {
				q.LoadAvg = la
			}
		}
	}
	s.m.quiet = q
	return nil
}

// quietHook, when set (tests), runs after the quiet check's first read.
var quietHook func()

// quietPart is the CPU of the processes of one name outside the run in
// the quiet window: their own and their children's that ended within it.
type quietPart struct {
	name      string
	own, kids float64
	n         int
}

// quietTop lists the n busiest program names of the quiet check and what
// the others used, so the parts add up to the total: "make 40% (39% in
// children that ended within the window), 3 more 1.2%".
func quietTop(parts map[string]*quietPart, n int) string {
	ps := make([]namePart, 0, len(parts))
	for _, p := range parts {
		ps = append(ps, namePart{name: p.name, own: p.own, kids: p.kids, count: p.n})
	}
	return listParts(ps, n, "within the window")
}

// namePart is one process name's CPU in a listing (% of one core): its
// own, that of its children that ended (counted with the parent that
// reaped them), and how many processes of that name.
type namePart struct {
	name      string
	own, kids float64
	count     int
}

// listParts lists the n busiest names, each with its children's share
// when it is at least 1% of the name's ("make 40% (39% in children that
// ended <when>)"), and the others as "N more X%", so the parts add up.
func listParts(ps []namePart, n int, when string) string {
	sort.SliceStable(ps, func(i, j int) bool {
		if a, b := ps[i].own+ps[i].kids, ps[j].own+ps[j].kids; a != b {
			return a > b
		}
		return ps[i].name < ps[j].name
	})
	var out []string
	rest, restN := 0.0, 0
	for i, p := range ps {
		if i >= n {
			rest += p.own + p.kids
			restN += p.count
			continue
		}
		s := p.name + " " + fmtPct(p.own+p.kids)
		if p.kids > 0 && p.kids >= (p.own+p.kids)/100 {
			s += fmt.Sprintf(" (%s in children that ended %s)", fmtPct(p.kids), when)
		}
		out = append(out, s)
	}
	if restN > 0 {
		out = append(out, fmt.Sprintf("%d more %s", restN, fmtPct(rest)))
	}
	return strings.Join(out, ", ")
}

// runGroups are the containers and PID namespaces of the run's processes
// (other than the host's own namespace): a process in one of them is the
// run's whether or not its provider listed it.
type runGroups struct {
	selfNS   string
	selfCont string
	cont     map[string]bool
	ns       map[string]bool
	rd       reader
}

func newRunGroups(self int) *runGroups {
	g := &runGroups{selfNS: pidNamespace(self), cont: map[string]bool{}, ns: map[string]bool{}}
	g.selfCont = g.container(self)
	return g
}

func (g *runGroups) add(pid int) {
	if c := g.container(pid); c != "" && c != g.selfCont {
		g.cont[c] = true
	}
	if ns := pidNamespace(pid); ns != "" && ns != g.selfNS {
		g.ns[ns] = true
	}
}

func (g *runGroups) has(pid int) bool {
	if len(g.cont) == 0 && len(g.ns) == 0 {
		return false
	}
	if ns := pidNamespace(pid); ns != "" && ns != g.selfNS && g.ns[ns] {
		return true
	}
	c := g.container(pid)
	return c != "" && g.cont[c]
}

func (g *runGroups) container(pid int) string {
	b, err := g.rd.read(pidPath(pid, "cgroup"))
	if err != nil {
		return ""
	}
	return containerOf(b)
}

// fmtPct prints a CPU percentage as the summary line does: no decimal from
// 10% on.
func fmtPct(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}
