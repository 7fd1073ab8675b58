package pipeline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

const nonBlock = syscall.O_NONBLOCK

// ErrNotRegular and ErrTooLarge are wrapped by ReadFile's refusals.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("over the size limit")
)

// ReadFile reads a file a pipeline names — the pipeline file itself, a
// file loaded with load(), file(), templatefile(), a file block's source,
// body_file, script, --var-file — from fsys. Every reader goes through it,
// so all refuse the same things: anything but a regular file (a
// character device such as /dev/zero, a FIFO that would block, a socket, a
// folder), and more than MaxFileSize bytes, counted while reading (the
// size stat reports is not trusted: a file may grow, and /proc files
// report 0).
func ReadFile(fsys fs.FS, name string) ([]byte, error) {
	return ReadFileLimit(fsys, name, MaxFileSize)
}

// ReadFileLimit is ReadFile with another size limit.
func ReadFileLimit(fsys fs.FS, name string, limit int64) ([]byte, error) {
	if fi, err := fs.Stat(fsys, name); err != nil {
		return nil, err
	} else if err := regular(name, fi); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may have been swapped between the two looks: check what
	// was opened.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(name, fi); err != nil {
		return nil, err
	}
	return readLimited(name, f, limit)
}

// ReadLocalFile is ReadFile for a path of the OS file system given on the
// command line (--var-file, --body-file).
func ReadLocalFile(path string) ([]byte, error) {
	return ReadFile(localFS{}, path)
}

// localFS opens OS paths as given (absolute or relative to the working
// directory), without blocking on a FIFO.
type localFS struct{}

func (localFS) Open(name string) (fs.File, error) { return openNonBlocking(name) }
func (localFS) Stat(name string) (fs.FileInfo, error) {
	return os.Stat(filepath.FromSlash(name))
}

// openNonBlocking opens a file for reading with O_NONBLOCK, so that
// opening a FIFO (which blocks until a writer comes) returns at once; the
// caller refuses it then. For a regular file the flag changes nothing.
func openNonBlocking(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|nonBlock, 0)
}

func regular(name string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		what = "a folder, not a file"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO), not a regular file"
	case m&fs.ModeCharDevice != 0:
		what = "a character device, not a regular file"
	case m&fs.ModeDevice != 0:
		what = "a device, not a regular file"
	case m&fs.ModeSocket != 0:
		what = "a socket, not a regular file"
	}
	return &fileError{msg: fmt.Sprintf("%s is %s", name, what), err: ErrNotRegular}
}

func readLimited(name string, r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &fileError{msg: fmt.Sprintf("%s is over the limit of %d bytes (%s) for files a pipeline reads", name, limit, sizeName(limit)), err: ErrTooLarge}
	}
	return b, nil
}

func sizeName(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// fileError is a refusal of ReadFile: its message, and the sentinel it
// wraps.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }
