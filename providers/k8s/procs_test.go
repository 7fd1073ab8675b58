package k8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/procfs/procfstest"
	"github.com/benchflow/benchflow/providers"
)

// TestProcesses lays out a /proc as a node on this host shows it: the
// container's processes carry its id in their cgroup path (cgroup v2 with
// the systemd driver, as kind and k3s use), others do not.
func TestProcesses(t *testing.T) {
	s := newSim(t, podsReady)
	p, _ := testProvider(t, s.cs, Config{Expose: ExposeNodePort})
	root := procfstest.Root(t, "")
	d, err := p.Provision(context.Background(), nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.Background())

	id := containerID("nginx-0")
	proc := func(pid int, comm, cgroup string) {
		dir := filepath.Join(root, fmt.Sprint(pid))
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
	os.MkdirAll(filepath.Join(root, "self"), 0o755)

	ps, err := d.(*Deployment).Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := procList(ps); got != "[{4101 nginx service} {4102 nginx service}]" {
		t.Errorf("Processes = %s, want the two nginx processes of the pod's container", got)
	}
}

// TestIngressControllerProcesses: with expose = "ingress" and the pods on
// this host, the ingress controller's processes are reported as infra,
// found by comm (truncated to 15 bytes) or argv[0].
func TestIngressControllerProcesses(t *testing.T) {
	s := newSimWith(t, podsReady, func(s *sim) { s.ingressIP = "127.0.0.1" })
	p, _ := testProvider(t, s.cs, Config{Expose: ExposeIngress, IngressAddress: "127.0.0.1:8081"})
	root := procfstest.Root(t, "")
	d, err := p.Provision(context.Background(), nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.Background())
	proc := func(pid int, comm, cgroup, cmdline string) {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644)
		os.WriteFile(filepath.Join(dir, "cmdline"), []byte(cmdline), 0o644)
	}
	pod := "12:cpu,cpuacct:/kubepods/besteffort/pod1234/" + containerID("nginx-0") + "\n"
	proc(4101, "nginx", pod, "nginx\x00-g\x00daemon off;\x00")
	proc(300, "traefik", "0::/\n", "/var/cache/benchflow-cluster/traefik-v3.6.12/bin/traefik\x00--entryPoints.web.address=127.0.0.1:8081\x00")
	proc(301, "nginx-ingress-c", "0::/\n", "/nginx-ingress-controller\x00--publish-service\x00")
	proc(302, "sh", "0::/\n", "/bin/sh\x00-c\x00traefik\x00")

	ps, err := d.(*Deployment).Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := procList(ps); got != "[{4101 nginx service} {300 traefik infra} {301 nginx-ingress-controller infra}]" {
		t.Errorf("Processes = %s, want the pod's nginx and both controllers", got)
	}
}

// procList prints processes as "[{pid name role} …]" (their Host, for
// processes of other hosts, is always empty here).
func procList(ps []providers.Process) string {
	var b strings.Builder
	b.WriteString("[")
	for i, p := range ps {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "{%d %s %s}", p.PID, p.Name, p.Role)
		if p.Host != "" {
			fmt.Fprintf(&b, "@%s", p.Host)
		}
	}
	b.WriteString("]")
	return b.String()
}
