package hostproc

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 -1 4194560 100 0 0 0 3 1 0 0 20 0 1 0 12345 1000 200\n"
	for _, tc := range []struct {
		name, in string
		want     Stat
		err      string // substring of the error; "" for none
	}{
		{name: "plain", in: "42 (nginx) S 7" + tail, want: Stat{"nginx", 7}},
		{name: "spaces", in: "42 (Web Content) R 1" + tail, want: Stat{"Web Content", 1}},
		{name: "closing parenthesis", in: "42 (a) b) S 9" + tail, want: Stat{"a) b", 9}},
		{name: "looks like fields", in: "42 (x) R 99 (y) S 3" + tail, want: Stat{"x) R 99 (y", 3}},
		{name: "opening parenthesis", in: "42 ((sd-pam)) S 1000" + tail, want: Stat{"(sd-pam)", 1000}},
		{name: "leading and trailing blanks kept", in: "42 ( a\tb ) S 5" + tail, want: Stat{" a\tb ", 5}},
		{name: "empty name", in: "42 () S 5" + tail, want: Stat{"", 5}},
		{name: "only state and ppid", in: "42 (sh) Z 3", want: Stat{"sh", 3}},
		{name: "init", in: "1 (systemd) S 0" + tail, want: Stat{"systemd", 0}},
		{name: "empty", in: "", err: "no process name"},
		{name: "no parentheses", in: "42 nginx S 7" + tail, err: "no process name"},
		{name: "no closing parenthesis", in: "42 (nginx S 7", err: "no process name"},
		{name: "closing before opening", in: "42 )nginx( S 7", err: "no process name"},
		{name: "no ppid", in: "42 (nginx) S", err: "1 fields after the process name"},
		{name: "nothing after the name", in: "42 (nginx)\n", err: "0 fields after the process name"},
		{name: "ppid not a number", in: "42 (nginx) S x7" + tail, err: `parent pid "x7"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseStat(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseStat(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestReadStatFakeProc(t *testing.T) {
	root := t.TempDir()
	for pid, stat := range map[int]string{
		10: "10 (my (odd) name) S 4 10 10 0 -1 0\n",
		11: "11 garbage\n",
	} {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		pid      int
		want     Stat
		notExist bool   // the error is fs.ErrNotExist
		err      string // substring of the error
	}{
		{name: "found", pid: 10, want: Stat{"my (odd) name", 4}},
		{name: "malformed", pid: 11, err: filepath.Join(root, "11", "stat") + ": no process name"},
		{name: "missing pid", pid: 12, notExist: true, err: filepath.Join(root, "12", "stat")},
		{name: "zero pid", pid: 0, notExist: true},
		{name: "negative pid", pid: -3, notExist: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadStat(root, tc.pid)
			if tc.err == "" && !tc.notExist {
				if err != nil || got != tc.want {
					t.Fatalf("ReadStat(%d) = %+v, %v; want %+v", tc.pid, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadStat(%d) = %+v, want an error", tc.pid, got)
			}
			if got != (Stat{}) {
				t.Errorf("ReadStat(%d) = %+v with error %v, want the zero Stat", tc.pid, got, err)
			}
			if tc.notExist != errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadStat(%d): errors.Is(%v, fs.ErrNotExist) = %v, want %v", tc.pid, err, !tc.notExist, tc.notExist)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ReadStat(%d) error %q does not contain %q", tc.pid, err, tc.err)
			}
		})
	}
}

// On the real /proc, a process that renamed itself to a name with spaces,
// parentheses and a backslash reads back as /proc/PID/comm shows it (less
// its newline), with this process as its parent; Comm trims it as it did
// when it read /proc/PID/comm.
func TestReadStatRealProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	const name = ` a\b) (c `
	cmd := exec.Command("sh", "-c", `printf '%s' "$1" > /proc/$$/comm && echo ready && read x`, "sh", name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("sh: %v", err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Skipf("the shell could not rename itself (%q, %v)", line, err)
	}
	pid := cmd.Process.Pid
	st, err := ReadStat("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Comm != strings.TrimSuffix(string(comm), "\n") || st.Comm != name {
		t.Errorf("ReadStat(%d).Comm = %q, /proc/%d/comm = %q, want both %q", pid, st.Comm, pid, comm, name)
	}
	if st.PPID != os.Getpid() {
		t.Errorf("ReadStat(%d).PPID = %d, want this process %d", pid, st.PPID, os.Getpid())
	}
	if got, want := Comm(pid), strings.TrimSpace(string(comm)); got != want {
		t.Errorf("Comm(%d) = %q, want %q", pid, got, want)
	}
}
