package envinfo

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/procfs"
	"github.com/google/go-cmp/cmp"
)

func TestCollectThisMachine(t *testing.T) {
	e := Collect(context.Background(), "1.2.3")
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	if e.KernelRelease != strings.TrimSpace(string(rel)) || e.KernelName != "Linux" {
		t.Errorf("kernel %q %q, want Linux %q", e.KernelName, e.KernelRelease, strings.TrimSpace(string(rel)))
	}
	if e.CPUThreads < 1 || e.CPUCores < 1 || e.CPUCores > e.CPUThreads || e.AllowedCPUs < 1 || e.MemoryBytes <= 0 {
		t.Errorf("cpu/memory: %+v", e)
	}
	if e.THP == "" || strings.ContainsAny(e.THP, "[] ") {
		t.Errorf("THP %q", e.THP)
	}
	somax, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err == nil && e.Sysctls["net.core.somaxconn"] != strings.TrimSpace(string(somax)) {
		t.Errorf("somaxconn %q, want %q", e.Sysctls["net.core.somaxconn"], somax)
	}
	if e.BenchflowVersion != "1.2.3" || !strings.HasPrefix(e.GoVersion, "go") {
		t.Errorf("versions %q %q", e.BenchflowVersion, e.GoVersion)
	}
	if b, err := hex.DecodeString(e.Fingerprint); err != nil || len(b) != 32 || e.Fingerprint != e.ComputeFingerprint() {
		t.Errorf("fingerprint %q", e.Fingerprint)
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil && !strings.HasPrefix(e.Tools["nginx"], "nginx version: nginx/") {
		t.Errorf("nginx version %q", e.Tools["nginx"])
	}
	if _, err := exec.LookPath("wrk"); err == nil && !strings.HasPrefix(e.Tools["wrk"], "wrk ") {
		t.Errorf("wrk version %q", e.Tools["wrk"])
	}
	again := Collect(context.Background(), "other")
	if again.Fingerprint != e.Fingerprint {
		t.Errorf("fingerprint not stable: %v", Diff(e, again))
	}
}

// withFixture points the readers at testdata/twosocket.
func withFixture(t *testing.T) {
	t.Helper()
	root, _ := filepath.Abs("testdata/twosocket")
	p, s, o := procfs.Root, sysRoot, osRelease
	procfs.Root, sysRoot, osRelease = filepath.Join(root, "proc"), filepath.Join(root, "sys"), []string{filepath.Join(root, "os-release")}
	t.Cleanup(func() { procfs.Root, sysRoot, osRelease = p, s, o })
}

func TestCollectFixture(t *testing.T) {
	withFixture(t)
	e := Collect(context.Background(), "dev")
	got := struct {
		Model                   string
		Sockets, Cores, Threads int
		Mem                     int64
		Gov, THP, Defrag        string
		Dist, DistID            string
		Somax                   string
	}{e.CPUModel, e.CPUSockets, e.CPUCores, e.CPUThreads, e.MemoryBytes, e.CPUGovernor, e.THP, e.THPDefrag, e.Distribution, e.DistributionID, e.Sysctls["net.core.somaxconn"]}
	want := struct {
		Model                   string
		Sockets, Cores, Threads int
		Mem                     int64
		Gov, THP, Defrag        string
		Dist, DistID            string
		Somax                   string
	}{"Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", 2, 4, 8, 16314028 * 1024, "performance", "always", "madvise", "Ubuntu 24.04.1 LTS", "ubuntu 24.04", "65535"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(e.Sysctls) != 1 {
		t.Errorf("sysctls absent from the fixture were recorded: %v", e.Sysctls)
	}
}

func TestFingerprint(t *testing.T) {
	base := &Environment{
		Hostname: "a", KernelRelease: "6.1.0", Arch: "x86_64", Distribution: "Debian 12",
		CPUModel: "EPYC", CPUSockets: 1, CPUCores: 8, CPUThreads: 16, MemoryBytes: 32 << 30,
		CPUGovernor: "performance", THP: "madvise", Sysctls: map[string]string{"net.core.somaxconn": "4096"},
		GoVersion: "go1.26", Tools: map[string]string{"wrk": "wrk 4.1.0"},
	}
	fp := base.ComputeFingerprint()
	same := []func(e *Environment){
		func(e *Environment) { e.Hostname = "b" },
		func(e *Environment) { e.CollectedAt = time.Now() },
		func(e *Environment) { e.Tools = nil },
		func(e *Environment) { e.GoVersion = "go1.27"; e.BenchflowVersion = "2"; e.GitCommit = "abc" },
		func(e *Environment) { e.MemoryBytes += 100 << 20 }, // rounded to GiB
	}
	for i, f := range same {
		c := clone(base)
		f(c)
		if c.ComputeFingerprint() != fp {
			t.Errorf("change %d altered the fingerprint: %v", i, Diff(base, c))
		}
	}
	differ := map[string]func(e *Environment){
		"kernel_release":        func(e *Environment) { e.KernelRelease = "6.2.0" },
		"cpu_model":             func(e *Environment) { e.CPUModel = "Xeon" },
		"cpu_cores":             func(e *Environment) { e.CPUCores = 4 },
		"memory_gib":            func(e *Environment) { e.MemoryBytes = 64 << 30 },
		"distribution":          func(e *Environment) { e.Distribution = "Ubuntu" },
		"cpu_governor":          func(e *Environment) { e.CPUGovernor = "powersave" },
		"transparent_hugepages": func(e *Environment) { e.THP = "always" },
		"net.core.somaxconn":    func(e *Environment) { e.Sysctls = map[string]string{"net.core.somaxconn": "128"} },
		"net.ipv4.tcp_tw_reuse": func(e *Environment) {
			e.Sysctls = map[string]string{"net.core.somaxconn": "4096", "net.ipv4.tcp_tw_reuse": "1"}
		},
	}
	for field, f := range differ {
		c := clone(base)
		f(c)
		if c.ComputeFingerprint() == fp {
			t.Errorf("changing %s kept the fingerprint", field)
		}
		d := Diff(base, c)
		if len(d) != 1 || !strings.HasPrefix(d[0], field+": ") {
			t.Errorf("Diff after changing %s = %q", field, d)
		}
	}
	if d := Diff(base, clone(base)); len(d) != 0 {
		t.Errorf("Diff of equal environments = %q", d)
	}
}

func clone(e *Environment) *Environment {
	c, err := FromMap(e.Map())
	if err != nil {
		panic(err)
	}
	return c
}

func TestMapRoundTrip(t *testing.T) {
	e := Collect(context.Background(), "dev")
	m := e.Map()
	if m["fingerprint"] != e.Fingerprint {
		t.Errorf("map fingerprint %v", m["fingerprint"])
	}
	back, err := FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(e, back); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := FromMap(map[string]any{"cpu_cores": "eight"}); err == nil {
		t.Error("bad map accepted")
	}
}

func TestParsers(t *testing.T) {
	for in, want := range map[string]string{"always [madvise] never\n": "madvise", "[never]": "never", "plain\n": "plain"} {
		if got := selected(in); got != want {
			t.Errorf("selected(%q) = %q", in, got)
		}
	}
	for in, want := range map[string]int{"0": 1, "0-3": 4, "0-3,6,8-9": 7, "x": 0, "3-1": 0} {
		if got := countCPUList(in); got != want {
			t.Errorf("countCPUList(%q) = %d, want %d", in, got, want)
		}
	}
	// An ARM board without physical ids: one socket, cores = threads
	// (filled by Collect).
	c := parseCPUInfo([]byte("processor\t: 0\nBogoMIPS\t: 50\n\nprocessor\t: 1\n\nHardware\t: BCM2835\n"))
	if c.threads != 2 || c.cores != 0 || c.sockets != 1 || c.model != "BCM2835" {
		t.Errorf("arm cpuinfo: %+v", c)
	}
	if got := parseMemTotal([]byte("MemFree: 1 kB\nMemTotal: 2048 kB\n")); got != 2048*1024 {
		t.Errorf("MemTotal = %d", got)
	}
	kv := parseOSRelease([]byte("ID=debian\nPRETTY_NAME=\"Debian \\\"x\\\"\"\nVERSION_ID='12'\n"))
	if kv["ID"] != "debian" || kv["PRETTY_NAME"] != `Debian "x"` || kv["VERSION_ID"] != "12" {
		t.Errorf("os-release: %v", kv)
	}
}

func TestServiceVersion(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		out, err := ServiceVersion(context.Background(), []string{"/usr/sbin/nginx", "-V"})
		if err != nil || !strings.HasPrefix(out, "nginx version: nginx/") || !strings.Contains(out, "configure arguments:") {
			t.Errorf("nginx -V = %q, %v", out, err)
		}
	}
	out, err := ServiceVersion(context.Background(), []string{"sh", "-c", "echo '  v1.0'; echo details >&2; exit 3"})
	if out != "v1.0\ndetails" {
		t.Errorf("output %q", out)
	}
	if err == nil || !strings.Contains(err.Error(), `running version command "sh -c`) || !strings.Contains(err.Error(), "exit status 3: v1.0") {
		t.Errorf("err = %v", err)
	}
	if _, err := ServiceVersion(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "empty command") {
		t.Errorf("empty argv: %v", err)
	}
	if _, err := ServiceVersion(context.Background(), []string{"/nonexistent/benchflow-version"}); err == nil {
		t.Error("missing command succeeded")
	}
}

// TestServiceVersionTimeout: a command that hangs is killed with its
// children, and the error says why.
func TestServiceVersionTimeout(t *testing.T) {
	marker := "30.4242"
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := ServiceVersion(ctx, []string{"sh", "-c", "sleep " + marker + "; echo never"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if pids := pidsWithArg(marker); len(pids) > 0 {
		t.Errorf("processes left behind: %v", pids)
	}
}

// TestHangingToolDoesNotFailCollect puts a wrk that never answers first
// in PATH: Collect still returns, without a wrk version, and kills it.
func TestHangingToolDoesNotFailCollect(t *testing.T) {
	dir := t.TempDir()
	marker := "31.4242"
	script := "#!/bin/sh\nsleep " + marker + "\n"
	if err := os.WriteFile(filepath.Join(dir, "wrk"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	old := ToolTimeout
	ToolTimeout = 200 * time.Millisecond
	t.Cleanup(func() { ToolTimeout = old })
	e := Collect(context.Background(), "dev")
	if v, ok := e.Tools["wrk"]; ok {
		t.Errorf("hanging wrk reported version %q", v)
	}
	if e.Fingerprint == "" {
		t.Error("no fingerprint")
	}
	if pids := pidsWithArg(marker); len(pids) > 0 {
		t.Errorf("processes left behind: %v", pids)
	}
}

func pidsWithArg(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

func ExampleDiff() {
	a := &Environment{KernelRelease: "6.1.0", CPUModel: "EPYC", CPUCores: 8, Sysctls: map[string]string{"net.core.somaxconn": "4096"}}
	b := &Environment{KernelRelease: "6.1.0", CPUModel: "EPYC", CPUCores: 8, Sysctls: map[string]string{"net.core.somaxconn": "128"}}
	for _, d := range Diff(a, b) {
		fmt.Println(d)
	}
	// Output: net.core.somaxconn: 4096 → 128
}
