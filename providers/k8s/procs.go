package k8s

import (
	"context"
	"path/filepath"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/procfs"
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
	procs := containerProcesses(ids, "service")
	// The pods run here, so the ingress controller most likely does too.
	if len(procs) > 0 && d.p.cfg.Expose == ExposeIngress {
		procs = append(procs, namedProcesses(d.p.cfg.IngressProcesses, "infra")...)
	}
	return procs, nil
}

// namedProcesses scans /proc (procfs) for processes whose comm or
// argv[0]'s base name is one of names (a comm is at most 15 bytes: a
// longer name matches its first 15).
func namedProcesses(names []string, role string) []providers.Process {
	if len(names) == 0 {
		return nil
	}
	pids, err := procfs.PIDs("")
	if err != nil {
		return nil
	}
	var out []providers.Process
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		comm, err := procfs.Comm(pid)
		if err != nil {
			continue
		}
		argv0 := ""
		if argv, err := procfs.Cmdline(pid); err == nil {
			a := ""
			if len(argv) > 0 {
				a = argv[0]
			}
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

// containerProcesses scans /proc (procfs) for processes whose cgroup path
// contains one of the container ids.
func containerProcesses(ids []string, role string) []providers.Process {
	pids, err := procfs.PIDs("")
	if err != nil {
		return nil
	}
	var out []providers.Process
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		cg, err := procfs.Cgroup(pid)
		if err != nil {
			continue // exited, or not ours to read
		}
		match := false
		for _, id := range ids {
			if strings.Contains(cg, id) {
				match = true
				break
			}
		}
		if !match {
			continue
		}
		comm, err := procfs.Comm(pid)
		if err != nil {
			continue
		}
		out = append(out, providers.Process{PID: pid, Name: comm, Role: role})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
