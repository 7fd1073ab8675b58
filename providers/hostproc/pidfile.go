package hostproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/procfs"
)

// userHZ is the unit of /proc/PID/stat's starttime (clock ticks): USER_HZ,
// 100 on every Linux architecture Go runs on.
const userHZ = 100

// pidFileSlack is how much later than its pid file a process may have
// started and still be the one that wrote it: the file's time and the
// kernel's boot time are whole seconds.
const pidFileSlack = 2 * time.Second

// PIDFile returns the pid written in the pid file at path (a daemon's,
// such as nginx's logs/nginx.pid) when that process runs under root (a
// /proc) and is the one that wrote it: it started no later than the
// file was last written. A file left by a daemon that ended, whose pid
// the kernel has since given to another process, is refused rather than
// attributing that process. Each error says which of these failed.
//
// A pid file is how a process is found where its open files cannot be
// read (Listeners needs them): inside a sandbox without capabilities,
// another user's processes, and a root daemon's, hide their sockets.
func PIDFile(root, path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s holds %q, not a process id", path, cut(s, 40))
	}
	started, err := startTime(root, pid)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%s names pid %d, which is not running (a pid file left by a daemon that stopped)", path, pid)
	}
	if err != nil {
		return 0, fmt.Errorf("%s names pid %d: %w", path, pid, err)
	}
	if started.After(fi.ModTime().Add(pidFileSlack)) {
		return 0, fmt.Errorf("%s names pid %d, which started at %s, after the file was written (%s): the daemon that wrote it stopped and its pid went to another process",
			path, pid, started.UTC().Format(time.TimeOnly), fi.ModTime().UTC().Format(time.TimeOnly))
	}
	return pid, nil
}

// startTime is when process pid (under root, a /proc) started: the boot
// time (root/stat's btime) plus its stat's starttime (field 22, in clock
// ticks since boot).
func startTime(root string, pid int) (time.Time, error) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return time.Time{}, err
	}
	st, err := procfs.Split(b)
	if err != nil {
		return time.Time{}, err
	}
	if !st.Has(22) {
		return time.Time{}, fmt.Errorf("its stat has %d fields after the name, no start time (field 22)", st.Fields())
	}
	ticks, err := st.Uint(22)
	if err != nil {
		return time.Time{}, fmt.Errorf("its start time %q is not a number", st.Field(22))
	}
	boot, err := bootTime(root)
	if err != nil {
		return time.Time{}, err
	}
	return boot.Add(time.Duration(ticks) * time.Second / userHZ), nil
}

// bootTime is root/stat's btime: when the machine booted.
func bootTime(root string) (time.Time, error) {
	path := filepath.Join(root, "stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("%s: btime %q is not a number", path, v)
			}
			return time.Unix(n, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("%s has no btime line", path)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
