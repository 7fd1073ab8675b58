// Package sandbox runs a command confined by bubblewrap (bwrap, Debian's
// package bubblewrap): the file system read-only but for the folders the
// caller names and a private /tmp, every home folder hidden, a network of
// its own (a loopback nothing outside reaches), no Docker socket, and only
// the capabilities a benchmarked service needs. Whatever leaves the sandbox
// — the Docker socket, a cluster, sysctls, the host network — is a Grant,
// named one by one and described by Spec.Describe for the reader's plan.
//
// The child has a pid namespace of its own (--unshare-pid): it sees and
// signals only its own processes, bubblewrap's monitor outside included,
// and when the command ends — or bwrap, or the caller, dies — the kernel
// kills every process left in it (setsid daemons, double forks, processes
// that ignore SIGTERM). As root it also runs in a user namespace of its
// own (Command creates it, the identity map of every uid, so that
// services still switch to www-data): the capabilities it keeps are the
// namespace's, and none applies to the machine's processes, mounts,
// network or non-namespaced sysctls. The grants whose providers find
// their containers among the machine's processes (docker, k8s, nomad)
// share the machine's pid namespace instead (SharesPIDs): they hand over
// the machine anyway (the Docker socket is root). The cgroup namespace
// is not unshared: /proc/PID/cgroup tells a container's processes.
//
// Running benchflow apply inside: it writes nothing outside its --out
// folder but the tune journal, in the state folder (engine/tune.StateDir),
// and service folders in $TMPDIR (the private /tmp, gone with the
// sandbox). The caller sets BENCHFLOW_STATE_DIR to a folder of the
// private /tmp, or with GrantTune to a private folder of its own that it
// restores from itself — never the machine's state folder, whose journals
// `benchflow gc` restores as root without checking what they name.
//
// docs/publishing.md#the-sandbox says what the sandbox does and does not
// protect against.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/procfs"
	"github.com/benchflow/benchflow/engine/sandbox/grant"
)

// Grant opens one thing beyond the sandbox: a name of the grant
// registry (engine/sandbox/grant), where the sandbox declares its own
// (GrantTune, GrantHostNetwork) and each provider type the one its
// providers need (docker, k8s, nomad, ssh: providers.Spec's Grant).
type Grant = grant.Name

// The sandbox's own grants (reproduce --allow NAME).
const (
	// GrantTune lets the sysctls of TuneSysctls and the CPU frequency
	// governor be written (those files of /proc/sys and
	// /sys/devices/system/cpu/cpufreq bound read-write, every other one
	// read-only) and adds CAP_SYS_NICE (in the sandbox's own user
	// namespace as root: its own processes only). Without the host's
	// network, net.* sysctls are the sandbox's own network namespace's.
	// No CAP_SYS_ADMIN: root writes sysctls as the owner of /proc/sys's
	// files, and with it the child could unmount what hides the home
	// folders.
	GrantTune Grant = "tune"
	// GrantHostNetwork shares the host's network.
	GrantHostNetwork Grant = "host-network"
)

func init() {
	grant.Register(grant.Spec{Name: GrantTune, Meaning: "sysctls and scheduling as root", Sandbox: true})
	grant.Register(grant.Spec{Name: GrantHostNetwork, Meaning: "the host network", HostNetwork: true, Sandbox: true})
}

// TuneSysctls are the sysctls GrantTune lets a reproduction write: the
// network's (net.*, but net.core.bpf_*: the BPF JIT's hardening), the
// limits of open files and memory maps, and nothing else — never
// kernel.core_pattern, kernel.modprobe, fs.binfmt_misc or anything else
// that makes the kernel run a program, nor a setting that weakens the
// machine's protections. An entry ending in "." is a prefix.
var TuneSysctls = []string{
	"net.",
	"fs.file-max",
	"fs.nr_open",
	"fs.aio-max-nr",
	"vm.max_map_count",
	"vm.swappiness",
}

// TuneSysctlsText lists TuneSysctls for a reader: "net.* (but
// net.core.bpf_*), fs.file-max, …".
func TuneSysctlsText() string {
	var ws []string
	for _, a := range TuneSysctls {
		if strings.HasSuffix(a, ".") {
			a += "*"
			var but []string
			for _, n := range tuneSysctlsNever {
				if strings.HasPrefix(n, strings.TrimSuffix(a, "*")) {
					but = append(but, n+"*")
				}
			}
			if len(but) > 0 {
				a += " (but " + strings.Join(but, ", ") + ")"
			}
		}
		ws = append(ws, a)
	}
	return strings.Join(ws, ", ")
}

// tuneSysctlsNever are prefixes of TuneSysctls' prefixes left out.
var tuneSysctlsNever = []string{"net.core.bpf_"}

// TuneSysctlAllowed says whether GrantTune lets the sysctl key
// ("net.core.somaxconn", or "net/core/somaxconn") be written.
func TuneSysctlAllowed(key string) bool {
	key = strings.ReplaceAll(strings.Trim(key, "./"), "/", ".")
	if key == "" || strings.Contains(key, "..") {
		return false
	}
	for _, n := range tuneSysctlsNever {
		if strings.HasPrefix(key, n) {
			return false
		}
	}
	for _, a := range TuneSysctls {
		if key == a || strings.HasSuffix(a, ".") && strings.HasPrefix(key, a) {
			return true
		}
	}
	return false
}

// tuneSysctlPaths are the /proc/sys paths bound writable with GrantTune:
// /proc/sys/net (the network namespace's own, without the host's
// network), and each of TuneSysctls' files that exists; net.core.bpf_*
// stay read-only on top.
func tuneSysctlPaths() []string {
	var ps []string
	for _, a := range TuneSysctls {
		p := "/proc/sys/" + strings.ReplaceAll(strings.TrimSuffix(a, "."), ".", "/")
		if _, err := os.Stat(p); err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// cpufreqPaths are the CPU frequency governor's folders
// (/sys/devices/system/cpu/cpufreq/policy*), bound writable with
// GrantTune; the rest of /sys (a CPU's online switch among it) stays
// read-only.
func cpufreqPaths() []string {
	ps, _ := filepath.Glob("/sys/devices/system/cpu/cpufreq/policy*")
	return ps
}

// Grants lists every registered grant, in the order the plan names them:
// the providers' (docker, k8s, nomad, ssh with the standard providers
// linked), then tune and host-network.
func Grants() []Grant { return grant.Names() }

// GrantNames is Grants as text: "docker, k8s, …, host-network".
func GrantNames() string {
	var names []string
	for _, g := range Grants() {
		names = append(names, string(g))
	}
	return strings.Join(names, ", ")
}

// ParseGrant returns the grant named s, or an error listing the known
// ones.
func ParseGrant(s string) (Grant, error) {
	if _, ok := grant.Lookup(Grant(s)); ok {
		return Grant(s), nil
	}
	return "", fmt.Errorf("unknown grant %q (known: %s)", s, GrantNames())
}

// GrantMeaning says in a few words what a grant opens: its declaration's
// Meaning, or its name for an unknown one.
func GrantMeaning(g Grant) string {
	if s, ok := grant.Lookup(g); ok && s.Meaning != "" {
		return s.Meaning
	}
	return string(g)
}

// specs are the declarations of s's grants, in the plan's order.
func (s Spec) specs() []grant.Spec {
	var out []grant.Spec
	for _, g := range Grants() {
		if sp, ok := grant.Lookup(g); ok && s.has(g) {
			out = append(out, sp)
		}
	}
	return out
}

// implied lists the providers' grants of s for which want holds (the
// host network, the machine's pids).
func (s Spec) implied(want func(grant.Spec) bool) []string {
	var gs []string
	for _, sp := range s.specs() {
		if !sp.Sandbox && want(sp) {
			gs = append(gs, string(sp.Name))
		}
	}
	return gs
}

// Spec is one confinement.
type Spec struct {
	// ReadWrite are bound read-write at the same path (the run's output
	// folder); each must exist.
	ReadWrite []string
	// ReadOnly are bound read-only at the same path, on top of the hidden
	// places (the staged bundle, the benchflow executable); each must
	// exist.
	ReadOnly []string
	// Grants open what the reproduction needs beyond the sandbox.
	Grants []Grant
	// Env is the child's whole environment (and PWD, which bwrap sets
	// to Dir); the caller filters it. Nil is an empty environment, not
	// the caller's.
	Env []string
	// Dir is the working folder inside (default: /).
	Dir string
}

// bwrapPath is the bwrap executable (tests may point it elsewhere).
var bwrapPath = "bwrap"

// installHint ends every error saying bwrap cannot run.
const installHint = "install bubblewrap (apt-get install bubblewrap), or run unconfined with --no-sandbox"

// Available returns nil when bwrap runs here: it runs `bwrap --ro-bind /
// / true`, then `true` in the default sandbox (an older bwrap without
// --perms, or a container that forbids new namespaces, fails there);
// else an error saying how to install it and that --no-sandbox runs
// unconfined.
func Available() error {
	p, err := exec.LookPath(bwrapPath)
	if err != nil {
		return fmt.Errorf("sandbox: bwrap not found: %s", installHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	try := func(what string, args ...string) error {
		cmd := exec.CommandContext(ctx, p, args...)
		cmd.Env = []string{}
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("sandbox: %s %s failed: %s; %s", p, what, msg, installHint)
	}
	if err := try("--ro-bind / / true", "--ro-bind", "/", "/", "true"); err != nil {
		return err
	}
	cmd, err := Spec{}.Command(ctx, []string{"true"})
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("sandbox: %s (the default sandbox) true failed: %s; %s", p, msg, installHint)
	}
	return nil
}

// Capabilities the child keeps; every other one is dropped. benchflow
// runs as root for services that need it (nginx and apache2 started as
// root), and root with every capability can undo the sandbox (remount /
// read-write, unmount the tmpfs over the home folders, reach /run through
// a fresh mount), so the child keeps only:
var keptCaps = []string{
	// nginx's and apache2's root master starts its workers as www-data
	// (Debian's default `user`): setuid(2), setgid(2), setgroups(2).
	"CAP_SETUID",
	"CAP_SETGID",
	// nginx chowns its temporary folders (client_body_temp_path, …) to
	// the workers' user; apache2 its lock and log files.
	"CAP_CHOWN",
	// A root master signals its workers, which run as another user
	// (nginx -s reload/stop, apache2's graceful restart).
	"CAP_KILL",
	// Services listen on ports below 1024 in their own network namespace
	// (ports a bundle names, such as 80 and 443).
	"CAP_NET_BIND_SERVICE",
	// tune steps and services raise RLIMIT_NOFILE above the hard limit
	// (nginx's worker_rlimit_nofile, `step "tune" { nofile = 65535 }`).
	"CAP_SYS_RESOURCE",
}

// Not kept, on purpose: CAP_SYS_ADMIN (mount, so the file system
// confinement holds), CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_SYS_MODULE,
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (root still reads and writes
// its own files; files of other users stay as their modes say),
// CAP_MKNOD, CAP_SYS_RAWIO, CAP_SYS_BOOT, CAP_SYS_TIME. Writing sysctls
// (GrantTune) needs no capability: /proc/sys's files are root's, mode
// 0644, and root writes them as their owner.

func (s Spec) has(g Grant) bool {
	for _, h := range s.Grants {
		if h == g {
			return true
		}
	}
	return false
}

// SharesPIDs says whether the child shares the machine's pid namespace
// (and, as root, its user namespace): with the grants whose providers
// find their containers' processes in the machine's /proc (SharesPIDs:
// docker, k8s, nomad). Otherwise the child sees only its own processes.
func (s Spec) SharesPIDs() bool {
	for _, sp := range s.specs() {
		if sp.SharesPIDs {
			return true
		}
	}
	return false
}

// hostNetwork says whether the child shares the host's network.
func (s Spec) hostNetwork() bool {
	for _, sp := range s.specs() {
		if sp.HostNetwork {
			return true
		}
	}
	return false
}

func (s Spec) env(name string) string {
	v := ""
	for _, kv := range s.Env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// homes lists the folders hidden under a tmpfs: /root, /home and the
// home folders of the caller and of the child's environment.
func (s Spec) homes() []string {
	hs := []string{"/root", "/home"}
	for _, h := range []string{os.Getenv("HOME"), s.env("HOME")} {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		h = filepath.Clean(h)
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		if h == "/" || within(h, hs) {
			continue
		}
		hs = append(hs, h)
	}
	return hs
}

// within says whether p is one of dirs or below one.
func within(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

type bind struct {
	src, dst string
	rw       bool
}

// binds resolves the caller's folders: absolute, through symlinks, and
// existing; bound at their real path and, when it differs, at the path
// given too (a link inside a hidden place would not be seen).
func (s Spec) binds() ([]bind, error) {
	var bs []bind
	add := func(p string, rw bool, what string) error {
		if p == "" {
			return fmt.Errorf("sandbox: empty %s path", what)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("sandbox: %s path %q: %w", what, p, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return fmt.Errorf("sandbox: %s path %q must exist: %w", what, p, err)
		}
		bs = append(bs, bind{real, real, rw})
		if abs != real {
			bs = append(bs, bind{real, abs, rw})
		}
		return nil
	}
	for _, p := range s.ReadOnly {
		if err := add(p, false, "read-only"); err != nil {
			return nil, err
		}
	}
	for _, p := range s.ReadWrite {
		if err := add(p, true, "read-write"); err != nil {
			return nil, err
		}
	}
	// Parents before children, so that a read-only bundle inside a
	// read-write folder stays read-only; a read-write bind of the same
	// path after the read-only one wins.
	sort.SliceStable(bs, func(i, j int) bool {
		return strings.Count(bs[i].dst, "/") < strings.Count(bs[j].dst, "/")
	})
	return bs, nil
}

// hiddenFiles are secrets root could read through the read-only root;
// each that exists is replaced by an empty file.
var hiddenFiles = []string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"}

// hiddenDirs are folders of secrets replaced by an empty tmpfs.
var hiddenDirs = []string{"/etc/ssl/private"}

// Args returns bwrap's arguments before the command (without "bwrap"
// and "--").
func (s Spec) args() ([]string, error) {
	for _, g := range s.Grants {
		if _, err := ParseGrant(string(g)); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	binds, err := s.binds()
	if err != nil {
		return nil, err
	}
	a := []string{
		// The child dies with bwrap, and bwrap with its parent (SIGKILL).
		"--die-with-parent",
		// A session of its own: no TIOCSTI into the reader's terminal.
		"--new-session",
		"--unshare-ipc",
		"--unshare-uts",
	}
	if !s.SharesPIDs() {
		a = append(a, "--unshare-pid")
		if os.Geteuid() != 0 {
			// As root Command makes the user namespace (bwrap maps one
			// uid only); as a user bwrap does.
			a = append(a, "--unshare-user")
		}
	}
	if !s.hostNetwork() {
		// Its own network namespace, with only a loopback (up).
		a = append(a, "--unshare-net")
	}
	a = append(a,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
	)
	// bwrap 0.8 leaves /proc/sys writable when its folder is not (mode
	// 0555, no CAP_DAC_OVERRIDE), yet its files are root's, mode 0644:
	// root writes the machine's sysctls without any capability. With
	// GrantTune only the sysctls of TuneSysctls are bound writable on
	// top, one by one, and the CPU frequency governor's folders.
	a = append(a, "--ro-bind", "/proc/sys", "/proc/sys")
	if s.has(GrantTune) {
		for _, p := range tuneSysctlPaths() {
			a = append(a, "--bind", p, p)
		}
		if s.hostNetwork() {
			// The BPF JIT's settings are the machine's network
			// namespace's only.
			bpf, _ := filepath.Glob("/proc/sys/net/core/bpf_*")
			for _, p := range bpf {
				a = append(a, "--ro-bind", p, p)
			}
		}
		for _, p := range cpufreqPaths() {
			a = append(a, "--bind", p, p)
		}
	}
	// Writing it reboots or crashes the machine (mode 0200, root's).
	if _, err := os.Stat("/proc/sysrq-trigger"); err == nil {
		a = append(a, "--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger")
	}
	a = append(a,
		// World-writable and sticky, as on the machine: services that
		// run as another user (www-data) write there too.
		"--perms", "1777", "--tmpfs", "/tmp",
		"--perms", "1777", "--tmpfs", "/var/tmp",
		"--perms", "1777", "--tmpfs", "/dev/shm",
		// Daemons' sockets live in /run (Docker's, D-Bus's, databases'):
		// a private /run reaches none of them.
		"--tmpfs", "/run",
		"--perms", "1777", "--dir", "/run/lock",
		"--symlink", "/dev/shm", "/run/shm",
	)
	if fi, err := os.Lstat("/var/run"); err == nil && fi.IsDir() {
		a = append(a, "--tmpfs", "/var/run")
	}
	if fi, err := os.Lstat("/var/lock"); err == nil && fi.IsDir() {
		a = append(a, "--perms", "1777", "--tmpfs", "/var/lock")
	}
	// hidden are the tmpfs mounts over the machine's folders.
	hidden := []string{"/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run", "/var/lock"}
	for _, h := range s.homes() {
		if isDir(h) {
			a = append(a, "--tmpfs", h)
			hidden = append(hidden, h)
		}
	}
	for _, f := range hiddenFiles {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			a = append(a, "--ro-bind", "/dev/null", f)
		}
	}
	for _, d := range hiddenDirs {
		if isDir(d) {
			a = append(a, "--tmpfs", d)
			hidden = append(hidden, d)
		}
	}
	grantBinds := s.grantBinds()
	made := map[string]bool{}
	var bound []string
	for _, b := range append(grantBinds, binds...) {
		// bwrap makes the folders leading to a mount point inside a
		// tmpfs mode 0700, root's: a service running as www-data could
		// not reach the run folder under /tmp. Make them with the
		// machine's modes instead (0755 where the machine has none).
		for _, anc := range ancestors(b.dst) {
			if made[anc] || !within(anc, hidden) || within(anc, bound) || slices.Contains(hidden, anc) {
				continue
			}
			mode := os.FileMode(0o755)
			if fi, err := os.Stat(anc); err == nil && fi.IsDir() {
				mode = fi.Mode().Perm() | fi.Mode()&os.ModeSticky
			}
			perm := mode.Perm()
			if mode&os.ModeSticky != 0 {
				perm |= 0o1000
			}
			a = append(a, "--perms", fmt.Sprintf("%04o", uint32(perm)), "--dir", anc)
			made[anc] = true
		}
		if b.rw {
			a = append(a, "--bind", b.src, b.dst)
		} else {
			a = append(a, "--ro-bind", b.src, b.dst)
		}
		bound = append(bound, b.dst)
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	a = append(a, "--chdir", dir, "--cap-drop", "ALL")
	for _, c := range s.caps() {
		a = append(a, "--cap-add", c)
	}
	return a, nil
}

// grantBinds are what s's grants bind in: /etc/resolv.conf's target in
// /run with the host's network, and each grant's Binds.
func (s Spec) grantBinds() []bind {
	var grantBinds []bind
	if s.hostNetwork() {
		// /etc/resolv.conf may be a link into /run (systemd-resolved):
		// keep the file it names readable.
		if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && within(r, []string{"/run"}) {
			grantBinds = append(grantBinds, bind{r, r, false})
		}
	}
	for _, sp := range s.specs() {
		if sp.Binds == nil {
			continue
		}
		for _, gb := range sp.Binds(s.env) {
			r, err := filepath.EvalSymlinks(gb.Path)
			if gb.Path == "" || err != nil {
				continue
			}
			grantBinds = append(grantBinds, bind{r, r, gb.Write})
			if gb.AtGiven && r != gb.Path {
				grantBinds = append(grantBinds, bind{r, gb.Path, gb.Write})
			}
		}
	}
	return grantBinds
}

// caps are the capabilities the child keeps: keptCaps, CAP_SYS_NICE with
// GrantTune, and of those only the ones in this process's bounding set —
// bwrap 0.8 asked for one outside it (a container without
// CAP_SYS_RESOURCE) keeps them all.
func (s Spec) caps() []string {
	caps := append([]string(nil), keptCaps...)
	if s.has(GrantTune) {
		caps = append(caps, "CAP_SYS_NICE")
	}
	bnd := boundingSet()
	var kept []string
	for _, c := range caps {
		if bnd&(1<<capNumbers[c]) != 0 {
			kept = append(kept, c)
		}
	}
	return kept
}

// capWords say what each kept capability lets the child do, for Describe.
var capWords = map[string]string{
	"CAP_SETUID":           "switch user",
	"CAP_SETGID":           "switch group",
	"CAP_CHOWN":            "chown",
	"CAP_KILL":             "signal any process",
	"CAP_NET_BIND_SERVICE": "bind ports below 1024",
	"CAP_SYS_RESOURCE":     "raise rlimits",
	"CAP_SYS_NICE":         "nice and affinity of any process",
}

// capNumbers are the kept capabilities' numbers (linux/capability.h).
var capNumbers = map[string]uint{
	"CAP_CHOWN":            0,
	"CAP_KILL":             5,
	"CAP_SETGID":           6,
	"CAP_SETUID":           7,
	"CAP_NET_BIND_SERVICE": 10,
	"CAP_SYS_NICE":         23,
	"CAP_SYS_RESOURCE":     24,
}

// boundingSet is this process's capability bounding set (CapBnd in
// /proc/self/status); 0 when it cannot be read.
func boundingSet() uint64 {
	v, ok := procfs.StatusValue(procfs.Self, "CapBnd")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseUint(v, 16, 64)
	return n
}

// ancestors lists p's parent folders, outermost first, without "/".
func ancestors(p string) []string {
	var as []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		as = append([]string{d}, as...)
	}
	return as
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Cmd is a confined command: an exec.Cmd whose Wait (and Run, Output,
// CombinedOutput) returns only once every process of the sandbox is gone
// — bwrap's monitor exits as soon as the command does, while the kernel
// is still killing what the command left in its pid namespace.
type Cmd struct {
	*exec.Cmd
	info   *os.File // read end of bwrap's --info-fd
	infoW  *os.File
	pidfd  chan int // the namespace's init, as a pidfd (-1: none)
	ownPID bool
}

// Start starts bwrap.
func (c *Cmd) Start() error {
	err := c.Cmd.Start()
	if c.infoW != nil {
		c.infoW.Close()
		c.infoW = nil
	}
	if err != nil {
		if c.info != nil {
			c.info.Close()
		}
		return err
	}
	if c.info != nil {
		go c.readInfo()
	}
	return nil
}

// readInfo reads bwrap's --info-fd ({"child-pid": N}, the namespace's
// init) and opens a pidfd on it while bwrap, its parent, still holds it.
func (c *Cmd) readInfo() {
	defer c.info.Close()
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	fd := -1
	if json.NewDecoder(c.info).Decode(&info) == nil && info.ChildPID > 0 {
		if f, err := unix.PidfdOpen(info.ChildPID, 0); err == nil {
			fd = f
		}
	}
	c.pidfd <- fd
	// bwrap closes its end when it exits; drain until then.
	io.Copy(io.Discard, c.info)
}

// Wait waits for bwrap, then for the namespace's init (and so for every
// process in it).
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	c.settle()
	return err
}

func (c *Cmd) settle() {
	if c.pidfd == nil {
		return
	}
	var fd int
	select {
	case fd = <-c.pidfd:
	case <-time.After(5 * time.Second):
		// bwrap ended before writing its info: it started nothing.
		return
	}
	c.pidfd = nil
	if fd < 0 {
		return
	}
	defer unix.Close(fd)
	// The init is killed with bwrap (--die-with-parent), and exits once
	// the kernel has reaped every process of its namespace.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 60_000)
		if err == unix.EINTR {
			continue
		}
		if n != 0 || err != nil {
			return
		}
	}
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the command and returns its standard output.
func (c *Cmd) Output() ([]byte, error) {
	var b bytes.Buffer
	c.Stdout = &b
	err := c.Run()
	return b.Bytes(), err
}

// CombinedOutput runs the command and returns its standard output and
// error, interleaved.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	return b.Bytes(), err
}

// Command returns the command running argv confined by s. Its Env is
// s.Env; its standard input is /dev/null unless the caller sets Stdin
// (reproduce does not: nothing inside reads the reader's terminal); the
// caller sets Stdout and Stderr (pipes: a terminal's file descriptor
// inside could be read from). When ctx is done the command is sent
// SIGTERM (it runs in a session of its own, so a terminal's Ctrl-C does
// not reach it), and killed with everything bwrap started WaitDelay
// (default 30s) later. bwrap is killed when the thread that started it
// exits (Pdeathsig): start it from a goroutine that is not locked to its
// thread (runtime.LockOSThread).
func (s Spec) Command(ctx context.Context, argv []string) (*Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("sandbox: no command")
	}
	// The spec is checked first: a mistake in it is located whether or
	// not bubblewrap is installed.
	a, err := s.args()
	if err != nil {
		return nil, err
	}
	p, err := exec.LookPath(bwrapPath)
	if err != nil {
		return nil, fmt.Errorf("sandbox: bwrap not found: %s", installHint)
	}
	ownPIDs := !s.SharesPIDs()
	c := &Cmd{ownPID: ownPIDs}
	if ownPIDs {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		c.info, c.infoW, c.pidfd = r, w, make(chan int, 1)
		// ExtraFiles[0] is fd 3 in bwrap, which does not pass it on.
		a = append(a, "--info-fd", "3")
	}
	a = append(append(a, "--"), argv...)
	cmd := exec.CommandContext(ctx, p, a...)
	c.Cmd = cmd
	if c.infoW != nil {
		cmd.ExtraFiles = []*os.File{c.infoW}
	}
	cmd.Env = append([]string{}, s.Env...)
	// bwrap is killed when its parent (this process) dies, and
	// --die-with-parent passes that on to the command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if ownPIDs && os.Geteuid() == 0 {
		// A user namespace of its own, every uid and gid mapped to
		// itself: the files' owners and a service's switch to www-data
		// are as outside, but the capabilities bwrap leaves the child
		// are the namespace's, and the machine's processes, mounts,
		// network and non-namespaced sysctls are not the namespace's.
		// (bwrap's own --unshare-user maps one uid, so a root service
		// could not switch to its workers' user.)
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
		all := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		cmd.SysProcAttr.UidMappings = all
		cmd.SysProcAttr.GidMappings = all
		cmd.SysProcAttr.GidMappingsEnableSetgroups = true
		// No CAP_SYS_RESOURCE of the machine's inside: raise the hard
		// limit of open files here, where it still is, for services
		// that raise theirs (nginx's worker_rlimit_nofile).
		raiseNofile()
	}
	cmd.WaitDelay = 30 * time.Second
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// bwrap's child is the confined command (bwrap waits for it);
		// with a pid namespace of its own, bwrap's child is the
		// namespace's init (bwrap again, which ignores a SIGTERM from
		// outside) and the command is its child.
		kids := procfs.Children(cmd.Process.Pid)
		if ownPIDs {
			var cmds []int
			for _, k := range kids {
				cmds = append(cmds, procfs.Children(k)...)
			}
			kids = cmds
		}
		if len(kids) == 0 {
			return cmd.Process.Kill()
		}
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGTERM)
		}
		return nil
	}
	return c, nil
}

// raiseNofile raises this process's hard limit of open files to the
// kernel's fs.nr_open (children inherit it); errors leave it as it is.
func raiseNofile() {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		return
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return
	}
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil || r.Max >= n {
		return
	}
	r.Max = n
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
}

// Describe returns one line per confinement fact, for the plan, reflecting
// the grants. It names the caller's folders as given.
func (s Spec) Describe() []string {
	rw := "nothing"
	if len(s.ReadWrite) > 0 {
		rw = strings.Join(s.ReadWrite, ", ")
	}
	d := []string{
		"file system: read-only except " + rw + " and a private /tmp (also /var/tmp, /dev/shm, /run), emptied at the end",
	}
	if len(s.ReadOnly) > 0 {
		d = append(d, "also readable: "+strings.Join(s.ReadOnly, ", "))
	}
	d = append(d,
		"home folders: hidden (/root, /home and $HOME are empty)",
		"secrets: /etc/shadow, /etc/gshadow and /etc/ssl/private hidden; every other file is readable as the user running it",
	)
	switch implied := s.implied(func(sp grant.Spec) bool { return sp.HostNetwork }); {
	case s.has(GrantHostNetwork):
		d = append(d, "network: the host's (granted host-network): the machine's local services, the LAN and the internet are reachable")
	case len(implied) > 0:
		d = append(d, "network: the host's (implied by "+strings.Join(implied, ", ")+"): the machine's local services, the LAN and the internet are reachable")
	default:
		d = append(d, "network: its own loopback only (127.0.0.1 inside); the machine's local services, the LAN and the internet are not reachable")
	}
	d = append(d, "daemons: the Docker socket and other daemons' sockets in /run are not reachable, but for what a grant below binds")
	for _, sp := range s.specs() {
		if sp.Describe != nil && !sp.Sandbox {
			d = append(d, sp.Describe(s.env))
		}
	}
	var words []string
	for _, c := range s.caps() {
		words = append(words, capWords[c])
	}
	caps := "none"
	if len(words) > 0 {
		caps = strings.Join(words, ", ")
	}
	if s.has(GrantTune) {
		net := "net.* sysctls apply to its own network namespace only"
		if s.hostNetwork() {
			net = "net.* sysctls apply to the host's network"
		}
		d = append(d, "tune (granted): only the sysctls "+TuneSysctlsText()+" ("+net+") and the CPU frequency governor are writable; every other sysctl stays read-only")
	} else {
		d = append(d, "sysctls: read-only")
	}
	d = append(d,
		"capabilities: only "+caps+" (no mount, no ptrace, no network administration)",
		s.processes(),
		"not limited: CPU, memory and disk use; the kernel is the machine's",
	)
	return d
}

// processes is Describe's line about processes.
func (s Spec) processes() string {
	if s.SharesPIDs() {
		return "processes: the machine's are visible in /proc (same pids; implied by " + strings.Join(s.implied(func(sp grant.Spec) bool { return sp.SharesPIDs }), ", ") + ", whose containers run there) and can be signalled as its capabilities allow; its own end with it; no terminal (input closed, output through a pipe, control characters escaped)"
	}
	ns := "a pid namespace of its own"
	if os.Geteuid() == 0 {
		ns += ", and a user namespace of its own: its capabilities do not apply to the machine's processes, mounts or sysctls"
	}
	return "processes: only its own are visible (" + ns + "); every one of them, daemons included, is killed when the run ends, fails or is interrupted; no terminal (input closed, output through a pipe, control characters escaped)"
}
