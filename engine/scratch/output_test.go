package scratch

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func writeString(s string) func(f *os.File) error {
	return func(f *os.File) error {
		_, err := io.WriteString(f, s)
		return err
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestWriteOutputKeepsWhatExists: what an output flag names is written,
// never replaced, unless it is a regular file or nothing: /dev/null stays
// the device, a FIFO is written to its reader, a descriptor's
// /proc/self/fd link writes into the pipe; a regular file and an absent
// path are written through a temporary file; a symbolic link to a file
// keeps the link and replaces the target; a folder, a socket and a link
// to nothing are refused with the path.
func TestWriteOutputKeepsWhatExists(t *testing.T) {
	dir := t.TempDir()
	j := Run(dir)

	t.Run("/dev/null", func(t *testing.T) {
		before := inode(t, "/dev/null")
		if err := j.WriteOutput("/dev/null", 0o644, writeString("discarded\n")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat("/dev/null")
		if err != nil || fi.Mode()&os.ModeCharDevice == 0 || inode(t, "/dev/null") != before {
			t.Fatalf("/dev/null is now %v (%v), want the same character device", fi.Mode(), err)
		}
	})

	t.Run("FIFO", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
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
		if err := j.WriteOutput(fifo, 0o644, writeString("through the pipe\n")); err != nil {
			t.Fatal(err)
		}
		if s := <-got; s != "through the pipe\n" {
			t.Errorf("the reader got %q", s)
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the FIFO is now %v (%v)", fi.Mode(), err)
		}
	})

	t.Run("a descriptor's link (as /dev/stdout)", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		link := filepath.Join(dir, "stdout")
		if err := os.Symlink("/proc/self/fd/"+strconv.Itoa(int(w.Fd())), link); err != nil {
			t.Fatal(err)
		}
		if err := j.WriteOutput(link, 0o644, writeString("to the descriptor\n")); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if b, _ := io.ReadAll(r); string(b) != "to the descriptor\n" {
			t.Errorf("the pipe got %q", b)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link is now %v (%v)", fi.Mode(), err)
		}
	})

	t.Run("regular file and absent path", func(t *testing.T) {
		p := filepath.Join(dir, "out.csv")
		if err := j.WriteOutput(p, 0o644, writeString("first\n")); err != nil {
			t.Fatal(err)
		}
		before := inode(t, p)
		if err := j.WriteOutput(p, 0o644, writeString("second\n")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "second\n" || inode(t, p) == before {
			t.Errorf("%q (inode changed: %v), want second, written through a temporary file", b, inode(t, p) != before)
		}
		// A failed write leaves the old content.
		if err := j.WriteOutput(p, 0o644, func(f *os.File) error { return io.ErrUnexpectedEOF }); err == nil {
			t.Errorf("a failed write returned no error")
		}
		if b, _ := os.ReadFile(p); string(b) != "second\n" {
			t.Errorf("a failed write left %q", b)
		}
	})

	t.Run("symbolic link to a file", func(t *testing.T) {
		target := filepath.Join(dir, "target.csv")
		os.WriteFile(target, []byte("old\n"), 0o644)
		link := filepath.Join(dir, "link.csv")
		os.Symlink(target, link)
		if err := j.WriteOutput(link, 0o644, writeString("new\n")); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v (%v)", fi.Mode(), err)
		}
		if b, _ := os.ReadFile(target); string(b) != "new\n" {
			t.Errorf("the target holds %q", b)
		}
	})

	t.Run("refused", func(t *testing.T) {
		dangling := filepath.Join(dir, "dangling")
		os.Symlink(filepath.Join(dir, "nothing"), dangling)
		for p, want := range map[string]string{
			dir:      "a folder",
			dangling: "which does not exist",
		} {
			err := j.WriteOutput(p, 0o644, writeString("x"))
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: %v, want an error naming it and saying %q", p, err, want)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, "nothing")); err == nil {
			t.Errorf("a link to nothing created its target")
		}
	})
}
