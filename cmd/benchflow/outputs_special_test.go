package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readFIFO makes a FIFO in a new folder and reads it to the end in the
// background; the channel gets what was read.
func readFIFO(t *testing.T) (string, <-chan string) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	return fifo, got
}

func wantCharDevice(t *testing.T, p string) {
	t.Helper()
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is now %v (%v), want a character device", p, fi.Mode(), err)
	}
}

// TestOutputFlagsWriteWhatExists: export -o, report --html and load --out
// write to a device or a FIFO they are given, never replacing it; load
// --out writes nothing beside one (no /dev/null.latency.parquet).
func TestOutputFlagsWriteWhatExists(t *testing.T) {
	dir := t.TempDir()
	run := applyTiny(t, dir)

	for _, args := range [][]string{{"export", run, "-o", "/dev/null"}, {"report", run, "--html", "/dev/null"}} {
		if out, err := runBin(t, dir, args...); err != nil {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
		wantCharDevice(t, "/dev/null")
	}
	fifo, got := readFIFO(t)
	if out, err := runBin(t, dir, "export", run, "--columns", "trial_id,step", "-o", fifo); err != nil {
		t.Errorf("export -o FIFO: %v\n%s", err, out)
	}
	if s := <-got; !strings.HasPrefix(s, "trial_id,step\n") || strings.Count(s, "\n") != 7 {
		t.Errorf("the FIFO's reader got %q, want the header and 6 rows", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is now %v (%v)", fi.Mode(), err)
	}

	srv, _ := helloServer(t)
	_, errOut, code := runLoad(t, "-c", "1", "-n", "20", "--out", "/dev/null", srv.URL+"/")
	if code != 0 {
		t.Errorf("load --out /dev/null: exit %d\n%s", code, errOut)
	}
	wantCharDevice(t, "/dev/null")
	for _, p := range []string{"/dev/null.latency.parquet", "/dev/null.timeseries.parquet"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("load --out /dev/null wrote %s", p)
		}
	}
	fifo, got = readFIFO(t)
	_, errOut, code = runLoad(t, "-c", "1", "-n", "20", "--out", fifo, srv.URL+"/")
	if code != 0 {
		t.Errorf("load --out FIFO: exit %d\n%s", code, errOut)
	}
	if s := <-got; !strings.HasPrefix(s, "PAR1") || !strings.HasSuffix(s, "PAR1") {
		t.Errorf("the FIFO's reader got %d bytes, want a Parquet file", len(s))
	}
	if ents, _ := os.ReadDir(filepath.Dir(fifo)); len(ents) != 1 {
		t.Errorf("load --out FIFO left %d entries beside it, want none", len(ents)-1)
	}
}
