package local

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// procRoot is where the process table is read from.
var procRoot = "/proc"

// proc is one line of the process table.
type proc struct {
	pid, ppid, pgid, sid int
	state                byte // R, S, D, Z, …
	comm                 string
	start                uint64 // start time in clock ticks after boot; 0 if unknown
}

// readProc parses /proc/<pid>/stat. The command name is in parentheses and
// may itself contain spaces and parentheses, so the fields after it are
// found from the last ')'.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (proc, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return proc{}, fmt.Errorf("parsing %q: no command name", b)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return proc{}, fmt.Errorf("parsing %q: %w", b, err)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 4 || len(f[0]) != 1 {
		return proc{}, fmt.Errorf("parsing %q: too few fields", b)
	}
	p := proc{pid: pid, state: f[0][0], comm: string(b[open+1 : end])}
	for i, dst := range []*int{&p.ppid, &p.pgid, &p.sid} {
		if *dst, err = strconv.Atoi(f[i+1]); err != nil {
			return proc{}, fmt.Errorf("parsing %q: %w", b, err)
		}
	}
	if len(f) > 19 { // field 22 of stat(5)
		if p.start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
			return proc{}, fmt.Errorf("parsing %q: start time: %w", b, err)
		}
	}
	return p, nil
}

// processTable reads every process. Processes that exit while it reads are
// skipped (their stat file is the only one read, and it is readable by
// everyone while the process exists).
func processTable() ([]proc, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("reading the process table: %w", err)
	}
	out := make([]proc, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
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
