package collect

import (
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/procfs"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// Config says what a Sampler samples.
type Config struct {
	Step     string        // collect step name, copied into samples
	Interval time.Duration // default 1s
	// Names are process names (comm, or base name of argv[0]) or
	// "/regex/" matched against the full cmdline (arguments joined by
	// spaces).
	Names []string
	// Procs returns the services' processes; it is called on each tick
	// (containers fork). It may be nil.
	Procs   func(ctx context.Context) []providers.Process
	Loader  bool // include the benchflow process itself (role "loader")
	System  bool // /proc/stat split
	Network bool // /proc/net/dev per interface
	// Machine turns on the whole-machine accounting: every process and
	// kernel thread is sampled; those that used at least Threshold
	// (percent of one core, averaged over the load; 0 means
	// DefaultThreshold) get rows with roles kernel, infra, loader or
	// other, and Explain returns the CPU budget of the load.
	Machine   bool
	Threshold float64
	// InfraNames are the infrastructure process names of the provider
	// types the trial's services ran on (providers.Type.Infra): counted
	// as infra in this trial only.
	InfraNames []string
	// Containers are the containers the trial's deployments started
	// (providers.ContainerReporter): the docker-proxy, containerd-shim
	// and fuse-overlayfs that serve them are the trial's infrastructure,
	// others' are other processes (relation.go).
	Containers []providers.Container
	// Quiet is the quiet check window before sampling starts (machine
	// accounting only; 0 means none): Start waits that long, measuring
	// the CPU of the processes outside the run (neither Procs' pids nor
	// benchflow and its children), and Explain reports it.
	Quiet time.Duration
	// RunProcs lists every process of the run's services for the quiet
	// check (all services, where Procs may list some); nil means Procs.
	RunProcs func(ctx context.Context) []providers.Process
	// Host names the machine sampled: every row's Host (results.ProcessSample).
	Host string
	// Helper says the sampling process is the ssh provider's remote
	// helper, not the load generator: itself (HelperName) and its
	// descendants that Procs does not report are infrastructure.
	Helper bool
	// BusyThreshold is the CPU (percent of one core) of processes outside
	// the run at or above which the quiet check flags a busy start; 0
	// means DefaultBusyThreshold.
	BusyThreshold float64
}

// Defaults of the whole-machine accounting.
const (
	DefaultThreshold     = 1.0  // % of one core, averaged over the load
	DefaultBusyThreshold = 10.0 // % of one core, in the quiet window
	DefaultQuiet         = time.Second
)

// DefaultInterval is the sampling interval when Config.Interval is 0.
const DefaultInterval = time.Second

// MinInterval is the shortest interval Start accepts
// (pipeline.MinCollectInterval: below it the 10 ms resolution of /proc CPU
// times makes CPU% meaningless).
const MinInterval = pipeline.MinCollectInterval

// Roles of process samples.
const (
	RoleService = "service"
	RoleInfra   = "infra"
	RoleLoader  = "loader"
	RoleNamed   = "named"
)

// LoaderName is the process name of benchflow's own samples, so the load
// generator never merges with a service that is also benchflow (benchflow
// serve) in summaries and reports.
const LoaderName = "benchflow-loader"

// HelperName is the process name of the ssh provider's remote helper in
// the rows of the host it samples (Config.Helper).
const HelperName = "benchflow-helper"

// Sampler samples until Stop.
type Sampler struct {
	cfg      Config
	ctx      context.Context // the caller's; ends sampling
	stop     chan struct{}
	start    time.Time
	matchers []matcher
	done     chan struct{}
	stopOnce sync.Once

	mu    sync.Mutex
	last  time.Time // time of the previous sample
	procs map[int]*procState
	names map[int]*nameEntry
	cpu   cpuTimes
	hasCP bool
	net   map[string]ifCounters
	net2  map[string]ifCounters // scratch for the current read
	rd    reader
	ps    []results.ProcessSample
	ss    []results.SystemSample
	ns    []results.NetSample
	self  int
	tgt   map[int]target
	ents  []string
	// ofRunNamed: the processes a name matched that are tied to the run
	// (pid → start time; outside.go); outsideNow: those of this pass that
	// are not.
	ofRunNamed map[int]uint64
	outsideNow map[int]bool
	// foreign are the pids Procs reported with another Host: counted,
	// their rows dropped at Stop.
	foreign map[int]bool

	m *machine // whole-machine accounting, nil unless Config.Machine

	hosted bool // Stop set the rows' Host
}

type matcher struct {
	name string         // a plain name, or "" for a pattern
	re   *regexp.Regexp // a /pattern/
}

type procState struct {
	starttime    uint64
	utime, stime uint64
	vol, nonvol  uint64
	at           time.Time
	seen         bool // seen in the current pass
	container    string
}

// nameEntry caches whether a pid matched Config.Names, keyed by its comm
// (an exec changes the comm and triggers a new decision).
type nameEntry struct {
	comm string
	name string // the row's process name, "" when not matched
	seen bool
}

type target struct {
	name, role string
}

// Start validates cfg, records the baselines (the first pass emits no
// rows) and samples every cfg.Interval until Stop or until ctx ends.
func Start(ctx context.Context, cfg Config) (*Sampler, error) {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < MinInterval {
		return nil, fmt.Errorf("starting collect %q: interval %s is below the minimum %s", cfg.Step, cfg.Interval, MinInterval)
	}
	ms, err := compileNames(cfg.Names)
	if err != nil {
		return nil, fmt.Errorf("starting collect %q: %w", cfg.Step, err)
	}
	if _, err := os.Stat(filepath.Join(procfs.Root, "self")); err != nil {
		return nil, fmt.Errorf("starting collect %q: %w", cfg.Step, err)
	}
	s := &Sampler{
		cfg:      cfg,
		ctx:      ctx,
		stop:     make(chan struct{}),
		matchers: ms,
		done:     make(chan struct{}),
		procs:    map[int]*procState{},
		names:    map[int]*nameEntry{},
		net:      map[string]ifCounters{},
		net2:     map[string]ifCounters{},
		self:     os.Getpid(),
		tgt:      map[int]target{},
	}
	if cfg.Machine {
		if s.m, err = newMachine(cfg); err != nil {
			return nil, fmt.Errorf("starting collect %q: %w", cfg.Step, err)
		}
		if cfg.Quiet > 0 {
			if err := s.quietCheck(ctx); err != nil {
				return nil, fmt.Errorf("starting collect %q: %w", cfg.Step, err)
			}
		}
	}
	s.start = time.Now()
	if err := s.sample(ctx, s.start); err != nil {
		return nil, fmt.Errorf("starting collect %q: %w", cfg.Step, err)
	}
	go s.loop()
	return s, nil
}

func compileNames(names []string) ([]matcher, error) {
	var ms []matcher
	for _, n := range names {
		switch {
		case strings.TrimSpace(n) == "":
			return nil, errors.New("empty process name")
		case len(n) >= 2 && strings.HasPrefix(n, "/") && strings.HasSuffix(n, "/"):
			re, err := regexp.Compile(n[1 : len(n)-1])
			if err != nil {
				return nil, fmt.Errorf("compiling process pattern %q: %w", n, err)
			}
			ms = append(ms, matcher{re: re})
		case strings.ContainsRune(n, '/'):
			return nil, fmt.Errorf("process name %q contains a slash (patterns are written /regex/)", n)
		default:
			ms = append(ms, matcher{name: n})
		}
	}
	return ms, nil
}

func (s *Sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.stop:
			return
		case now := <-t.C:
			_ = s.sample(s.ctx, now)
		}
	}
}

// Stop ends sampling (takes a last sample) and returns rows; T is seconds
// since Start. The last sample is skipped when less than half an interval
// passed since the previous one (its CPU% would be too coarse), unless no
// row was taken yet. Calling Stop again returns the same rows.
func (s *Sampler) Stop() ([]results.ProcessSample, []results.SystemSample, []results.NetSample) {
	s.stopOnce.Do(func() {
		close(s.stop)
		<-s.done
		now := time.Now()
		s.mu.Lock()
		since := now.Sub(s.last)
		empty := len(s.ps) == 0 && len(s.ss) == 0 && len(s.ns) == 0
		s.mu.Unlock()
		if since >= s.cfg.Interval/2 || (empty && since >= MinInterval) {
			// The load has ended, often because ctx did: the last
			// sample still asks the provider for its processes.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), procsTimeout(s.cfg.Interval))
			_ = s.sample(ctx, now)
			cancel()
		}
		if s.m != nil {
			s.mu.Lock()
			s.finishMachine()
			s.mu.Unlock()
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hosted && len(s.foreign) > 0 {
		ps := s.ps[:0]
		for _, p := range s.ps {
			if !s.foreign[p.PID] {
				ps = append(ps, p)
			}
		}
		s.ps = ps
	}
	if h := s.cfg.Host; h != "" && !s.hosted {
		for i := range s.ps {
			s.ps[i].Host = h
		}
		for i := range s.ss {
			s.ss[i].Host = h
		}
		for i := range s.ns {
			s.ns[i].Host = h
		}
	}
	s.hosted = true
	return s.ps, s.ss, s.ns
}

// sample takes one pass. It returns an error only when the system files
// cannot be read (which Start reports).
func (s *Sampler) sample(ctx context.Context, now time.Time) error {
	var procs []providers.Process
	if s.cfg.Procs != nil {
		pctx, cancel := context.WithTimeout(ctx, procsTimeout(s.cfg.Interval))
		procs = s.cfg.Procs(pctx)
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.last.IsZero()
	tsec := now.Sub(s.start).Seconds()
	s.last = now

	// Which processes: provider first, then the loader, then names.
	clear(s.tgt)
	for _, p := range procs {
		if p.PID <= 0 {
			continue
		}
		role := p.Role
		if role == "" {
			role = RoleService
		}
		s.tgt[p.PID] = target{name: p.Name, role: role}
		if p.Host != "" && p.Host != s.cfg.Host {
			if s.foreign == nil {
				s.foreign = map[int]bool{}
			}
			s.foreign[p.PID] = true
		}
	}
	if s.cfg.Loader {
		if _, ok := s.tgt[s.self]; !ok {
			s.tgt[s.self] = target{name: LoaderName, role: RoleLoader}
		}
	}
	if len(s.matchers) > 0 || s.m != nil {
		s.listProc()
	}
	if len(s.matchers) > 0 {
		s.scanNames()
	}

	for _, st := range s.procs {
		st.seen = false
	}
	clear(s.outsideNow)
	pids := make([]int, 0, len(s.tgt))
	for pid := range s.tgt {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		tg := s.tgt[pid]
		b, err := s.rd.read(pidPath(pid, "stat"))
		if err != nil {
			continue // gone
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		name := tg.name
		if name == "" {
			name = st.comm
		}
		var rss int64
		if b, err := s.rd.read(pidPath(pid, "statm")); err == nil {
			rss, _ = parseStatmRSS(b)
		}
		vol, nonvol := s.ctxSwitches(pid, st.threads)
		prev, ok := s.procs[pid]
		if ok && prev.starttime != st.starttime {
			ok = false
		}
		container := ""
		if ok {
			container = prev.container
		} else if b, err := s.rd.read(pidPath(pid, "cgroup")); err == nil {
			container = containerOf(b)
		}
		outside := tg.role == RoleNamed && s.outsideRun(pid, st, container)
		if ok && prev.starttime == st.starttime && !prev.at.IsZero() {
			dt := now.Sub(prev.at).Seconds()
			if dt > 0 {
				user := pct(delta(st.utime, prev.utime), dt)
				sys := pct(delta(st.stime, prev.stime), dt)
				s.ps = append(s.ps, results.ProcessSample{
					Step:                    s.cfg.Step,
					T:                       tsec,
					Process:                 name,
					PID:                     pid,
					Role:                    tg.role,
					CPUPct:                  user + sys,
					UserPct:                 user,
					SystemPct:               sys,
					RSSBytes:                rss,
					Threads:                 st.threads,
					CtxSwitchesVoluntary:    int64(delta(vol, prev.vol)),
					CtxSwitchesNonvoluntary: int64(delta(nonvol, prev.nonvol)),
					Container:               container,
					OutsideRun:              outside,
				})
			}
		}
		if prev == nil {
			prev = &procState{}
			s.procs[pid] = prev
		}
		*prev = procState{starttime: st.starttime, utime: st.utime, stime: st.stime, vol: vol, nonvol: nonvol, at: now, seen: true, container: container}
		if s.m != nil && (tg.role == RoleService || tg.role == RoleLoader) {
			s.sampleThreads(pid, st)
		}
	}
	for pid, st := range s.procs {
		if !st.seen {
			delete(s.procs, pid)
		}
	}

	var errs []error
	if s.m != nil {
		s.sampleMachine(tsec, first)
	}
	if s.cfg.System || s.m != nil {
		if err := s.sampleSystem(tsec, first); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cfg.Network {
		if err := s.sampleNet(tsec, first); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// procsTimeout bounds one call of Config.Procs (a provider asking a
// container engine).
func procsTimeout(interval time.Duration) time.Duration {
	return max(interval, 2*time.Second)
}

// pct converts clock ticks over dt seconds to percent of one core.
func pct(ticks uint64, dt float64) float64 {
	return float64(ticks) / clockTicks / dt * 100
}

// delta is cur-prev, or 0 when a counter went backwards (a thread exited,
// an interface was reset).
func delta(cur, prev uint64) uint64 {
	if cur < prev {
		return 0
	}
	return cur - prev
}

// ctxSwitches sums the context switches of every thread (the counters in
// /proc/PID/status are the main thread's only).
func (s *Sampler) ctxSwitches(pid int, threads int64) (vol, nonvol uint64) {
	if threads <= 1 {
		if b, err := s.rd.read(pidPath(pid, "status")); err == nil {
			vol, nonvol, _ = parseCtxSwitches(b)
		}
		return vol, nonvol
	}
	dir := pidPath(pid, "task")
	f, err := os.Open(dir)
	if err != nil {
		return 0, 0
	}
	ents, _ := f.Readdirnames(-1)
	f.Close()
	for _, e := range ents {
		if b, err := s.rd.read(dir + "/" + e + "/status"); err == nil {
			v, n, _ := parseCtxSwitches(b)
			vol += v
			nonvol += n
		}
	}
	return vol, nonvol
}

// listProc reads the entries of /proc into s.ents.
func (s *Sampler) listProc() {
	f, err := os.Open(procfs.Root)
	if err != nil {
		s.ents = s.ents[:0]
		return
	}
	s.ents, _ = f.Readdirnames(-1)
	f.Close()
}

// scanNames adds the processes matching Config.Names (among s.ents) to
// s.tgt.
func (s *Sampler) scanNames() {
	for _, e := range s.names {
		e.seen = false
	}
	for _, ent := range s.ents {
		if ent == "" || ent[0] < '0' || ent[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(ent)
		if err != nil {
			continue
		}
		b, err := s.rd.read(filepath.Join(procfs.Root, ent, "comm"))
		if err != nil {
			continue
		}
		comm := strings.TrimRight(string(b), "\n")
		e := s.names[pid]
		if e == nil || e.comm != comm {
			e = &nameEntry{comm: comm, name: s.match(pid, comm)}
			s.names[pid] = e
		}
		e.seen = true
		if e.name != "" {
			if _, taken := s.tgt[pid]; !taken {
				s.tgt[pid] = target{name: e.name, role: RoleNamed}
			}
		}
	}
	for pid, e := range s.names {
		if !e.seen {
			delete(s.names, pid)
			delete(s.ofRunNamed, pid)
		}
	}
}

// match returns the row name for a process that matches Config.Names, or
// "". A plain name matches the comm (truncated by the kernel to 15 bytes)
// or the base name of argv[0], and becomes the row name; a /pattern/
// matches the command line and the row name is the comm.
func (s *Sampler) match(pid int, comm string) string {
	var argv []string
	loaded := false
	load := func() []string {
		if !loaded {
			loaded = true
			if b, err := os.ReadFile(pidPath(pid, "cmdline")); err == nil {
				argv = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			}
		}
		return argv
	}
	for _, m := range s.matchers {
		if m.re == nil {
			if comm == m.name {
				return m.name
			}
			a := load()
			if len(a) > 0 && a[0] != "" && filepath.Base(a[0]) == m.name {
				return m.name
			}
			continue
		}
		a := load()
		if len(a) > 0 && m.re.MatchString(strings.Join(a, " ")) {
			return comm
		}
	}
	return ""
}

func (s *Sampler) sampleSystem(tsec float64, first bool) error {
	b, err := s.rd.read(filepath.Join(procfs.Root, "stat"))
	if err != nil {
		return err
	}
	c, err := parseProcStat(b)
	if err != nil {
		return err
	}
	prev, had := s.cpu, s.hasCP
	s.cpu, s.hasCP = c, true
	if s.m != nil {
		s.m.cpuAt(c, first)
	}
	if first || !had || !s.cfg.System {
		return nil
	}
	total := float64(delta(c.total(), prev.total()))
	if total == 0 {
		return nil
	}
	p := func(cur, old uint64) float64 { return float64(delta(cur, old)) / total * 100 }
	s.ss = append(s.ss, results.SystemSample{
		Step:       s.cfg.Step,
		T:          tsec,
		UserPct:    p(c.user, prev.user),
		NicePct:    p(c.nice, prev.nice),
		SystemPct:  p(c.system, prev.system),
		IdlePct:    p(c.idle, prev.idle),
		IOWaitPct:  p(c.iowait, prev.iowait),
		IRQPct:     p(c.irq, prev.irq),
		SoftIRQPct: p(c.softirq, prev.softirq),
		StealPct:   p(c.steal, prev.steal),
	})
	return nil
}

func (s *Sampler) sampleNet(tsec float64, first bool) error {
	b, err := s.rd.read(filepath.Join(procfs.Root, "net", "dev"))
	if err != nil {
		return err
	}
	if err := parseNetDev(b, s.net2); err != nil {
		return err
	}
	if !first {
		names := make([]string, 0, len(s.net2))
		for n := range s.net2 {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			cur := s.net2[n]
			prev, ok := s.net[n]
			if !ok {
				continue // new interface: baseline
			}
			s.ns = append(s.ns, results.NetSample{
				Step:      s.cfg.Step,
				T:         tsec,
				Interface: n,
				RxBytes:   int64(delta(cur.rxBytes, prev.rxBytes)),
				TxBytes:   int64(delta(cur.txBytes, prev.txBytes)),
				RxPackets: int64(delta(cur.rxPackets, prev.rxPackets)),
				TxPackets: int64(delta(cur.txPackets, prev.txPackets)),
			})
		}
	}
	s.net, s.net2 = s.net2, s.net
	return nil
}
