package userfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// TestRead: a regular file within the limit is read; /dev/zero, a FIFO,
// a folder, a file over the limit and links to them are refused with the
// path, what it is or the limit, and the sentinel; nothing blocks.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	at := func(n string) string { return filepath.Join(dir, n) }
	if err := os.WriteFile(at("ok"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(at("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(at("dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("big"), make([]byte, 11), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"/dev/zero", "zero-link"}, {"fifo", "fifo-link"}, {"ok", "ok-link"}} {
		if err := os.Symlink(l[0], at(l[1])); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		path, want string
		is         error
	}{
		{at("ok"), "", nil},
		{at("ok-link"), "", nil},
		{"/dev/zero", "/dev/zero: not a regular file (a character device)", ErrNotRegular},
		{at("zero-link"), at("zero-link") + ": not a regular file (a character device), by a symbolic link to /dev/zero", ErrNotRegular},
		{at("fifo"), at("fifo") + ": not a regular file (a FIFO)", ErrNotRegular},
		{at("fifo-link"), at("fifo-link") + ": not a regular file (a FIFO), by a symbolic link to " + at("fifo"), ErrNotRegular},
		{at("dir"), at("dir") + ": not a regular file (a folder)", ErrNotRegular},
		{at("big"), at("big") + ": 11 bytes is over the 10 bytes limit", ErrTooLarge},
		{at("missing"), at("missing") + ": no such file or directory", fs.ErrNotExist},
	}
	for _, c := range cases {
		b, err := Read(c.path, 10)
		if c.want == "" {
			if err != nil || string(b) != "hello" {
				t.Errorf("Read(%s) = %q, %v", c.path, b, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want || !errors.Is(err, c.is) {
			t.Errorf("Read(%s): %v\nwant %s (wrapping %v)", c.path, err, c.want, c.is)
		}
	}
}

// TestReadCountsWhatItReads: a file whose size stat reports as within the
// limit but that reads longer (as /proc files, which report 0) is
// refused.
func TestReadCountsWhatItReads(t *testing.T) {
	fi, err := os.Stat("/proc/self/status")
	if err != nil || fi.Size() != 0 {
		t.Skip("no /proc/self/status of size 0 here")
	}
	if _, err := Read("/proc/self/status", 16); err == nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "over the 16 bytes limit") {
		t.Errorf("Read(/proc/self/status, 16): %v, want over the limit", err)
	}
}

// TestReadFS: the same rule through an fs.FS.
func TestReadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"ok":  {Data: []byte("hi")},
		"big": {Data: make([]byte, 100)},
		"p":   {Mode: fs.ModeNamedPipe},
		"d":   {Mode: fs.ModeDir},
	}
	if b, err := ReadFS(fsys, "ok", 10); err != nil || string(b) != "hi" {
		t.Errorf("ReadFS(ok) = %q, %v", b, err)
	}
	for name, want := range map[string]string{
		"big": "big: 100 bytes is over the 10 bytes limit",
		"p":   "p: not a regular file (a FIFO)",
		"d":   "d: not a regular file (a folder)",
	} {
		if _, err := ReadFS(fsys, name, 10); err == nil || err.Error() != want {
			t.Errorf("ReadFS(%s): %v, want %s", name, err, want)
		}
	}
}
