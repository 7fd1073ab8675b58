package envinfo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchflow/benchflow/engine/procfs/procfstest"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUserlandProxy(t *testing.T) {
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	daemon := filepath.Join(root, "daemon.json")
	procfstest.Root(t, proc)
	writeFile(t, filepath.Join(proc, "7", "comm"), "sshd\n")
	writeFile(t, filepath.Join(proc, "7", "cmdline"), "sshd\x00")
	if got := userlandProxy(daemon); got != "" {
		t.Errorf("no dockerd: %q, want empty", got)
	}
	writeFile(t, filepath.Join(proc, "42", "comm"), "dockerd\n")
	writeFile(t, filepath.Join(proc, "42", "cmdline"), "/usr/sbin/dockerd\x00-H\x00fd://\x00")
	if got := userlandProxy(daemon); got != "true" {
		t.Errorf("default: %q, want true", got)
	}
	writeFile(t, daemon, `{"storage-driver": "overlay2", "userland-proxy": false}`)
	if got := userlandProxy(daemon); got != "false" {
		t.Errorf("daemon.json false: %q", got)
	}
	writeFile(t, filepath.Join(proc, "42", "cmdline"), "/usr/sbin/dockerd\x00--userland-proxy=true\x00")
	if got := userlandProxy(daemon); got != "true" {
		t.Errorf("flag over daemon.json: %q, want true", got)
	}
}

func TestExplainingFiles(t *testing.T) {
	root := t.TempDir()
	cg := filepath.Join(root, "cgroup")
	if got := cgroupVersion(cg); got != "" {
		t.Errorf("missing root: %q", got)
	}
	writeFile(t, filepath.Join(cg, "cpu", "tasks"), "")
	if got := cgroupVersion(cg); got != "1" {
		t.Errorf("v1: %q", got)
	}
	writeFile(t, filepath.Join(cg, "unified", "cgroup.controllers"), "")
	if got := cgroupVersion(cg); got != "hybrid" {
		t.Errorf("hybrid: %q", got)
	}
	writeFile(t, filepath.Join(cg, "cgroup.controllers"), "cpu io memory\n")
	if got := cgroupVersion(cg); got != "2" {
		t.Errorf("v2: %q", got)
	}
	if got := seccompMode("2"); got != "filter" {
		t.Errorf("seccomp %q", got)
	}
	vul := filepath.Join(root, "vulnerabilities")
	writeFile(t, filepath.Join(vul, "meltdown"), "Mitigation: PTI\n")
	writeFile(t, filepath.Join(vul, "mds"), "Not affected\n")
	got := readDirLines(vul)
	if len(got) != 2 || got["meltdown"] != "Mitigation: PTI" || got["mds"] != "Not affected" {
		t.Errorf("vulnerabilities %v", got)
	}
	if v := cpuinfoMHz([]byte("processor\t: 0\ncpu MHz\t\t: 2199.998\n")); v != 2199.998 {
		t.Errorf("cpu MHz %v", v)
	}
}

// TestCollectExplainingHere: on this machine the vulnerabilities and the
// cgroup version are readable, and with a Docker engine its storage
// driver is recorded, in the JSON form the manifest keeps.
func TestCollectExplainingHere(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/cpu/vulnerabilities"); err != nil {
		t.Skip("no /sys/devices/system/cpu/vulnerabilities")
	}
	e := Collect(context.Background(), "test")
	if len(e.Vulnerabilities) == 0 || e.CgroupVersion == "" || e.Seccomp == "" {
		t.Errorf("explaining fields: %+v", e.Explaining)
	}
	m := e.Map()
	if _, ok := m["cpu_vulnerabilities"]; !ok {
		t.Errorf("environment map lacks cpu_vulnerabilities: %v", m)
	}
	if _, ok := e.Tools["docker"]; ok && e.DockerStorageDriver == "" {
		t.Error("a Docker engine answers but its storage driver is not recorded")
	}
	t.Logf("%+v", e.Explaining)
}
