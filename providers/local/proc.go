package local

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"fmt"
	"os"
	"sort"
	"strconv"
)

// proc is one line of the process table.
type proc struct {
	pid, ppid, pgid, sid int
	state                byte // R, S, D, Z, …
	comm                 string
	start                uint64 // start time in clock ticks after boot; 0 if unknown
}

// readProc parses /proc/<pid>/stat.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile(procfs.Path(pid, "stat"))
	if err != nil {
		return proc{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (proc, error) {
	l, err := procfs.Split(b)
	if err != nil {
		return proc{}, fmt.Errorf("parsing %q: no command name", b)
	}
	pid, err := l.Int(1)
	if err != nil {
		return proc{}, fmt.Errorf("parsing %q: %w", b, err)
	}
	if l.Fields() < 4 || l.State() == 0 {
		return proc{}, fmt.Errorf("parsing %q: too few fields", b)
	}
	p := proc{pid: pid, state: l.State(), comm: l.Comm()}
	for i, dst := range []*int{&p.ppid, &p.pgid, &p.sid} {
		if *dst, err = l.Int(i + 4); err != nil {
			return proc{}, fmt.Errorf("parsing %q: %w", b, err)
		}
	}
	if l.Has(22) { // field 22 of stat(5)
		if p.start, err = strconv.ParseUint(string(l.Field(22)), 10, 64); err != nil {
			return proc{}, fmt.Errorf("parsing %q: start time: %w", b, err)
		}
	}
	return p, nil
}

// processTable reads every process. Processes that exit while it reads are
// skipped (their stat file is the only one read, and it is readable by
// everyone while the process exists).
func processTable() ([]proc, error) {
	pids, err := procfs.PIDs("")
	if err != nil {
		return nil, fmt.Errorf("reading the process table: %w", err)
	}
	out := make([]proc, 0, len(pids))
	for _, pid := range pids {
		p, err := readProc(pid)
		if err != nil {
			continue // exited while we read the table
		}
		out = append(out, p)
	}
	return out, nil
}

// group returns the live (non-zombie) processes that belong to the service
// led by leader: its process group, plus every descendant of those
// processes (a child that moved to a group or session of its own is still
// the service's while its parent lives). The leader comes first, then
// ascending pids.
func group(table []proc, leader int) []proc {
	children := map[int][]int{}
	byPid := make(map[int]proc, len(table))
	in := map[int]bool{}
	var queue []int
	for _, p := range table {
		byPid[p.pid] = p
		children[p.ppid] = append(children[p.ppid], p.pid)
		if p.pgid == leader || p.pid == leader {
			in[p.pid] = true
			queue = append(queue, p.pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !in[c] {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
	var out []proc
	for pid := range in {
		if p := byPid[pid]; p.state != 'Z' {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].pid == leader) != (out[j].pid == leader) {
			return out[i].pid == leader
		}
		return out[i].pid < out[j].pid
	})
	return out
}
