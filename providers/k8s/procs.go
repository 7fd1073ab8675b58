package k8s

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/providers"
)

// Processes reports the host processes of the service's containers when the
// cluster's node is this machine (kind, k3s, minikube with the docker
// driver…): each process whose /proc/<pid>/cgroup names one of the pods'
// container ids. On a remote node it returns none, so collect steps fall
// back to their process names.
func (d *Deployment) Processes(ctx context.Context) ([]providers.Process, error) {
	pods, err := d.pods(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok && len(id) >= 12 {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	root := d.p.procRoot
	if root == "" {
		root = "/proc"
	}
	procs := containerProcesses(root, ids, "service")
	// The pods run here, so the ingress controller most likely does too.
	if len(procs) > 0 && d.p.cfg.Expose == ExposeIngress {
		procs = append(procs, namedProcesses(root, d.p.cfg.IngressProcesses, "infra")...)
	}
	return procs, nil
}

// namedProcesses scans root (a /proc) for processes whose comm or argv[0]'s
// base name is one of names (a comm is at most 15 bytes: a longer name
// matches its first 15).
func namedProcesses(root string, names []string, role string) []providers.Process {
	if len(names) == 0 {
		return nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []providers.Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "comm"))
		if err != nil {
			continue
		}
		comm := strings.TrimSpace(string(b))
		argv0 := ""
		if cl, err := os.ReadFile(filepath.Join(root, e.Name(), "cmdline")); err == nil {
			a, _, _ := strings.Cut(string(cl), "\x00")
			argv0 = filepath.Base(a)
		}
		for _, n := range names {
			short := n
			if len(short) > 15 {
				short = short[:15]
			}
			if comm == short || argv0 == n {
				out = append(out, providers.Process{PID: pid, Name: n, Role: role})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// containerProcesses scans root (a /proc) for processes whose cgroup path
// contains one of the container ids.
func containerProcesses(root string, ids []string, role string) []providers.Process {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []providers.Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		cg, err := os.ReadFile(filepath.Join(root, e.Name(), "cgroup"))
		if err != nil {
			continue // exited, or not ours to read
		}
		match := false
		for _, id := range ids {
			if strings.Contains(string(cg), id) {
				match = true
				break
			}
		}
		if !match {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(root, e.Name(), "comm"))
		if err != nil {
			continue
		}
		out = append(out, providers.Process{PID: pid, Name: strings.TrimSpace(string(comm)), Role: role})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
