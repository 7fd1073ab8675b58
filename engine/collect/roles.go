package collect

import (
	"bytes"
	"strings"
)

// Roles the whole-machine accounting gives to processes no provider
// reported and no relation ties to the run (besides RoleLoader and
// RoleInfra, see relation.go).
const (
	RoleKernel = "kernel" // kernel threads (ksoftirqd, kworker, …)
	RoleOther  = "other"  // everything else
)

// ContainerEngines are the names (comm) of the container engines and
// their runtimes: infrastructure of a trial that deploys containers (a
// provider reported a container of it, or one of its processes runs in
// one), and other processes in any other trial — a local-only run is not
// charged for the Docker engine a neighbour keeps busy.
var ContainerEngines = []string{"dockerd", "containerd", "runc", "rootlesskit", "slirp4netns", "vpnkit"}

// Helpers of one container, the run's only by relation to the run's
// containers (relation.go): never by name.
const (
	commDockerProxy = "docker-proxy"
	commShim        = "containerd-shim" // comm of containerd-shim-runc-v2 too (15 bytes)
	commFuseOverlay = "fuse-overlayfs"
)

// infraMatcher matches process names against a list of names (exact, or
// a prefix ending in "*").
type infraMatcher struct {
	exact    map[string]bool
	prefixes []string
}

func newInfraMatcher(names []string) *infraMatcher {
	m := &infraMatcher{exact: map[string]bool{}}
	for _, n := range names {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			m.prefixes = append(m.prefixes, p)
			continue
		}
		m.exact[n] = true
		if len(n) > 15 {
			m.exact[n[:15]] = true // as comm shows it
		}
	}
	return m
}

func (m *infraMatcher) match(comm string) bool {
	if m.exact[comm] {
		return true
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(comm, p) {
			return true
		}
	}
	return false
}

// isKernelThread: the PF_KTHREAD flag, or a child of kthreadd (pid 2).
func isKernelThread(pid int, st procStat) bool {
	return st.flags&pfKthread != 0 || st.ppid == 2 || pid == 2
}

// containerOf names the container a process runs in from its
// /proc/PID/cgroup: "docker:<id12>", "k8s:<id12>", "containerd:<id12>",
// "crio:<id12>", "libpod:<id12>", "lxc:<name>", "nomad:<alloc8>.<task>",
// or "" for a process of the host. The first line whose path names a
// container wins (v1 hierarchies and the v2 "0::" line carry the same
// path for containers).
func containerOf(cgroup []byte) string {
	for len(cgroup) > 0 {
		i := bytes.IndexByte(cgroup, '\n')
		line := cgroup
		if i >= 0 {
			line, cgroup = cgroup[:i], cgroup[i+1:]
		} else {
			cgroup = nil
		}
		parts := bytes.SplitN(line, []byte(":"), 3)
		if len(parts) != 3 {
			continue
		}
		if c := containerOfPath(string(parts[2])); c != "" {
			return c
		}
	}
	return ""
}

func containerOfPath(path string) string {
	if path == "" || path == "/" {
		return ""
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	kube := false
	for _, s := range segs {
		if strings.HasPrefix(s, "kubepods") {
			kube = true
		}
	}
	for k := len(segs) - 1; k >= 0; k-- {
		s := strings.TrimSuffix(segs[k], ".scope")
		// systemd names: docker-<id>.scope, cri-containerd-<id>.scope,
		// crio-<id>.scope, libpod-<id>.scope.
		kind := ""
		for _, p := range []string{"docker-", "cri-containerd-", "crio-", "libpod-"} {
			if rest, ok := strings.CutPrefix(s, p); ok && isHexID(rest) {
				kind, s = strings.TrimSuffix(strings.TrimPrefix(p, "cri-"), "-"), rest
			}
		}
		if !isHexID(s) {
			continue
		}
		if kind == "" {
			kind = "containerd"
			if k > 0 {
				switch segs[k-1] {
				case "docker":
					kind = "docker"
				case "lxc", "lxc.payload":
					kind = "lxc"
				}
			}
		}
		if kube {
			kind = "k8s"
		}
		return kind + ":" + s[:12]
	}
	for k, s := range segs {
		switch {
		case s == "nomad" && k+1 < len(segs):
			return "nomad:" + nomadTask(segs[k+1])
		case s == "nomad.slice" && k+1 < len(segs):
			return "nomad:" + nomadTask(strings.TrimSuffix(segs[k+1], ".scope"))
		case (s == "lxc" || s == "lxc.payload") && k+1 < len(segs):
			return "lxc:" + segs[k+1]
		case strings.HasPrefix(s, "lxc.payload."):
			return "lxc:" + strings.TrimPrefix(s, "lxc.payload.")
		}
	}
	return ""
}

// nomadTask shortens "<alloc uuid>-<task>" or "<alloc uuid>.<task>" to
// "<first 8 of the alloc>.<task>".
func nomadTask(s string) string {
	if len(s) > 37 && (s[36] == '-' || s[36] == '.') {
		return s[:8] + "." + s[37:]
	}
	return s
}

// isHexID reports a container id: 64 lowercase hex digits.
func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
