package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/go-connections/nat"
	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/procfs/procfstest"
	"github.com/benchflow/benchflow/providers"
)

// fakeProc writes comm and cmdline files like /proc's.
func fakeProc(t *testing.T, root string, pid, comm string, argv ...string) {
	t.Helper()
	dir := filepath.Join(root, pid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(argv, "\x00")+"\x00"), 0o644)
}

func TestInfraProcesses(t *testing.T) {
	root := procfstest.Root(t, "")
	const id = "4b135483bf3b3168544cd01868b790573b4429282a5850b5e36a4ce9fc6b61e7"
	fakeProc(t, root, "1421", "dockerd", "/usr/sbin/dockerd")
	fakeProc(t, root, "22739", "docker-proxy", "/usr/sbin/docker-proxy", "-proto", "tcp", "-host-ip", "127.0.0.1", "-host-port", "18080", "-container-ip", "172.17.0.2", "-container-port", "80")
	// Another container's proxy and shim.
	fakeProc(t, root, "22826", "docker-proxy", "/usr/sbin/docker-proxy", "-proto", "tcp", "-host-ip", "127.0.0.1", "-host-port", "18081", "-container-ip", "172.17.0.3", "-container-port", "80")
	fakeProc(t, root, "22839", "containerd-shim", "/usr/bin/containerd-shim-runc-v2", "-namespace", "moby", "-id", "8c47c14980b0", "-address", "/x")
	fakeProc(t, root, "22752", "containerd-shim", "/usr/bin/containerd-shim-runc-v2", "-namespace", "moby", "-id", id, "-address", "/x")
	fakeProc(t, root, "22772", "nginx", "nginx: master process")
	os.MkdirAll(filepath.Join(root, "self"), 0o755)

	d := &Deployment{id: id, containerIP: "172.17.0.2", published: []publishedPort{{name: "http", container: nat.Port("80/tcp"), host: 18080}}}
	got := d.infraProcesses()
	want := []providers.Process{
		{PID: 1421, Name: "dockerd", Role: RoleInfra},
		{PID: 22739, Name: "docker-proxy", Role: RoleInfra},
		{PID: 22752, Name: "containerd-shim", Role: RoleInfra},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("infraProcesses (-want +got):\n%s", d)
	}
}

func TestFindProcsFile(t *testing.T) {
	proc, cg := procfstest.Root(t, ""), t.TempDir()
	const path = "/docker/741ab68e3b0b"
	os.MkdirAll(filepath.Join(proc, "42"), 0o755)
	os.WriteFile(filepath.Join(proc, "42", "cgroup"), []byte("9:name=systemd:"+path+"\n8:pids:"+path+"\n1:cpu,cpuacct:"+path+"\n0::"+path+"\n"), 0o644)
	if got := findProcsFile(cg, 42); got != "" {
		t.Errorf("no cgroup files yet: got %q", got)
	}
	unified := filepath.Join(cg, path, "cgroup.procs")
	os.MkdirAll(filepath.Dir(unified), 0o755)
	os.WriteFile(unified, []byte("42\n"), 0o644)
	if got := findProcsFile(cg, 42); got != unified {
		t.Errorf("v2: got %q, want %q", got, unified)
	}
	v1 := filepath.Join(cg, "pids", path, "cgroup.procs")
	os.MkdirAll(filepath.Dir(v1), 0o755)
	os.WriteFile(v1, []byte("42\n"), 0o644)
	if got := findProcsFile(cg, 42); got != v1 {
		t.Errorf("v1 pids preferred: got %q, want %q", got, v1)
	}
	if got := findProcsFile(cg, 7); got != "" {
		t.Errorf("unknown pid: got %q", got)
	}
}
