package collect

import "testing"

func TestContainerOf(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct{ cgroup, want string }{
		{"0::/\n", ""},
		{"4:memory:/process_api/9fcc273ef47d9c7a093ee36d2afd86c6\n0::/\n", ""},
		{"12:pids:/docker/" + id + "\n1:name=systemd:/docker/" + id + "\n", "docker:0123456789ab"},
		{"0::/system.slice/docker-" + id + ".scope\n", "docker:0123456789ab"},
		{"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234.slice/cri-containerd-" + id + ".scope\n", "k8s:0123456789ab"},
		{"3:cpu,cpuacct:/kubepods/burstable/pod5678/" + id + "\n", "k8s:0123456789ab"},
		{"0::/machine.slice/libpod-" + id + ".scope\n", "libpod:0123456789ab"},
		{"0::/system.slice/crio-" + id + ".scope\n", "crio:0123456789ab"},
		{"0::/default/" + id + "\n", "containerd:0123456789ab"},
		{"0::/nomad.slice/6f1f0a4c-3b2d-4f5e-9a8b-1c2d3e4f5a6b.web.scope\n", "nomad:6f1f0a4c.web"},
		{"5:cpu:/nomad/6f1f0a4c-3b2d-4f5e-9a8b-1c2d3e4f5a6b-web\n", "nomad:6f1f0a4c.web"},
		{"0::/lxc.payload.c1/init.scope\n", "lxc:c1"},
		{"garbage\n\n", ""},
	} {
		if got := containerOf([]byte(c.cgroup)); got != c.want {
			t.Errorf("containerOf(%q) = %q, want %q", c.cgroup, got, c.want)
		}
	}
}

func TestInfraMatcher(t *testing.T) {
	m := newInfraMatcher([]string{"my-gateway", "kube-controller-manager", "k3s*"})
	for name, want := range map[string]bool{
		"my-gateway": true, "kube-controller": true, "k3s-server": true,
		"dockerd": false, "docker-proxy": false, "fuse-overlayfs": false, "nginx": false, "k8s": false,
	} {
		if got := m.match(name); got != want {
			t.Errorf("match(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestIsKernelThread(t *testing.T) {
	if !isKernelThread(12, procStat{ppid: 2}) || !isKernelThread(2, procStat{ppid: 0}) ||
		!isKernelThread(40, procStat{ppid: 0, flags: pfKthread}) || isKernelThread(100, procStat{ppid: 1, flags: 0x400100}) {
		t.Error("kernel thread detection")
	}
}
