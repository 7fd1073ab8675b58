package pipeline

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/benchflow/benchflow/engine/userfile"
)

// ErrNotRegular and ErrTooLarge are wrapped by ReadFile's refusals (they
// are engine/userfile's).
var (
	ErrNotRegular = userfile.ErrNotRegular
	ErrTooLarge   = userfile.ErrTooLarge
)

// ReadFile reads a file a pipeline names — the pipeline file itself, a
// file loaded with load(), file(), templatefile(), a file block's source,
// body_file, script, --var-file — from fsys. Every reader goes through it,
// so all follow engine/userfile's rule: a regular file (not a character
// device such as /dev/zero, a FIFO that would block, a socket, a folder)
// of at most MaxFileSize bytes, counted while reading too (the size stat
// reports is not trusted: a file may grow, and /proc files report 0).
func ReadFile(fsys fs.FS, name string) ([]byte, error) {
	return ReadFileLimit(fsys, name, MaxFileSize)
}

// ReadFileLimit is ReadFile with another size limit.
func ReadFileLimit(fsys fs.FS, name string, limit int64) ([]byte, error) {
	return userfile.ReadFS(fsys, name, limit)
}

// ReadLocalFile is ReadFile for a path of the OS file system given on the
// command line (--var-file, --body-file).
func ReadLocalFile(path string) ([]byte, error) {
	return userfile.Read(path, MaxFileSize)
}

// openNonBlocking opens a file for reading with O_NONBLOCK, so that
// opening a FIFO (which blocks until a writer comes) returns at once; the
// caller refuses it then. For a regular file the flag changes nothing.
func openNonBlocking(name string) (*os.File, error) {
	return os.OpenFile(filepath.Clean(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
