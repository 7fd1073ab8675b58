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
	return containerProcesses(root, ids, "service"), nil
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
