package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/engine/procfs"
	"github.com/benchflow/benchflow/providers"
)

// Process roles reported by Processes.
const (
	RoleService = "service"
	RoleInfra   = "infra"
)

// Processes lists the container's processes as host pids (role "service"),
// and, when the engine runs on this machine, the
// processes that carry its traffic and manage it (role "infra"): the
// docker-proxy processes of its published ports, dockerd, and the
// containerd-shim of this container.
//
// Collect calls it every sample, so when the engine is local it reads the
// container's cgroup.procs (found once from the container's first process)
// instead of asking the engine, whose `top` would run ps inside dockerd and
// show up in dockerd's CPU; and the infrastructure pids are found once and
// scanned for again only when one of them is gone.
func (d *Deployment) Processes(ctx context.Context) ([]providers.Process, error) {
	var out []providers.Process
	if pids, ok := d.cgroupPIDs(); ok {
		for _, pid := range pids {
			out = append(out, providers.Process{PID: pid, Name: procComm(pid), Role: RoleService})
		}
	} else {
		var err error
		if out, err = d.topProcesses(ctx); err != nil {
			return nil, err
		}
	}
	if d.local {
		out = append(out, d.cachedInfra()...)
	}
	return out, nil
}

// topProcesses asks the engine (`docker top`).
func (d *Deployment) topProcesses(ctx context.Context) ([]providers.Process, error) {
	top, err := d.cli.ContainerTop(ctx, d.id, nil)
	if err != nil {
		return nil, fmt.Errorf("listing processes of %s: %w", d.name, unavailable(err))
	}
	pidCol, cmdCol := -1, -1
	for i, t := range top.Titles {
		switch t {
		case "PID":
			pidCol = i
		case "CMD", "COMMAND":
			cmdCol = i
		}
	}
	if pidCol < 0 {
		return nil, fmt.Errorf("listing processes of %s: the engine's top output has no PID column (titles %q)", d.name, top.Titles)
	}
	var out []providers.Process
	for _, row := range top.Processes {
		if pidCol >= len(row) {
			continue
		}
		pid, err := strconv.Atoi(row[pidCol])
		if err != nil {
			continue
		}
		name := ""
		if d.local {
			name = procComm(pid)
		}
		if name == "" && cmdCol >= 0 && cmdCol < len(row) {
			name = filepath.Base(strings.Fields(row[cmdCol] + " ?")[0])
		}
		out = append(out, providers.Process{PID: pid, Name: name, Role: RoleService})
	}
	return out, nil
}

// cgroupPIDs reads the pids of the container's cgroup. ok is false when the
// cgroup cannot be found or read (remote engine, no /sys/fs/cgroup).
func (d *Deployment) cgroupPIDs() (pids []int, ok bool) {
	d.procMu.Lock()
	if d.procsFile == "" && d.local && d.initPID > 0 {
		d.procsFile = findProcsFile("/sys/fs/cgroup", d.initPID)
	}
	file := d.procsFile
	d.procMu.Unlock()
	if file == "" {
		return nil, false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, len(pids) > 0
}

// findProcsFile returns the cgroup.procs file (under cgroupRoot) of pid's
// cgroup, or "": the v1 pids (or cpu) hierarchy, else the unified one.
func findProcsFile(cgroupRoot string, pid int) string {
	cg, err := procfs.Cgroup(pid)
	if err != nil {
		return ""
	}
	var candidates []string
	for _, line := range strings.Split(strings.TrimSpace(cg), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[2] == "/" {
			continue
		}
		path := parts[2]
		if parts[0] == "0" && parts[1] == "" {
			candidates = append(candidates,
				filepath.Join(cgroupRoot, path, "cgroup.procs"),
				filepath.Join(cgroupRoot, "unified", path, "cgroup.procs"))
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			switch c {
			case "pids", "cpu", "cpuacct":
				// Prepended: a v1 controller hierarchy is preferred.
				candidates = append([]string{filepath.Join(cgroupRoot, parts[1], path, "cgroup.procs")}, candidates...)
			}
		}
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}

// cachedInfra returns the infrastructure processes, scanning /proc again
// only when one found earlier has exited.
func (d *Deployment) cachedInfra() []providers.Process {
	d.procMu.Lock()
	defer d.procMu.Unlock()
	stale := d.infra == nil
	for _, p := range d.infra {
		if !procfs.Alive(p.PID) {
			stale = true
			break
		}
	}
	if stale {
		d.infra = d.infraProcesses()
	}
	return append([]providers.Process(nil), d.infra...)
}

// infraProcesses scans /proc (procfs) for docker-proxy processes of this
// container's published ports, dockerd and this container's shim.
func (d *Deployment) infraProcesses() []providers.Process {
	pids, err := procfs.PIDs("")
	if err != nil {
		return nil
	}
	var out []providers.Process
	for _, pid := range pids {
		comm := procComm(pid)
		switch {
		case comm == "dockerd":
			out = append(out, providers.Process{PID: pid, Name: "dockerd", Role: RoleInfra})
		case comm == "docker-proxy":
			if d.proxyMatches(cmdline(pid)) {
				out = append(out, providers.Process{PID: pid, Name: "docker-proxy", Role: RoleInfra})
			}
		case strings.HasPrefix(comm, "containerd-shim"):
			if d.id != "" && hasArgPair(cmdline(pid), "-id", d.id) {
				out = append(out, providers.Process{PID: pid, Name: "containerd-shim", Role: RoleInfra})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// proxyMatches reports whether a docker-proxy command line
// ("-proto tcp -host-ip 127.0.0.1 -host-port 18080 -container-ip 172.17.0.2
// -container-port 80") forwards one of this container's published ports.
func (d *Deployment) proxyMatches(args []string) bool {
	if d.containerIP != "" && !hasArgPair(args, "-container-ip", d.containerIP) {
		return false
	}
	for _, p := range d.published {
		if p.host != 0 && hasArgPair(args, "-host-port", strconv.Itoa(p.host)) &&
			hasArgPair(args, "-container-port", p.container.Port()) {
			return true
		}
	}
	return false
}

func hasArgPair(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// procComm is pid's name, "" when it is gone.
func procComm(pid int) string {
	comm, _ := procfs.Comm(pid)
	return comm
}

// cmdline is pid's arguments, nil when it is gone.
func cmdline(pid int) []string {
	argv, _ := procfs.Cmdline(pid)
	return argv
}

func sortStrings(s []string) { sort.Strings(s) }
