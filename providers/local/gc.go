package local

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"github.com/benchflow/benchflow/providers"

	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GC stops the service processes a crashed run left behind: every process
// whose environment holds BENCHFLOW_RUN (equal to runID when runID is not
// empty) and BENCHFLOW_SERVICE and whose benchflow (BENCHFLOW_OWNER) is no
// longer running — the services of a live run, in this process or another,
// are never touched — except benchflow itself and its own process group, and the rest of its process group when the group's leader is
// such a process or gone. They get SIGTERM, and SIGKILL two seconds later. It returns one line per process found. Processes of other users
// are only visible to root.
func GC(ctx context.Context, req *providers.GCRequest) ([]string, error) {
	runID := req.RunID
	table, err := processTable()
	if err != nil {
		return nil, fmt.Errorf("collecting local processes: %w", err)
	}
	self := os.Getpid()
	selfPgid := syscall.Getpgrp()
	selfNS, _ := procfs.Namespace(self, "pid")
	alive := map[int]bool{}
	for _, p := range table {
		if p.state != 'Z' {
			alive[p.pid] = true
		}
	}
	marked := map[int]bool{}
	groups := map[int]bool{}
	var found []string
	for _, p := range table {
		if p.pid == self || p.pgid == selfPgid || p.state == 'Z' {
			continue
		}
		// A process of another pid namespace (a run reproduce confines:
		// its owner's pid is that namespace's, not one this process can
		// look up) is never a leftover of this machine's runs: the
		// namespace ends, with everything in it, when its run does.
		if ns, err := procfs.Namespace(p.pid, "pid"); err == nil && selfNS != "" && ns != selfNS {
			continue
		}
		run, ok := environValue(p.pid, EnvRun)
		svc, ok2 := environValue(p.pid, EnvService)
		if !ok || !ok2 || (runID != "" && run != runID) {
			continue
		}
		if owner, _ := environValue(p.pid, EnvOwner); ownerAlive(owner) {
			continue // its benchflow still runs: not a leftover
		}
		found = append(found, fmt.Sprintf("process %d (%s) of service %q, run %s", p.pid, p.comm, svc, run))
		marked[p.pid] = true
		groups[p.pgid] = true
	}
	// A group is the service's when its leader is marked or gone (killed
	// with benchflow by Pdeathsig): its unmarked members are then workers
	// that dropped the environment (nginx does).
	for g := range groups {
		if alive[g] && !marked[g] {
			delete(groups, g)
		}
	}
	for pid := range marked {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	for g := range groups {
		syscall.Kill(-g, syscall.SIGTERM)
	}
	if len(found) == 0 {
		return nil, nil
	}
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	for pid := range marked {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for g := range groups {
		syscall.Kill(-g, syscall.SIGKILL)
	}
	return found, nil
}

// owner identifies this benchflow process for EnvOwner: "pid:start time".
var owner = func() string {
	p, err := readProc(os.Getpid())
	if err != nil {
		return strconv.Itoa(os.Getpid()) + ":0"
	}
	return fmt.Sprintf("%d:%d", p.pid, p.start)
}()

// ownerAlive reports whether the benchflow process named by an EnvOwner
// value still runs (the same pid with the same start time).
func ownerAlive(v string) bool {
	pidStr, startStr, ok := strings.Cut(v, ":")
	if !ok {
		return false
	}
	pid, err1 := strconv.Atoi(pidStr)
	start, err2 := strconv.ParseUint(startStr, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	p, err := readProc(pid)
	return err == nil && p.state != 'Z' && p.start == start
}

// environValue reads one variable of a process's environment.
func environValue(pid int, key string) (string, bool) {
	b, err := os.ReadFile(procfs.Path(pid, "environ"))
	if err != nil {
		return "", false
	}
	prefix := []byte(key + "=")
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}
