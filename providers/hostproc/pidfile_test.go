package hostproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProc writes a /proc with a boot time and processes that started
// the given number of seconds after it (stat field 22, in ticks).
func fakeProc(t *testing.T, boot int64, started map[int]int) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(fmt.Sprintf("cpu  1 2 3 4\nbtime %d\nprocesses 9\n", boot)), 0o644); err != nil {
		t.Fatal(err)
	}
	for pid, secs := range started {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (nginx) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, pid, pid, secs*userHZ)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func writePIDFile(t *testing.T, content string, at time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nginx.pid")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPIDFile: the pid of a running process that started before its pid
// file was written; a stopped daemon's file, a file whose pid went to a
// later process, and a file without a pid are refused, each saying why.
func TestPIDFile(t *testing.T) {
	boot := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	// pid 40 started 100 s after boot, pid 41 at 500 s.
	root := fakeProc(t, boot.Unix(), map[int]int{40: 100, 41: 500})
	written := boot.Add(101 * time.Second) // just after pid 40 started

	if pid, err := PIDFile(root, writePIDFile(t, "40\n", written)); err != nil || pid != 40 {
		t.Errorf("PIDFile(40, written after it started) = %d, %v; want 40", pid, err)
	}
	for _, c := range []struct{ name, content, want string }{
		{"reused pid", "41\n", "after the file was written"},
		{"stopped daemon", "42\n", "not running"},
		{"not a pid", "nginx\n", `holds "nginx", not a process id`},
		{"empty", "", `holds "", not a process id`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writePIDFile(t, c.content, written)
			pid, err := PIDFile(root, path)
			if err == nil {
				t.Fatalf("PIDFile = %d, want an error", pid)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q, want it to name %s and say %q", err, path, c.want)
			}
		})
	}
	if _, err := PIDFile(root, filepath.Join(t.TempDir(), "missing.pid")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v, want a not-exist error", err)
	}
}

// TestPIDFileRealProc: against this machine's /proc, this process is
// found by a pid file written now, and refused by one dated before it
// started.
func TestPIDFileRealProc(t *testing.T) {
	me := fmt.Sprint(os.Getpid())
	if pid, err := PIDFile("/proc", writePIDFile(t, me, time.Now())); err != nil || pid != os.Getpid() {
		t.Errorf("PIDFile(own pid, now) = %d, %v; want %d", pid, err, os.Getpid())
	}
	old := writePIDFile(t, me, time.Now().Add(-24*time.Hour*365))
	if _, err := PIDFile("/proc", old); err == nil || !strings.Contains(err.Error(), "after the file was written") {
		t.Errorf("PIDFile(own pid, a year ago) = %v, want refused as written before the process started", err)
	}
}
