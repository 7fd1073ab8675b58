package tune

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The sysctl tests run Apply inside a network namespace they create, in a
// subprocess (this test binary, re-executed with helperEnv set), so the
// host's values are never touched.
const helperEnv = "BENCHFLOW_TUNE_HELPER"

const (
	nsSomaxconn = "1234"
	nsPortRange = "20000 30000"
)

// TestHelperProcess is not a test: it is the body of the subprocess.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper subprocess only")
	}
	out := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	read := func() string {
		a, _ := ReadSysctl("net.core.somaxconn")
		b, _ := ReadSysctl("net.ipv4.ip_local_port_range")
		return a + "|" + b
	}
	ctx := context.Background()
	switch mode {
	case "ok":
		u, err := Apply(ctx, Settings{Sysctl: map[string]string{
			"net.core.somaxconn":           nsSomaxconn,
			"net.ipv4.ip_local_port_range": nsPortRange,
		}}, nil)
		if err != nil {
			out("error %v", err)
			os.Exit(1)
		}
		out("applied %s", read())
		if err := u.Restore(); err != nil {
			out("error %v", err)
			os.Exit(1)
		}
		if err := u.Restore(); err != nil { // idempotent
			out("error second restore %v", err)
			os.Exit(1)
		}
		out("restored %s", read())
	case "fail":
		// somaxconn sorts first and is applied; the port range is
		// invalid (the kernel rejects it), so Apply must roll back.
		_, err := Apply(ctx, Settings{Sysctl: map[string]string{
			"net.core.somaxconn":           nsSomaxconn,
			"net.ipv4.ip_local_port_range": "70000 1",
		}}, nil)
		out("error %v", err)
		out("after %s", read())
	case "sigint":
		u, err := Apply(ctx, Settings{Sysctl: map[string]string{
			"net.core.somaxconn":           nsSomaxconn,
			"net.ipv4.ip_local_port_range": nsPortRange,
		}}, nil)
		if err != nil {
			out("error %v", err)
			os.Exit(1)
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		out("ready %s", read())
		select {
		case <-sig:
		case <-time.After(60 * time.Second):
			out("error no signal")
		}
		if err := u.Restore(); err != nil {
			out("error %v", err)
			os.Exit(1)
		}
		out("restored")
		os.Exit(130)
	case "readonly":
		_, err := Apply(ctx, Settings{Sysctl: map[string]string{"net.core.somaxconn": nsSomaxconn}}, nil)
		out("error %v", err)
		var warns []string
		u, err := Apply(ctx, Settings{Optional: true, Sysctl: map[string]string{"net.core.somaxconn": nsSomaxconn}},
			func(s string) { warns = append(warns, s) })
		out("optional %v %d %q", err, len(u.Applied()), warns)
	}
	os.Exit(0)
}

// netns creates a network namespace for the test and deletes it at the end.
func netns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "bftest-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("deleting namespace %s: %v: %s", name, err, out)
		}
	})
	return name
}

// nsRead reads a sysctl inside the namespace, from outside the helper.
func nsRead(t *testing.T, ns, key string) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/sys/"+strings.ReplaceAll(key, ".", "/")).Output()
	if err != nil {
		t.Fatalf("reading %s in %s: %v", key, ns, err)
	}
	return normalize(string(out))
}

func helper(ns, mode string, prefix ...string) *exec.Cmd {
	args := append([]string{"netns", "exec", ns}, prefix...)
	args = append(args, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	return cmd
}

type nsState struct{ somaxconn, portRange string }

func readNS(t *testing.T, ns string) nsState {
	return nsState{nsRead(t, ns, "net.core.somaxconn"), nsRead(t, ns, "net.ipv4.ip_local_port_range")}
}

func hostState(t *testing.T) nsState {
	a, err := ReadSysctl("net.core.somaxconn")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadSysctl("net.ipv4.ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	return nsState{a, b}
}

func TestSysctlAppliedAndRestored(t *testing.T) {
	ns := netns(t)
	host := hostState(t)
	before := readNS(t, ns)
	if before.somaxconn == nsSomaxconn || before.portRange == nsPortRange {
		t.Fatalf("namespace already has the test values: %+v", before)
	}
	out, err := helper(ns, "ok").CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := fmt.Sprintf("applied %s|%s\nrestored %s|%s\n", nsSomaxconn, nsPortRange, before.somaxconn, before.portRange)
	if string(out) != want {
		t.Errorf("helper output:\n%s\nwant:\n%s", out, want)
	}
	if got := readNS(t, ns); got != before {
		t.Errorf("namespace after restore = %+v, want %+v", got, before)
	}
	if got := hostState(t); got != host {
		t.Errorf("host values changed: %+v, was %+v", got, host)
	}
}

func TestSysctlRolledBackOnFailure(t *testing.T) {
	ns := netns(t)
	before := readNS(t, ns)
	out, err := helper(ns, "fail").CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "error setting sysctl net.ipv4.ip_local_port_range=70000 1: ") {
		t.Errorf("error does not name the failing setting:\n%s", s)
	}
	if !strings.Contains(s, fmt.Sprintf("after %s|%s\n", before.somaxconn, before.portRange)) {
		t.Errorf("somaxconn not rolled back inside the helper:\n%s", s)
	}
	if got := readNS(t, ns); got != before {
		t.Errorf("namespace after failure = %+v, want %+v", got, before)
	}
}

func TestSysctlRestoredOnSIGINT(t *testing.T) {
	ns := netns(t)
	before := readNS(t, ns)
	cmd := helper(ns, "sigint")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		t.Fatalf("helper did not get ready: %q %v", line, err)
	}
	during := readNS(t, ns)
	if during != (nsState{nsSomaxconn, nsPortRange}) {
		t.Errorf("namespace while applied = %+v", during)
	}
	// ip netns exec execs the command, so the pid is the helper's.
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("helper exit = %v, want status 130; output %q", err, rest)
	}
	if string(rest) != "restored\n" {
		t.Errorf("helper output after SIGINT = %q", rest)
	}
	if got := readNS(t, ns); got != before {
		t.Errorf("namespace after SIGINT = %+v, want %+v", got, before)
	}
}

// TestSysctlReadOnly reproduces a container's read-only /proc/sys: the
// helper runs in a mount namespace where /proc/sys is bind-mounted
// read-only.
func TestSysctlReadOnly(t *testing.T) {
	ns := netns(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	// Inside `ip netns exec` a shell remounts /proc/sys read-only in a
	// private mount namespace, then execs the helper.
	cmd := helper(ns, "readonly", "unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && exec "$@"`, "sh")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	s := string(out)
	// The helper runs as root, so the hint does not say "run as root".
	want := "error setting sysctl net.core.somaxconn=1234: open /proc/sys/net/core/somaxconn: read-only file system (/proc/sys is read-only here, as in a container; mark the tune step optional = true to go on without it)\n"
	if !strings.Contains(s, want) {
		t.Errorf("output:\n%s\nwant line:\n%s", s, want)
	}
	if !strings.Contains(s, "optional <nil> 0 [\"setting sysctl net.core.somaxconn=1234: open /proc/sys/net/core/somaxconn: read-only file system") {
		t.Errorf("optional setting did not become a warning:\n%s", s)
	}
}

func TestSettingErrorMessage(t *testing.T) {
	root := isRoot
	t.Cleanup(func() { isRoot = root })
	isRoot = func() bool { return false }
	err := &SettingError{
		Setting: "sysctl net.core.somaxconn=65535",
		Err:     &os.PathError{Op: "open", Path: "/proc/sys/net/core/somaxconn", Err: syscall.EROFS},
	}
	want := "setting sysctl net.core.somaxconn=65535: open /proc/sys/net/core/somaxconn: read-only file system (run as root, or mark the tune step optional = true)"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if !errors.Is(err, syscall.EROFS) {
		t.Error("SettingError does not unwrap")
	}
	// As root, the hint names what is missing instead.
	isRoot = func() bool { return true }
	for setting, want := range map[string]string{
		"rlimit nofile=1 for pid 2":             "(root lacks CAP_SYS_RESOURCE here, as in a container; mark the tune step optional = true to go on without it)",
		"nice 5 for pid 2":                      "(root lacks CAP_SYS_NICE here",
		"service cpu affinity 1 for pid 2":      "(root lacks CAP_SYS_NICE here",
		"sysctl kernel.sched_autogroup_enabled": "(root lacks CAP_SYS_ADMIN here",
	} {
		e := &SettingError{Setting: setting, Err: syscall.EPERM}
		if !strings.HasPrefix(e.Error(), "setting "+setting+": operation not permitted "+want) {
			t.Errorf("as root: %s", e)
		}
	}
	e2 := &SettingError{Setting: "sysctl a.b=1", Err: syscall.EINVAL}
	if strings.Contains(e2.Error(), "run as root") {
		t.Errorf("hint on a non-permission error: %s", e2)
	}
}

// TestSysctlFakeProc drives the sysctl code against a fake /proc/sys so the
// write/verify/restore sequence is covered without privileges.
func TestSysctlFakeProc(t *testing.T) {
	dir := t.TempDir()
	old := procfs.Root
	procfs.Root = dir
	t.Cleanup(func() { procfs.Root = old })
	p := filepath.Join(dir, "sys", "net", "ipv4", "ip_local_port_range")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("32768\t60999\n"), 0o644)

	u, err := Apply(context.Background(), Settings{Sysctl: map[string]string{"net.ipv4.ip_local_port_range": "1024  65000"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "1024 65000" {
		t.Errorf("applied value %q", b)
	}
	if a := u.Applied(); len(a) != 1 || a[0] != "sysctl net.ipv4.ip_local_port_range=1024 65000 (was 32768 60999)" {
		t.Errorf("Applied() = %q", a)
	}
	if err := u.Restore(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "32768 60999" {
		t.Errorf("restored value %q", b)
	}
	// Equal value (modulo whitespace): nothing is written or undone.
	u, err = Apply(context.Background(), Settings{Sysctl: map[string]string{"net/ipv4/ip_local_port_range": "32768 60999"}}, nil)
	if err != nil || len(u.Applied()) != 0 {
		t.Errorf("unchanged value: %v %q", err, u.Applied())
	}
}

func TestValidation(t *testing.T) {
	nice := 30
	cases := []struct {
		s    Settings
		want string
	}{
		{Settings{Sysctl: map[string]string{"../../etc/passwd": "x"}, Optional: true}, "setting sysctl ../../etc/passwd: invalid sysctl name"},
		{Settings{Sysctl: map[string]string{"net core": "1"}}, "invalid character ' '"},
		{Settings{Sysctl: map[string]string{"": "1"}}, "empty sysctl name"},
		{Settings{Nice: &nice, PIDs: []int{1}}, "setting nice 30: out of range"},
		{Settings{Rlimits: map[string]uint64{"files": 1}, PIDs: []int{1}}, "setting rlimit files: unknown limit"},
		{Settings{Rlimits: map[string]uint64{"nofile": 1}}, "no service processes"},
		{Settings{ServiceCPUs: []int{5000}, PIDs: []int{1}}, "cpu 5000 out of range"},
		{Settings{ServiceCPUs: []int{0}, PIDs: []int{-3}}, "invalid pid -3"},
	}
	for _, c := range cases {
		u, err := Apply(context.Background(), c.s, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Apply(%+v) = %v, want error containing %q", c.s, err, c.want)
		}
		if u != nil {
			t.Errorf("Apply(%+v) returned an Undo with an error", c.s)
		}
	}
}

func TestOptionalBecomesWarning(t *testing.T) {
	var warns []string
	u, err := Apply(context.Background(), Settings{
		Optional: true,
		Sysctl:   map[string]string{"net.core.benchflow_does_not_exist": "1"},
	}, func(s string) { warns = append(warns, s) })
	if err != nil {
		t.Fatalf("optional setting failed the step: %v", err)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], "setting sysctl net.core.benchflow_does_not_exist=1: open ") {
		t.Errorf("warnings = %q", warns)
	}
	if err := u.Restore(); err != nil {
		t.Error(err)
	}
	// Without Optional the same setting is an error naming it.
	_, err = Apply(context.Background(), Settings{Sysctl: map[string]string{"net.core.benchflow_does_not_exist": "1"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "setting sysctl net.core.benchflow_does_not_exist=1: open /proc/sys/net/core/benchflow_does_not_exist: no such file or directory") {
		t.Errorf("err = %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Apply(ctx, Settings{Sysctl: map[string]string{"net.core.somaxconn": "1"}, Optional: true}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// sleeper starts a child process to tune and kills it at the end.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

func procField(t *testing.T, pid int, file, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.Join(strings.Fields(strings.TrimPrefix(line, prefix)), " ")
		}
	}
	t.Fatalf("no %q in /proc/%d/%s", prefix, pid, file)
	return ""
}

func TestProcessSettings(t *testing.T) {
	pid := sleeper(t)
	limitsBefore := procField(t, pid, "limits", "Max open files")
	niceBefore, err := threadNice(pid, pid)
	if err != nil {
		t.Fatal(err)
	}
	cpusBefore := procField(t, pid, "status", "Cpus_allowed_list:")
	nice := niceBefore + 3
	if nice > 19 { // the tests run under nice already: go the other way (root only)
		nice = niceBefore - 3
	}
	s := Settings{
		PIDs:    []int{pid},
		Rlimits: map[string]uint64{"nofile": 512, "core": 0},
	}
	// Restoring a lower nice value needs CAP_SYS_NICE.
	root := os.Geteuid() == 0
	if root {
		s.Nice = &nice
	} else {
		nice = niceBefore
	}
	multi := runtime.NumCPU() >= 2
	if multi {
		s.ServiceCPUs = []int{1}
	}
	u, err := Apply(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := procField(t, pid, "limits", "Max open files"); !strings.HasPrefix(got, "512 ") {
		t.Errorf("nofile after Apply: %q", got)
	}
	if got, _ := threadNice(pid, pid); got != nice {
		t.Errorf("nice after Apply = %d, want %d", got, nice)
	}
	if multi {
		if got := procField(t, pid, "status", "Cpus_allowed_list:"); got != "1" {
			t.Errorf("affinity after Apply = %q, want 1", got)
		}
	}
	if err := u.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := procField(t, pid, "limits", "Max open files"); got != limitsBefore {
		t.Errorf("nofile after Restore = %q, want %q", got, limitsBefore)
	}
	if got, _ := threadNice(pid, pid); got != niceBefore {
		t.Errorf("nice after Restore = %d, want %d", got, niceBefore)
	}
	if got := procField(t, pid, "status", "Cpus_allowed_list:"); got != cpusBefore {
		t.Errorf("affinity after Restore = %q, want %q", got, cpusBefore)
	}
}

func TestProcessSettingsRolledBack(t *testing.T) {
	pid := sleeper(t)
	limitsBefore := procField(t, pid, "limits", "Max open files")
	if onlineCPUs() == nil {
		t.Skip("cannot read /sys/devices/system/cpu/online")
	}
	_, err := Apply(context.Background(), Settings{PIDs: []int{pid}, Rlimits: map[string]uint64{"nofile": 100}, ServiceCPUs: []int{MaxCPU}}, nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("setting service cpu affinity %d for pid %d: cpu %d is not online", MaxCPU, pid, MaxCPU)) {
		t.Fatalf("err = %v", err)
	}
	if got := procField(t, pid, "limits", "Max open files"); got != limitsBefore {
		t.Errorf("nofile not rolled back: %q, want %q", got, limitsBefore)
	}
}

func TestGoneProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	_, err := Apply(context.Background(), Settings{PIDs: []int{cmd.Process.Pid}, Rlimits: map[string]uint64{"nofile": 100}}, nil)
	if err == nil || !strings.Contains(err.Error(), "setting rlimit nofile=100 for pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("err = %v", err)
	}
}

func TestLoaderAffinity(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	before := selfAffinity(t)
	orig := before[os.Getpid()]
	u, err := Apply(context.Background(), Settings{LoaderCPUs: []int{0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for tid, got := range selfAffinity(t) {
		if got != "0" {
			t.Errorf("thread %d affinity %q, want 0", tid, got)
		}
	}
	// Threads the runtime starts during the load inherit the mask;
	// Restore must put them back too. Locked goroutines force new threads.
	release := make(chan struct{})
	started := make(chan int)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			runtime.LockOSThread()
			started <- unix.Gettid()
			<-release
		})
	}
	newTids := map[int]bool{}
	for range 6 {
		newTids[<-started] = true
	}
	defer func() { close(release); wg.Wait() }()
	if err := u.Restore(); err != nil {
		t.Fatal(err)
	}
	after := selfAffinity(t)
	for tid, got := range after {
		if got != orig {
			t.Errorf("thread %d (new: %v) affinity after Restore %q, want %q", tid, newTids[tid], got, orig)
		}
	}
}

func selfAffinity(t *testing.T) map[int]string {
	t.Helper()
	tids, err := tasks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]string{}
	for _, tid := range tids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", tid))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				m[tid] = strings.TrimSpace(v)
			}
		}
	}
	return m
}

// TestNotRoot: without privileges a sysctl fails with the setting, the
// reason and the hint.
func TestNotRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("runs as an unprivileged user only")
	}
	cur, err := ReadSysctl("net.core.somaxconn")
	if err != nil {
		t.Skip(err)
	}
	n, _ := strconv.Atoi(cur)
	v := strconv.Itoa(n + 1)
	_, err = Apply(context.Background(), Settings{Sysctl: map[string]string{"net.core.somaxconn": v}}, nil)
	want := "setting sysctl net.core.somaxconn=" + v + ": open /proc/sys/net/core/somaxconn: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "(run as root, or mark the tune step optional = true)") {
		t.Errorf("err = %v", err)
	}
}

// TestSysctlTunedElsewhereRefused: a sysctl another benchflow process has
// changed and not restored (its journal holds it) is refused, naming that
// process — live, or killed and waiting for gc — and left as it is; a
// net.* sysctl of another network namespace is that namespace's own.
func TestSysctlTunedElsewhereRefused(t *testing.T) {
	dir := t.TempDir()
	oldRoot := procfs.Root
	procfs.Root = dir
	t.Cleanup(func() { procfs.Root = oldRoot })
	var alive func(map[string]string) bool
	p := filepath.Join(dir, "sys", "net", "core", "somaxconn")
	k := filepath.Join(dir, "sys", "kernel", "threads-max")
	for _, f := range []string{p, k} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, []byte("4096\n"), 0o644)
	}
	other := filepath.Join(journalDir(), "999999.json")
	t.Cleanup(func() { os.Remove(other) })
	write := func(ns string, paths ...string) {
		j := journalFile{Owner: map[string]string{"dev.benchflow.pid": "999999"}, NetNS: ns}
		for _, x := range paths {
			j.Sysctls = append(j.Sysctls, journalEntry{Path: x, Original: "128"})
		}
		if err := writeJournal(other, j); err != nil {
			t.Fatal(err)
		}
	}
	apply := func(key string) (*Undo, error) {
		return Apply(context.Background(), Settings{Sysctl: map[string]string{key: "8192"}, Alive: alive}, nil)
	}
	write(netNS(), p, k)
	for live, want := range map[bool]string{true: "benchflow pid 999999 changed it from 128", false: "a killed benchflow (pid 999999) changed it from 128"} {
		alive = func(map[string]string) bool { return live }
		for _, key := range []string{"net.core.somaxconn", "kernel.threads-max"} {
			u, err := apply(key)
			if !errors.Is(err, ErrTunedElsewhere) || !strings.Contains(err.Error(), want) {
				t.Errorf("alive=%v %s: %v, want ErrTunedElsewhere with %q", live, key, err, want)
			}
			if u != nil && len(u.Applied()) != 0 {
				t.Errorf("applied %q", u.Applied())
			}
		}
		if b, _ := os.ReadFile(p); string(b) != "4096\n" {
			t.Errorf("the refused sysctl was written: %q", b)
		}
	}
	// Another network namespace's journal: net.* is free, kernel.* is not.
	alive = func(map[string]string) bool { return true }
	write("net:[1]", p, k)
	u, err := apply("net.core.somaxconn")
	if err != nil {
		t.Fatalf("net.* of another namespace: %v", err)
	}
	if err := u.Restore(); err != nil {
		t.Fatal(err)
	}
	if _, err := apply("kernel.threads-max"); !errors.Is(err, ErrTunedElsewhere) {
		t.Errorf("kernel.* tuned in another namespace: %v, want ErrTunedElsewhere", err)
	}
	// Once the other process restored it, it is free.
	write("")
	u, err = apply("kernel.threads-max")
	if err != nil {
		t.Fatal(err)
	}
	_ = u.Restore()
}

// TestOptionalWarningDoesNotAdviseOptional: the warning of an optional
// step that could not apply a setting gives the cause, not the advice to
// mark the step optional = true.
func TestOptionalWarningDoesNotAdviseOptional(t *testing.T) {
	root := isRoot
	t.Cleanup(func() { isRoot = root })
	for _, asRoot := range []bool{false, true} {
		isRoot = func() bool { return asRoot }
		err := &SettingError{Setting: "rlimit nofile=65535 for pid 42", Err: syscall.EPERM}
		msg := err.optionalMessage()
		if strings.Contains(msg, "optional = true") || !strings.HasPrefix(msg, "setting rlimit nofile=65535 for pid 42: ") {
			t.Errorf("root %v: %q", asRoot, msg)
		}
		if asRoot && !strings.Contains(msg, "CAP_SYS_RESOURCE") || !asRoot && !strings.Contains(msg, "needs root") {
			t.Errorf("root %v: %q does not say what is missing", asRoot, msg)
		}
	}
}
