package hostproc

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Stat holds the fields of /proc/PID/stat that providers use.
type Stat struct {
	// Comm is the process's name exactly as the kernel keeps it (up to
	// 15 bytes): it may hold spaces, parentheses and any other byte.
	Comm string
	// PPID is the parent's pid (0 for init and kthreadd).
	PPID int
}

// ReadStat reads the process pid's stat file under root, a /proc (tests
// use a synthetic tree). The error wraps the file's read error when the
// process is gone or not readable (errors.Is(err, fs.ErrNotExist) for a
// pid that does not exist) and names the file when it cannot be parsed.
func ReadStat(root string, pid int) (Stat, error) {
	path := filepath.Join(root, strconv.Itoa(pid), "stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// ParseStat parses the contents of a /proc/PID/stat file:
// "PID (COMM) STATE PPID …". The name is taken between the first '(' and
// the last ')', since it may itself hold spaces and parentheses; the
// fields after it are split on white space.
func ParseStat(b []byte) (Stat, error) {
	l, err := procfs.Split(b)
	if err != nil {
		return Stat{}, err
	}
	if l.Fields() < 2 {
		return Stat{}, fmt.Errorf("%d fields after the process name, want at least 2 (state, parent pid)", l.Fields())
	}
	ppid, err := l.Int(4)
	if err != nil {
		return Stat{}, fmt.Errorf("parent pid %q is not a number", l.Field(4))
	}
	return Stat{Comm: l.Comm(), PPID: ppid}, nil
}

// Descendants returns the pids under root (a /proc) whose parent, or an
// ancestor's parent, is one of pids, sorted, pids themselves left out.
// A process whose open files this user may not read (nginx's workers run
// as another user; a sandbox drops the capability to inspect them) is
// still found below the master it was forked from.
func Descendants(root string, pids []int) []int {
	all, err := procfs.PIDs(root)
	if err != nil || len(pids) == 0 {
		return nil
	}
	parent := make(map[int]int, len(all))
	for _, pid := range all {
		if st, err := ReadStat(root, pid); err == nil {
			parent[pid] = st.PPID
		}
	}
	in := make(map[int]bool, len(pids))
	for _, p := range pids {
		in[p] = true
	}
	var out []int
	for _, pid := range all {
		if in[pid] {
			continue
		}
		// Walk up, bounded: a cycle cannot be, but a racing pid reuse
		// must not make this loop.
		for p, n := parent[pid], 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if in[p] {
				out = append(out, pid)
				break
			}
		}
	}
	sort.Ints(out)
	return out
}
