package k8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestProcesses lays out a /proc as a node on this host shows it: the
// container's processes carry its id in their cgroup path (cgroup v2 with
// the systemd driver, as kind and k3s use), others do not.
func TestProcesses(t *testing.T) {
	s := newSim(t, podsReady)
	p, _ := testProvider(t, s.cs, Config{Expose: ExposeNodePort})
	p.procRoot = t.TempDir()
	d, err := p.Provision(context.Background(), nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.Background())

	id := containerID("nginx-0")
	proc := func(pid int, comm, cgroup string) {
		dir := filepath.Join(p.procRoot, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644)
	}
	pod := "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod1234.slice/cri-containerd-" + id + ".scope\n"
	proc(4101, "nginx", pod)
	proc(4102, "nginx", pod)
	proc(900, "containerd", "0::/system.slice/containerd.service\n")
	proc(77, "nginx", "0::/user.slice/user-1000.slice/session-2.scope\n") // the host's own nginx
	os.MkdirAll(filepath.Join(p.procRoot, "self"), 0o755)

	ps, err := d.(*Deployment).Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ps); got != "[{4101 nginx service} {4102 nginx service}]" {
		t.Errorf("Processes = %s, want the two nginx processes of the pod's container", got)
	}
}
