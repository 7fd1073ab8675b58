package envinfo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/procfs"
	"golang.org/x/sys/unix"
)

// Environment describes the machine and software of a run.
type Environment struct {
	Hostname    string    `json:"hostname"`
	CollectedAt time.Time `json:"collected_at"`

	// Kernel (uname).
	KernelName    string `json:"kernel_name"`    // "Linux"
	KernelRelease string `json:"kernel_release"` // "6.1.0-18-amd64"
	KernelVersion string `json:"kernel_version"` // "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
	Arch          string `json:"arch"`           // "x86_64"

	// Distribution (/etc/os-release).
	Distribution   string `json:"distribution"`    // PRETTY_NAME: "Debian GNU/Linux 12 (bookworm)"
	DistributionID string `json:"distribution_id"` // ID and VERSION_ID: "debian 12"

	// CPU and memory.
	CPUModel    string `json:"cpu_model"`
	CPUSockets  int    `json:"cpu_sockets"`
	CPUCores    int    `json:"cpu_cores"`    // physical cores
	CPUThreads  int    `json:"cpu_threads"`  // online logical CPUs
	AllowedCPUs int    `json:"allowed_cpus"` // CPUs benchflow may run on (affinity, cpuset)
	MemoryBytes int64  `json:"memory_bytes"` // MemTotal
	// CPUGovernor is the scaling governor of cpu0, or "unavailable"
	// (virtual machines and containers often have no cpufreq).
	CPUGovernor string `json:"cpu_governor"`
	// THP is the selected mode of transparent huge pages ("always",
	// "madvise", "never") and THPDefrag its defrag mode.
	THP       string `json:"transparent_hugepages"`
	THPDefrag string `json:"transparent_hugepages_defrag"`

	// Sysctls holds the settings that matter for networking benchmarks,
	// by name; unreadable ones are absent.
	Sysctls map[string]string `json:"sysctls"`
	// NofileSoft and NofileHard are benchflow's own RLIMIT_NOFILE.
	NofileSoft uint64 `json:"nofile_soft"`
	NofileHard uint64 `json:"nofile_hard"`
	// InContainer is true when benchflow itself runs in a container.
	InContainer bool `json:"in_container"`
	// Sandbox describes the confinement benchflow ran in, when `benchflow
	// reproduce` started it in its sandbox (BENCHFLOW_SANDBOX:
	// "bubblewrap; grants: docker; network: host"); empty otherwise. A
	// sandbox hides what it does not grant (the Docker daemon's fields, the
	// host network's sysctls), and comparisons say so.
	Sandbox string `json:"sandbox,omitempty"`

	// Software.
	GoVersion        string `json:"go_version"`
	BenchflowVersion string `json:"benchflow_version"`
	GitCommit        string `json:"git_commit,omitempty"`
	GitCommitTime    string `json:"git_commit_time,omitempty"`
	GitDirty         bool   `json:"git_dirty,omitempty"`
	// Tools maps a tool name ("wrk", "nginx", "apache2", "docker") to
	// its version line; tools that are absent or do not answer in time
	// are left out.
	Tools map[string]string `json:"tools"`

	// Explaining records what changes results and is invisible in a
	// table (storage driver, userland proxy, mitigations, …).
	Explaining

	// LoadAverage is the 1-, 5- and 15-minute load average of
	// /proc/loadavg when the environment was collected, before the first
	// trial: how busy the machine was (not part of the fingerprint; a
	// reproduction compares it apart from the other fields).
	LoadAverage []float64 `json:"load_average,omitempty"`

	Fingerprint string `json:"fingerprint"`
}

// Sysctls lists the sysctls Collect records.
var Sysctls = []string{
	"net.core.somaxconn",
	"net.core.netdev_max_backlog",
	"net.core.rmem_max",
	"net.core.wmem_max",
	"net.ipv4.tcp_max_syn_backlog",
	"net.ipv4.tcp_tw_reuse",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_congestion_control",
	"net.ipv4.tcp_slow_start_after_idle",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
	"fs.file-max",
	"fs.nr_open",
	"vm.swappiness",
	"kernel.sched_autogroup_enabled",
}

// ToolTimeout bounds each tool version probe.
var ToolTimeout = 3 * time.Second

// Paths read by Collect besides /proc (procfs.Root); tests point them at
// fixtures.
var (
	sysRoot   = "/sys"
	osRelease = []string{"/etc/os-release", "/usr/lib/os-release"}
)

// Collect reads kernel (uname), distribution (/etc/os-release), CPU model,
// cores/threads, memory, CPU frequency governor, transparent huge pages,
// networking sysctls (somaxconn, tcp_tw_reuse, ip_local_port_range,
// tcp_max_syn_backlog, netdev_max_backlog, tcp_fin_timeout, …), Go
// version, benchflow version and git commit (from runtime/debug.ReadBuildInfo
// vcs settings), hostname, and tool versions (wrk, nginx -v, apache2 -v,
// docker server version via the docker CLI or API if present — each
// optional, time-bounded, never failing the run).
func Collect(ctx context.Context, benchflowVersion string) *Environment {
	e := &Environment{
		CollectedAt:      time.Now().UTC(),
		GoVersion:        runtime.Version(),
		BenchflowVersion: benchflowVersion,
		AllowedCPUs:      runtime.NumCPU(),
		Sysctls:          map[string]string{},
		Tools:            map[string]string{},
	}
	e.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		e.KernelName = unix.ByteSliceToString(u.Sysname[:])
		e.KernelRelease = unix.ByteSliceToString(u.Release[:])
		e.KernelVersion = unix.ByteSliceToString(u.Version[:])
		e.Arch = unix.ByteSliceToString(u.Machine[:])
	}
	for _, p := range osRelease {
		if b, err := os.ReadFile(p); err == nil {
			kv := parseOSRelease(b)
			e.Distribution = kv["PRETTY_NAME"]
			e.DistributionID = strings.TrimSpace(kv["ID"] + " " + kv["VERSION_ID"])
			if e.Distribution == "" {
				e.Distribution = e.DistributionID
			}
			break
		}
	}
	if b, err := os.ReadFile(filepath.Join(procfs.Root, "cpuinfo")); err == nil {
		c := parseCPUInfo(b)
		e.CPUModel, e.CPUSockets, e.CPUCores, e.CPUThreads = c.model, c.sockets, c.cores, c.threads
	}
	if b, err := os.ReadFile(filepath.Join(sysRoot, "devices/system/cpu/online")); err == nil {
		if n := countCPUList(strings.TrimSpace(string(b))); n > 0 {
			e.CPUThreads = n
		}
	}
	if e.CPUCores == 0 {
		e.CPUCores = e.CPUThreads
	}
	if b, err := os.ReadFile(filepath.Join(procfs.Root, "loadavg")); err == nil {
		e.LoadAverage = parseLoadAvg(b)
	}
	if b, err := os.ReadFile(filepath.Join(procfs.Root, "meminfo")); err == nil {
		e.MemoryBytes = parseMemTotal(b)
	}
	e.CPUGovernor = "unavailable"
	if b, err := os.ReadFile(filepath.Join(sysRoot, "devices/system/cpu/cpu0/cpufreq/scaling_governor")); err == nil {
		e.CPUGovernor = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(sysRoot, "kernel/mm/transparent_hugepage/enabled")); err == nil {
		e.THP = selected(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(sysRoot, "kernel/mm/transparent_hugepage/defrag")); err == nil {
		e.THPDefrag = selected(string(b))
	}
	for _, k := range Sysctls {
		if b, err := os.ReadFile(filepath.Join(procfs.Root, "sys", strings.ReplaceAll(k, ".", "/"))); err == nil {
			e.Sysctls[k] = strings.Join(strings.Fields(string(b)), " ")
		}
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
		e.NofileSoft, e.NofileHard = rl.Cur, rl.Max
	}
	e.InContainer = inContainer()
	e.Sandbox = os.Getenv("BENCHFLOW_SANDBOX")
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				e.GitCommit = s.Value
			case "vcs.time":
				e.GitCommitTime = s.Value
			case "vcs.modified":
				e.GitDirty = s.Value == "true"
			}
		}
		if e.BenchflowVersion == "" || e.BenchflowVersion == "dev" {
			if v := bi.Main.Version; v != "" && v != "(devel)" {
				e.BenchflowVersion = v
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { collectExplaining(ctx, &e.Explaining) })
	e.Tools = toolVersions(ctx)
	wg.Wait()
	e.Fingerprint = e.ComputeFingerprint()
	return e
}

// identity is what the fingerprint covers, in a fixed JSON form.
type identity struct {
	KernelRelease  string            `json:"kernel_release"`
	Arch           string            `json:"arch"`
	Distribution   string            `json:"distribution"`
	CPUModel       string            `json:"cpu_model"`
	CPUSockets     int               `json:"cpu_sockets"`
	CPUCores       int               `json:"cpu_cores"`
	CPUThreads     int               `json:"cpu_threads"`
	MemoryGiB      int64             `json:"memory_gib"`
	CPUGovernor    string            `json:"cpu_governor"`
	THP            string            `json:"transparent_hugepages"`
	Sysctls        map[string]string `json:"sysctls"`
	FingerprintVer int               `json:"v"`
}

func (e *Environment) identity() identity {
	return identity{
		KernelRelease: e.KernelRelease,
		Arch:          e.Arch,
		Distribution:  e.Distribution,
		CPUModel:      e.CPUModel,
		CPUSockets:    e.CPUSockets,
		CPUCores:      e.CPUCores,
		CPUThreads:    e.CPUThreads,
		// Rounded: MemTotal moves by a few MiB between kernels and
		// boots of the same machine.
		MemoryGiB:      int64(math.Round(float64(e.MemoryBytes) / (1 << 30))),
		CPUGovernor:    e.CPUGovernor,
		THP:            e.THP,
		Sysctls:        e.Sysctls,
		FingerprintVer: 1,
	}
}

// ComputeFingerprint returns the sha256 (hex) of the fields that identify
// the machine and its configuration: kernel release, architecture,
// distribution, CPU model, sockets, cores, threads, memory rounded to GiB,
// governor, transparent huge pages and the sysctls. The hostname, the
// time and software versions are not part of it.
func (e *Environment) ComputeFingerprint() string {
	b, _ := json.Marshal(e.identity()) // maps marshal with sorted keys
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Diff lists the fingerprinted fields that differ between a and b, as
// "name: a-value → b-value", sorted. It is empty when the fingerprints
// agree.
func Diff(a, b *Environment) []string {
	if a == nil || b == nil {
		return nil
	}
	var ma, mb map[string]any
	ja, _ := json.Marshal(a.identity())
	jb, _ := json.Marshal(b.identity())
	json.Unmarshal(ja, &ma)
	json.Unmarshal(jb, &mb)
	flat := func(m map[string]any) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				for sk, sv := range sub {
					out[sk] = fmt.Sprint(sv)
				}
				continue
			}
			out[k] = fmt.Sprint(v)
		}
		return out
	}
	fa, fb := flat(ma), flat(mb)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		va, oka := fa[k]
		vb, okb := fb[k]
		if !oka {
			va = "(absent)"
		}
		if !okb {
			vb = "(absent)"
		}
		if va != vb {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, va, vb))
		}
	}
	sort.Strings(out)
	return out
}

// Map returns the environment as the generic map stored in
// results.Manifest.Environment.
func (e *Environment) Map() map[string]any {
	b, _ := json.Marshal(e)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// FromMap is the inverse of Map, for environments read from manifest.json.
func FromMap(m map[string]any) (*Environment, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("decoding environment: %w", err)
	}
	var e Environment
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("decoding environment: %w", err)
	}
	return &e, nil
}

func parseOSRelease(b []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		} else {
			v = strings.Trim(v, `"'`)
		}
		kv[k] = v
	}
	return kv
}

type cpuInfo struct {
	model                   string
	sockets, cores, threads int
}

// parseCPUInfo reads /proc/cpuinfo: the model name, and sockets and
// physical cores from the (physical id, core id) pairs when present.
func parseCPUInfo(b []byte) cpuInfo {
	var c cpuInfo
	type core struct{ socket, id string }
	cores := map[core]bool{}
	sockets := map[string]bool{}
	var socket, id string
	flush := func() {
		if id != "" {
			cores[core{socket, id}] = true
		}
		if socket != "" {
			sockets[socket] = true
		}
		socket, id = "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if strings.TrimSpace(sc.Text()) == "" {
				flush()
			}
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			c.threads++
		case "model name", "Model", "cpu model", "Hardware":
			if c.model == "" {
				c.model = v
			}
		case "physical id":
			socket = v
		case "core id":
			id = v
		}
	}
	flush()
	c.cores = len(cores)
	c.sockets = len(sockets)
	if c.sockets == 0 && c.threads > 0 {
		c.sockets = 1
	}
	return c
}

// countCPUList counts the CPUs of a list such as "0-3,6".
func countCPUList(s string) int {
	n := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}

func parseMemTotal(b []byte) int64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// selected returns the bracketed choice of a sysfs selection file:
// "always [madvise] never" → "madvise".
func selected(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

func inContainer() bool {
	if _, err := os.Stat("/.dockerenv"); err == nil {
		return true
	}
	if _, err := os.Stat("/run/.containerenv"); err == nil {
		return true
	}
	s, err := procfs.Cgroup(1)
	if err != nil {
		return false
	}
	return strings.Contains(s, "/docker/") || strings.Contains(s, "/kubepods") || strings.Contains(s, "/lxc/") || strings.Contains(s, "containerd")
}

// tool is one version probe.
type tool struct {
	name string
	argv []string
}

var tools = []tool{
	{"wrk", []string{"wrk", "-v"}},
	{"nginx", []string{"nginx", "-v"}},
	{"apache2", []string{"apache2", "-v"}},
	{"httpd", []string{"httpd", "-v"}},
}

// toolVersions probes the tools concurrently; each probe is bounded by
// ToolTimeout.
func toolVersions(ctx context.Context) map[string]string {
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	set := func(k, v string) {
		if v == "" {
			return
		}
		mu.Lock()
		out[k] = v
		mu.Unlock()
	}
	for _, t := range tools {
		path := lookTool(t.argv[0])
		if path == "" {
			continue
		}
		wg.Go(func() {
			tctx, cancel := context.WithTimeout(ctx, ToolTimeout)
			defer cancel()
			// Some tools print their version and exit 1 (old wrk): keep
			// the output whatever the status.
			v, _ := ServiceVersion(tctx, append([]string{path}, t.argv[1:]...))
			set(t.name, versionLine(v))
		})
	}
	wg.Go(func() {
		tctx, cancel := context.WithTimeout(ctx, ToolTimeout)
		defer cancel()
		set("docker", dockerVersion(tctx))
	})
	wg.Wait()
	return out
}

// lookTool finds a tool in PATH or in the sbin folders (not in a normal
// user's PATH on Debian).
func lookTool(name string) string {
	if p, err := execLookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// versionLine keeps the first line, which carries the version for every
// probed tool ("wrk 4.1.0 [epoll] …", "nginx version: nginx/1.22.1",
// "Server version: Apache/2.4.62 (Debian)").
func versionLine(out string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(first)
}

var errNoDocker = errors.New("no docker")

// parseLoadAvg reads the three load averages of /proc/loadavg
// ("0.41 0.52 0.60 1/230 21895"); nil when they do not parse.
func parseLoadAvg(b []byte) []float64 {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		out[i] = v
	}
	return out
}
