package tune

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Settings is a tune step evaluated for one trial.
type Settings struct {
	Sysctl      map[string]string // "net.core.somaxconn" -> "4096"
	Rlimits     map[string]uint64 // "nofile", "nproc", "memlock", "core", ... applied to PIDs with prlimit(2)
	ServiceCPUs []int             // sched_setaffinity for every thread of every PID
	LoaderCPUs  []int             // affinity of the current process (benchflow, which runs the load generator): every thread (/proc/self/task)
	Nice        *int              // setpriority for PIDs
	PIDs        []int             // the service processes (host pids) the provider reported
	Optional    bool              // a setting that cannot be applied becomes a warning instead of an error
	// Owner labels the sysctl journal's entries with the process that
	// wrote them (the executor passes providers.SelfOwner().Labels()), so
	// gc tells a killed run's changes from a live one's; nil records only
	// the pid.
	Owner map[string]string
	// Alive tells, from another journal's owner labels, whether the
	// process that wrote it may still run (the refusal then says it is
	// live rather than killed); nil: every other journal counts as live.
	Alive func(owner map[string]string) bool
}

// hint is appended to errors caused by missing privileges.
const hint = "run as root, or mark the tune step optional = true"

// optHint ends the hints given to root.
const optHint = "; mark the tune step optional = true to go on without it"

// SettingError is the error of one setting that could not be applied or
// verified. Its message names the setting and the reason:
//
//	setting sysctl net.core.somaxconn=65535: open /proc/sys/net/core/somaxconn: read-only file system (run as root, or mark the tune step optional = true)
type SettingError struct {
	Setting string // "sysctl net.core.somaxconn=65535", "rlimit nofile=65535 for pid 42"
	Err     error
}

func (e *SettingError) Error() string {
	msg := "setting " + e.Setting + ": " + e.Err.Error()
	if isPermission(e.Err) {
		msg += " (" + permissionHint(e.Setting, e.Err) + ")"
	}
	return msg
}

// optionalMessage is Error for a step that is optional already: the cause,
// without advising optional = true.
func (e *SettingError) optionalMessage() string {
	msg := "setting " + e.Setting + ": " + e.Err.Error()
	if isPermission(e.Err) {
		h := permissionHint(e.Setting, e.Err)
		if h == hint {
			h = "needs root"
		}
		msg += " (" + strings.TrimSuffix(h, optHint) + ")"
	}
	return msg
}

// isRoot reports whether benchflow runs as root; tests replace it.
var isRoot = func() bool { return os.Geteuid() == 0 }

// permissionHint says what would make a refused setting work. Root can
// still be refused: in a container /proc/sys is read-only and capabilities
// such as CAP_SYS_RESOURCE are often dropped.
func permissionHint(setting string, err error) string {
	const opt = optHint
	switch {
	case !isRoot():
		return hint
	case errors.Is(err, syscall.EROFS):
		return "/proc/sys is read-only here, as in a container" + opt
	case strings.HasPrefix(setting, "rlimit "):
		return "root lacks CAP_SYS_RESOURCE here, as in a container" + opt
	case strings.HasPrefix(setting, "nice "), strings.Contains(setting, "cpu affinity"):
		return "root lacks CAP_SYS_NICE here, as in a container" + opt
	default:
		return "root lacks CAP_SYS_ADMIN here, as in a container" + opt
	}
}

func (e *SettingError) Unwrap() error { return e.Err }

// ErrMismatch reports that a value read back differs from the value written
// (the kernel clamped or ignored it).
var ErrMismatch = errors.New("value read back differs")

func isPermission(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS)
}

// Undo restores what Apply changed.
type Undo struct {
	mu      sync.Mutex
	steps   []undoStep
	done    bool
	err     error
	applied []string
}

type undoStep struct {
	what string
	fn   func() error
}

func (u *Undo) push(what string, fn func() error) {
	u.mu.Lock()
	u.steps = append(u.steps, undoStep{what, fn})
	u.applied = append(u.applied, what)
	u.mu.Unlock()
}

// Applied lists the settings Apply changed, in the order it changed them
// ("sysctl net.core.somaxconn=4096 (was 128)", …), for progress lines.
func (u *Undo) Applied() []string {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.applied...)
}

// Restore puts every old value back, in reverse order of application. It
// tries every step even when one fails and returns the failures joined. It
// is idempotent and safe for concurrent use: later calls return the first
// call's result.
func (u *Undo) Restore() error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return u.err
	}
	u.done = true
	var errs []error
	for i := len(u.steps) - 1; i >= 0; i-- {
		if err := u.steps[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s: %w", u.steps[i].what, err))
		}
	}
	u.steps = nil
	u.err = errors.Join(errs...)
	return u.err
}

// Apply applies, reads back to verify, and returns an Undo that restores
// every old value (sysctls, limits, affinity, nice) in reverse order. On
// error, whatever was applied is already restored. warn receives warnings
// (optional settings that failed); it may be nil.
//
// The order is: sysctls (sorted by key), rlimits (sorted by name, per pid),
// nice, service CPU affinity, loader CPU affinity.
func Apply(ctx context.Context, s Settings, warn func(string)) (*Undo, error) {
	if warn == nil {
		warn = func(string) {}
	}
	u := &Undo{}
	fail := func(err error) (*Undo, error) {
		if rerr := u.Restore(); rerr != nil {
			err = fmt.Errorf("%w; rolling back: %w", err, rerr)
		}
		return nil, err
	}
	// step runs one setting; an optional failure becomes a warning.
	step := func(err error) error {
		if err == nil {
			return nil
		}
		if s.Optional && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			msg := err.Error()
			if se := (*SettingError)(nil); errors.As(err, &se) {
				msg = se.optionalMessage()
			}
			warn(msg + " (optional, skipped)")
			return nil
		}
		return err
	}
	if err := validate(s); err != nil {
		return nil, err
	}

	keys := make([]string, 0, len(s.Sysctl))
	for k := range s.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if err := step(applySysctl(u, k, s.Sysctl[k], s.Owner, s.Alive)); err != nil {
			return fail(err)
		}
	}

	names := make([]string, 0, len(s.Rlimits))
	for n := range s.Rlimits {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, pid := range s.PIDs {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			if err := step(applyRlimit(u, pid, n, s.Rlimits[n])); err != nil {
				return fail(err)
			}
		}
	}

	if s.Nice != nil {
		for _, pid := range s.PIDs {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			if err := step(applyNice(u, pid, *s.Nice)); err != nil {
				return fail(err)
			}
		}
	}

	if len(s.ServiceCPUs) > 0 {
		for _, pid := range s.PIDs {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			if err := step(applyAffinity(u, "service", pid, s.ServiceCPUs)); err != nil {
				return fail(err)
			}
		}
	}
	if len(s.LoaderCPUs) > 0 {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if err := step(applyAffinity(u, "loader", os.Getpid(), s.LoaderCPUs)); err != nil {
			return fail(err)
		}
	}
	return u, nil
}

// validate rejects settings that can never work, whatever the privileges.
// These are errors even when Optional is set: they are mistakes in the
// pipeline, not properties of the machine.
func validate(s Settings) error {
	for k := range s.Sysctl {
		if _, err := sysctlPath(k); err != nil {
			return &SettingError{Setting: "sysctl " + k, Err: err}
		}
	}
	for n := range s.Rlimits {
		if _, ok := rlimitResources[n]; !ok {
			return &SettingError{Setting: "rlimit " + n, Err: fmt.Errorf("unknown limit (known: %s)", strings.Join(RlimitNames(), ", "))}
		}
	}
	if s.Nice != nil && (*s.Nice < -20 || *s.Nice > 19) {
		return &SettingError{Setting: fmt.Sprintf("nice %d", *s.Nice), Err: errors.New("out of range -20…19")}
	}
	for _, c := range append(append([]int(nil), s.ServiceCPUs...), s.LoaderCPUs...) {
		if c < 0 || c > MaxCPU {
			return &SettingError{Setting: "cpu affinity", Err: fmt.Errorf("cpu %d out of range 0…%d", c, MaxCPU)}
		}
	}
	needPIDs := len(s.Rlimits) > 0 || s.Nice != nil || len(s.ServiceCPUs) > 0
	if needPIDs && len(s.PIDs) == 0 && !s.Optional {
		return &SettingError{Setting: "process settings", Err: errors.New("no service processes to apply them to (the provider reported no host pids)")}
	}
	for _, p := range s.PIDs {
		if p <= 0 {
			return &SettingError{Setting: "process settings", Err: fmt.Errorf("invalid pid %d", p)}
		}
	}
	return nil
}

// sysctlPath maps "net.core.somaxconn" to /proc/sys/net/core/somaxconn. A
// key containing "/" is taken as a path below /proc/sys (so interface names
// with dots can be written "net/ipv4/conf/eth0.1/rp_filter").
func sysctlPath(key string) (string, error) {
	k := strings.TrimSpace(key)
	if k == "" {
		return "", errors.New("empty sysctl name")
	}
	for _, r := range k {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:@", r)
		if !ok {
			return "", fmt.Errorf("invalid character %q in sysctl name", r)
		}
	}
	rel := k
	if !strings.Contains(k, "/") {
		rel = strings.ReplaceAll(k, ".", "/")
	}
	rel = strings.Trim(rel, "/")
	for part := range strings.SplitSeq(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("invalid sysctl name %q", key)
		}
	}
	return filepath.Join(procfs.Root, "sys", rel), nil
}

// normalize makes values comparable: the kernel separates fields with tabs
// ("32768\t60999"), users write spaces.
func normalize(v string) string { return strings.Join(strings.Fields(v), " ") }

// ReadSysctl returns the current value of a sysctl, fields separated by a
// single space.
func ReadSysctl(key string) (string, error) {
	p, err := sysctlPath(key)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return normalize(string(b)), nil
}

func writeSysctl(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(v); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func applySysctl(u *Undo, key, value string, owner map[string]string, alive func(map[string]string) bool) error {
	setting := fmt.Sprintf("sysctl %s=%s", key, value)
	p, err := sysctlPath(key)
	if err != nil {
		return &SettingError{Setting: setting, Err: err}
	}
	want := normalize(value)
	if want == "" {
		return &SettingError{Setting: setting, Err: errors.New("empty value")}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return &SettingError{Setting: setting, Err: err}
	}
	old := normalize(string(b))
	if old == want {
		return nil // nothing to change, nothing to undo
	}
	// Journaled before it changes, so that gc can restore it after a
	// SIGKILL.
	if err := journalChange(p, old, owner, alive); err != nil {
		return &SettingError{Setting: setting, Err: err}
	}
	if err := writeSysctl(p, want); err != nil {
		_ = journalRestored(p)
		return &SettingError{Setting: setting, Err: err}
	}
	restore := func() error {
		if err := writeSysctl(p, old); err != nil {
			return err
		}
		return journalRestored(p)
	}
	got, err := os.ReadFile(p)
	if err != nil || normalize(string(got)) != want {
		rerr := restore()
		if err == nil {
			err = fmt.Errorf("%w: wrote %q, read %q", ErrMismatch, want, normalize(string(got)))
		}
		return &SettingError{Setting: setting, Err: errors.Join(err, rerr)}
	}
	u.push(fmt.Sprintf("sysctl %s=%s (was %s)", key, want, old), restore)
	return nil
}

func applyRlimit(u *Undo, pid int, name string, v uint64) error {
	setting := fmt.Sprintf("rlimit %s=%s for pid %d", name, formatLimit(v), pid)
	res := rlimitResources[name]
	var old unix.Rlimit
	if err := unix.Prlimit(pid, res, nil, &old); err != nil {
		return &SettingError{Setting: setting, Err: fmt.Errorf("reading the current limit: %w", err)}
	}
	// The soft limit takes the value; the hard limit is raised only when
	// needed, so that lowering and restoring a soft limit works without
	// privileges.
	nl := unix.Rlimit{Cur: v, Max: max(old.Max, v)}
	if nl == old {
		return nil
	}
	if err := unix.Prlimit(pid, res, &nl, nil); err != nil {
		return &SettingError{Setting: setting, Err: fmt.Errorf("prlimit: %w", err)}
	}
	restore := func() error {
		err := unix.Prlimit(pid, res, &old, nil)
		if errors.Is(err, syscall.ESRCH) {
			return nil // the process is gone: nothing to restore
		}
		return err
	}
	var got unix.Rlimit
	if err := unix.Prlimit(pid, res, nil, &got); err != nil || got != nl {
		rerr := restore()
		if err == nil {
			err = fmt.Errorf("%w: soft %s hard %s", ErrMismatch, formatLimit(got.Cur), formatLimit(got.Max))
		}
		return &SettingError{Setting: setting, Err: errors.Join(err, rerr)}
	}
	u.push(fmt.Sprintf("rlimit %s=%s for pid %d (was %s/%s)", name, formatLimit(v), pid, formatLimit(old.Cur), formatLimit(old.Max)), restore)
	return nil
}

// tasks lists the thread ids of a process.
func tasks(pid int) ([]int, error) {
	return procfs.PIDs(filepath.Join(procfs.Root, strconv.Itoa(pid), "task"))
}

// threadNice reads the nice value of one thread from /proc/PID/task/TID/stat
// (field 19).
func threadNice(pid, tid int) (int, error) {
	l, _, err := procfs.ReadStatFile(filepath.Join(procfs.Root, strconv.Itoa(pid), "task", strconv.Itoa(tid), "stat"))
	if err != nil {
		if errors.Is(err, procfs.ErrNoName) {
			return 0, errors.New("unparsable stat")
		}
		return 0, err
	}
	if l.Fields() < 17 {
		return 0, errors.New("short stat")
	}
	return l.Int(19)
}

// applyNice sets the nice value of every thread of pid (on Linux
// setpriority(PRIO_PROCESS) acts on one thread).
func applyNice(u *Undo, pid, nice int) error {
	setting := fmt.Sprintf("nice %d for pid %d", nice, pid)
	tids, err := tasks(pid)
	if err != nil {
		return &SettingError{Setting: setting, Err: err}
	}
	type prev struct{ tid, nice int }
	var changed []prev
	restore := func() error {
		var errs []error
		known := map[int]bool{}
		for i := len(changed) - 1; i >= 0; i-- {
			known[changed[i].tid] = true
			err := unix.Setpriority(unix.PRIO_PROCESS, changed[i].tid, changed[i].nice)
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("thread %d: %w", changed[i].tid, err))
			}
		}
		// Threads started after Apply inherited the new value: give
		// them the old value of the first changed thread.
		if len(changed) > 0 {
			now, _ := tasks(pid)
			for _, tid := range now {
				if known[tid] {
					continue
				}
				if cur, err := threadNice(pid, tid); err == nil && cur == nice {
					err := unix.Setpriority(unix.PRIO_PROCESS, tid, changed[0].nice)
					if err != nil && !errors.Is(err, syscall.ESRCH) {
						errs = append(errs, fmt.Errorf("thread %d: %w", tid, err))
					}
				}
			}
		}
		return errors.Join(errs...)
	}
	for _, tid := range tids {
		old, err := threadNice(pid, tid)
		if err != nil {
			if os.IsNotExist(err) {
				continue // thread exited
			}
			return &SettingError{Setting: setting, Err: errors.Join(err, restore())}
		}
		if old == nice {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				continue
			}
			return &SettingError{Setting: setting, Err: errors.Join(fmt.Errorf("setpriority thread %d: %w", tid, err), restore())}
		}
		changed = append(changed, prev{tid, old})
		if got, err := threadNice(pid, tid); err == nil && got != nice {
			return &SettingError{Setting: setting, Err: errors.Join(fmt.Errorf("%w: thread %d has nice %d", ErrMismatch, tid, got), restore())}
		}
	}
	if len(changed) > 0 {
		u.push(fmt.Sprintf("nice %d for pid %d (was %d)", nice, pid, changed[0].nice), restore)
	}
	return nil
}

func cpuSet(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// onlineCPUs returns the CPUs the kernel lists as online, or nil when that
// is unknown.
func onlineCPUs() []int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil
	}
	c, err := ParseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	return c
}

// applyAffinity pins every thread of pid to cpus.
func applyAffinity(u *Undo, role string, pid int, cpus []int) error {
	setting := fmt.Sprintf("%s cpu affinity %s for pid %d", role, FormatCPUList(cpus), pid)
	if online := onlineCPUs(); online != nil {
		on := map[int]bool{}
		for _, c := range online {
			on[c] = true
		}
		for _, c := range cpus {
			if !on[c] {
				return &SettingError{Setting: setting, Err: fmt.Errorf("cpu %d is not online (online: %s)", c, FormatCPUList(online))}
			}
		}
	}
	want := cpuSet(cpus)
	tids, err := tasks(pid)
	if err != nil {
		return &SettingError{Setting: setting, Err: err}
	}
	type prev struct {
		tid int
		set unix.CPUSet
	}
	var changed []prev
	restore := func() error {
		var errs []error
		known := map[int]bool{}
		// Threads the runtime starts while this runs are cloned from the
		// calling thread (or its template thread): restore the calling
		// thread first and keep this goroutine on it.
		if pid == os.Getpid() && len(changed) > 0 {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			self := unix.Gettid()
			for _, c := range changed {
				if c.tid == self {
					unix.SchedSetaffinity(self, &c.set)
				}
			}
		}
		for i := len(changed) - 1; i >= 0; i-- {
			known[changed[i].tid] = true
			err := unix.SchedSetaffinity(changed[i].tid, &changed[i].set)
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("thread %d: %w", changed[i].tid, err))
			}
		}
		// Threads started after Apply (the Go runtime adds threads to
		// benchflow during a load) inherited the new mask: give them the
		// old mask of the first changed thread. A thread still pinned can
		// start another while this runs, so sweep until a pass finds no
		// thread left with the new mask (a new thread can only inherit it
		// from one).
		// Two passes in a row must find nothing: a thread being cloned
		// while a pass lists them shows up in the next.
		for pass, quiet := 0, 0; len(changed) > 0 && pass < 50 && quiet < 2; pass++ {
			now, _ := tasks(pid)
			fixed := 0
			for _, tid := range now {
				if known[tid] {
					continue
				}
				var cur unix.CPUSet
				if unix.SchedGetaffinity(tid, &cur) == nil && cur == want {
					known[tid] = true
					fixed++
					err := unix.SchedSetaffinity(tid, &changed[0].set)
					if err != nil && !errors.Is(err, syscall.ESRCH) {
						errs = append(errs, fmt.Errorf("thread %d: %w", tid, err))
					}
				}
			}
			if fixed == 0 {
				quiet++
			} else {
				quiet = 0
			}
		}
		return errors.Join(errs...)
	}
	// The calling thread first, and this goroutine kept on it, so threads
	// the runtime clones from it meanwhile inherit the new mask.
	if pid == os.Getpid() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids = append([]int{unix.Gettid()}, tids...)
	}
	seen := map[int]bool{}
	// A thread being started while a pass lists the threads may have
	// copied the old mask: pass again until two passes in a row change
	// nothing.
	for pass, quiet := 0, 0; pass < 50 && quiet < 2; pass++ {
		if pass > 0 {
			if tids, err = tasks(pid); err != nil {
				return &SettingError{Setting: setting, Err: errors.Join(err, restore())}
			}
		}
		set := 0
		for _, tid := range tids {
			if seen[tid] {
				continue
			}
			seen[tid] = true
			var old unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &old); err != nil {
				if errors.Is(err, syscall.ESRCH) {
					continue
				}
				return &SettingError{Setting: setting, Err: errors.Join(err, restore())}
			}
			if old == want {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &want); err != nil {
				if errors.Is(err, syscall.ESRCH) {
					continue
				}
				return &SettingError{Setting: setting, Err: errors.Join(fmt.Errorf("sched_setaffinity thread %d: %w", tid, err), restore())}
			}
			set++
			changed = append(changed, prev{tid, old})
			var got unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &got); err == nil && got != want {
				return &SettingError{Setting: setting, Err: errors.Join(fmt.Errorf("%w: thread %d", ErrMismatch, tid), restore())}
			}
		}
		if set == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	if len(changed) > 0 {
		u.push(setting, restore)
	}
	return nil
}
