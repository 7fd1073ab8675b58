// Package procfs reads the Linux process table: the one parser of
// /proc/PID/stat and the one root every reader of /proc uses.
package procfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Root is where /proc is read from; tests point it at a synthetic tree.
var Root = "/proc"

// Self stands for this process in the readers that take a pid: its
// entries are Root's "self" folder (/proc/self).
const Self = -1

// Path is the file name under Root of a process (pid, or Self) and entry
// (name, e.g. "stat" or "task/12/stat"; "" names the process's folder).
func Path(pid int, name string) string {
	dir := strconv.Itoa(pid)
	if pid == Self {
		dir = "self"
	}
	return filepath.Join(Root, dir, name)
}

// maxFields is how many fields after the command name a Stat keeps
// (stat(5) documents 52 in all; the first two are the pid and the name).
const maxFields = 50

// ErrNoName is returned for a stat line without a name in parentheses.
var ErrNoName = errors.New("no process name in parentheses")

// Stat is a split /proc/PID/stat line. The command name is between the
// first '(' and the last ')' and may itself hold spaces and parentheses;
// the fields after it are split on white space. Field numbers are those
// of stat(5): 1 is the pid, 2 the name, 3 the state, 4 the parent pid, …
// A Stat holds no heap memory beyond the line it was split from.
type Stat struct {
	pid  []byte
	comm []byte
	f    [maxFields][]byte
	n    int // fields after the name that were found
}

// Split splits the contents of a /proc/PID/stat file.
func Split(b []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return s, ErrNoName
	}
	s.pid = bytes.TrimSpace(b[:open])
	s.comm = b[open+1 : end]
	rest := b[end+1:]
	for s.n < maxFields {
		i := 0
		for i < len(rest) && isSpace(rest[i]) {
			i++
		}
		rest = rest[i:]
		if len(rest) == 0 {
			break
		}
		j := 0
		for j < len(rest) && !isSpace(rest[j]) {
			j++
		}
		s.f[s.n] = rest[:j]
		rest = rest[j:]
		s.n++
	}
	return s, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// Comm is the process's name exactly as the kernel keeps it.
func (s *Stat) Comm() string { return string(s.comm) }

// Fields is the number of fields found after the name (field 3 on).
func (s *Stat) Fields() int { return s.n }

// Has tells whether field n (stat(5) numbering, 3 or more) is present.
func (s *Stat) Has(n int) bool { return n >= 3 && n-3 < s.n }

// Field returns field n (stat(5) numbering; 1 is the pid); nil when absent.
func (s *Stat) Field(n int) []byte {
	switch {
	case n == 1:
		return s.pid
	case n == 2:
		return s.comm
	case s.Has(n):
		return s.f[n-3]
	}
	return nil
}

// State is field 3, the one-letter state (R, S, D, Z, …); 0 when it is
// missing or longer than one byte.
func (s *Stat) State() byte {
	if f := s.Field(3); len(f) == 1 {
		return f[0]
	}
	return 0
}

// ErrShort is returned by Uint for a field that is missing or empty.
var ErrShort = errors.New("unparsable stat line")

// Uint parses field n as an unsigned decimal number.
func (s *Stat) Uint(n int) (uint64, error) { return Atou(s.Field(n)) }

// Int parses field n as a (signed) decimal int, as strconv.Atoi does.
func (s *Stat) Int(n int) (int, error) { return strconv.Atoi(string(s.Field(n))) }

// Atou parses an unsigned decimal number without allocating (surrounding
// white space allowed). The error is ErrShort for an empty b and
// strconv's otherwise.
func Atou(b []byte) (uint64, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, ErrShort
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return strconv.ParseUint(string(b), 10, 64) // for the error
		}
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}

// ReadStat reads and splits the stat file of pid under Root. The error
// is the read error when the process is gone or not readable.
func ReadStat(pid int) (Stat, []byte, error) { return ReadStatFile(Path(pid, "stat")) }

// ReadStatFile reads and splits a stat file (a process's or a thread's).
// It returns the bytes too, which the Stat points into.
func ReadStatFile(path string) (Stat, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, nil, err
	}
	s, err := Split(b)
	return s, b, err
}

// PIDs lists the numeric entries of a /proc directory (root; "" means
// Root), in directory order: the processes, or with root
// Path(pid, "task") the threads of one process.
func PIDs(root string) ([]int, error) {
	if root == "" {
		root = Root
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Cmdline reads the command line of pid under Root: its arguments, or
// nil for a kernel thread or a zombie (an empty file) and an error when
// the process is gone.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile(Path(pid, "cmdline"))
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}

// CommandLine prints argv on one line for a listing, at most max runes
// (0: no limit): the program by its base name, each argument longer than
// 32 runes by its head and tail ("lowerdir=/va…e7f8a9b0c1d/work": where
// two command lines differ is often the end of a path), the arguments
// joined by spaces, control characters as spaces, "…" where it was cut.
func CommandLine(argv []string, max int) string {
	if len(argv) == 0 {
		return ""
	}
	a := append([]string(nil), argv...)
	if strings.Contains(a[0], "/") {
		a[0] = filepath.Base(a[0])
	}
	for i := 1; i < len(a); i++ {
		if r := []rune(a[i]); len(r) > 32 {
			a[i] = string(r[:12]) + "…" + string(r[len(r)-16:])
		}
	}
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, strings.Join(a, " "))
	s = strings.TrimSpace(s)
	if r := []rune(s); max > 0 && len(r) > max {
		s = strings.TrimRight(string(r[:max-1]), " ") + "…"
	}
	return s
}

// Alive tells whether pid's folder exists under Root: the process (or a
// zombie of it) is still in the table.
func Alive(pid int) bool {
	_, err := os.Stat(Path(pid, ""))
	return err == nil
}

// Comm reads /proc/PID/comm: the process's name (at most 15 bytes) without
// surrounding white space. The error is the read error when the process is
// gone or not readable.
func Comm(pid int) (string, error) {
	b, err := os.ReadFile(Path(pid, "comm"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Cgroup reads /proc/PID/cgroup: one "hierarchy:controllers:path" line per
// cgroup hierarchy ("0::/path" alone under cgroup v2).
func Cgroup(pid int) (string, error) {
	b, err := os.ReadFile(Path(pid, "cgroup"))
	return string(b), err
}

// StatusValue reads /proc/PID/status and returns the value of its first
// line "key:…" without surrounding white space (StatusValue(Self,
// "CapBnd") is this process's capability bounding set, in hex). ok is
// false when the file cannot be read or has no such line.
func StatusValue(pid int, key string) (v string, ok bool) {
	b, err := os.ReadFile(Path(pid, "status"))
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// Children lists the pids whose parent is pid: from
// /proc/PID/task/PID/children where the kernel has it (CONFIG_PROC_CHILDREN),
// else by reading every process's stat (ReadStat) for its parent pid
// (field 4).
func Children(pid int) []int {
	var kids []int
	b, err := os.ReadFile(Path(pid, filepath.Join("task", strconv.Itoa(pid), "children")))
	if err == nil {
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				kids = append(kids, k)
			}
		}
		return kids
	}
	pids, _ := PIDs("")
	for _, k := range pids {
		s, _, err := ReadStat(k)
		if err != nil {
			continue
		}
		if pp, err := s.Int(4); err == nil && pp == pid {
			kids = append(kids, k)
		}
	}
	return kids
}

// StatmResident parses the contents of a /proc/PID/statm file: its second
// field, the resident set size in pages. The error is ErrShort for a file
// of fewer fields and Atou's for a field that is not a number.
func StatmResident(b []byte) (uint64, error) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, ErrShort
	}
	return Atou(f[1])
}

// ResidentBytes is pid's resident memory from /proc/PID/statm
// (StatmResident) in bytes; 0 when the process is gone or the file has
// fewer than two fields.
func ResidentBytes(pid int) uint64 {
	b, err := os.ReadFile(Path(pid, "statm"))
	if err != nil {
		return 0
	}
	pages, _ := StatmResident(b)
	return pages * uint64(os.Getpagesize())
}

// OpenFiles counts pid's open file descriptors (the entries of
// /proc/PID/fd; OpenFiles(Self) counts this process's, the read's own
// included).
func OpenFiles(pid int) (int, error) {
	ents, err := os.ReadDir(Path(pid, "fd"))
	return len(ents), err
}

// Namespace reads the link /proc/PID/ns/NAME ("net:[4026531840]"): which
// namespace of that type (net, pid, …) pid is in.
func Namespace(pid int, name string) (string, error) {
	return os.Readlink(Path(pid, filepath.Join("ns", name)))
}
