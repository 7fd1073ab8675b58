// Package userfile is the one rule for reading a file a user names: a
// flag's path (load --cacert, --body-file, --script, agent --token-file and
// --tls-*, --var-file, report --update, gc --kubeconfig), a pipeline
// attribute's (body_file, cacert, script, a file block's source, file(),
// templatefile(), load(), a provider's token_file), and the pipeline file
// itself. The file must be
//
//   - a regular file once symbolic links are resolved: not a character
//     device such as /dev/zero (endless), not a FIFO (reading it blocks
//     until a writer comes), a socket or a folder;
//   - at most a limit in size, checked on what stat reports and again on
//     what is read (a file may grow, and /proc files report 0);
//   - opened without blocking: the path is looked at before it is opened
//     and a special file is refused then, the open is O_NONBLOCK (a FIFO
//     swapped in between does not block either), and the opened file is
//     looked at again.
//
// Every refusal names the file, what it is and the limit, in one form
// ("/dev/zero: not a regular file (a character device)", "x: 3 MiB is
// over the 1 MiB limit"), for the caller to prefix with the flag or
// attribute ("--cacert /dev/zero: …"). docs/cli.md ("Files you name")
// states the rule.
//
// The package imports only the standard library and engine/units, so
// every layer may use it.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/benchflow/benchflow/engine/units"
)

// Limits.
const (
	// MaxSize bounds a file a user names unless the reader states another
	// limit: a pipeline file, a file it reads, a CA, certificate or key
	// file, a Markdown file to update, a kubeconfig (16 MiB).
	MaxSize = 16 << 20
	// MaxTokenSize bounds a file holding a token or key (4 KiB).
	MaxTokenSize = 4 << 10
)

// ErrNotRegular and ErrTooLarge are wrapped by the refusals.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("over the size limit")
)

// Error is a refusal: its message, and the sentinel (ErrNotRegular,
// ErrTooLarge) or the cause it wraps.
type Error struct {
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

// Check refuses fi, what stat or fstat reports of name, unless it is a
// regular file of at most limit bytes (no bound when limit ≤ 0).
func Check(name string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return &Error{msg: fmt.Sprintf("%s: not a regular file (%s)", name, Kind(fi.Mode())), err: ErrNotRegular}
	}
	if limit > 0 && fi.Size() > limit {
		return &Error{msg: fmt.Sprintf("%s: %s is over the %s limit", name, units.FormatSize(fi.Size()), units.FormatSize(limit)), err: ErrTooLarge}
	}
	return nil
}

// Kind names what a file mode is, for messages: "a folder", "a named
// "a FIFO", "a character device", …
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return m.Type().String()
}

// Open opens path (an OS path, symbolic links followed) for reading when
// it is a regular file of at most limit bytes (no bound when limit ≤ 0),
// never blocking.
func Open(path string, limit int64) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, plain(path, err)
	}
	if err := Check(path, fi, limit); err != nil {
		return nil, viaLink(path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, plain(path, err)
	}
	// The path may have been swapped between the two looks: check what
	// was opened.
	if fi, err = f.Stat(); err == nil {
		err = Check(path, fi, limit)
	}
	if err != nil {
		f.Close()
		return nil, viaLink(path, err)
	}
	return f, nil
}

// OpenNoFollow is Open for a path that must itself be the file, as
// every file of a bundle (engine/bundle): a symbolic link is refused
// like a FIFO or a device, without being opened (Lstat), and the open is
// O_NOFOLLOW|O_NONBLOCK, so a link or a FIFO swapped in between is
// refused too.
func OpenNoFollow(path string, limit int64) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, plain(path, err)
	}
	if err := Check(path, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, &Error{msg: fmt.Sprintf("%s: not a regular file (a symbolic link)", path), err: ErrNotRegular}
		}
		return nil, plain(path, err)
	}
	if fi, err = f.Stat(); err == nil {
		err = Check(path, fi, limit)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadNoFollow reads path under OpenNoFollow's rule, counting what it
// reads against limit (which must be > 0).
func ReadNoFollow(path string, limit int64) ([]byte, error) {
	f, err := OpenNoFollow(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(path, f, limit)
}

// Read reads path (an OS path) under Open's rule, counting what it reads
// against limit (which must be > 0).
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(path, f, limit)
}

// ReadFS reads name from fsys under the same rule: stat first, then open,
// then stat what was opened. fsys's Open should not block on a FIFO
// (engine/pipeline's DirFS opens O_NONBLOCK); with any fs.FS a special
// file is refused before it is opened.
func ReadFS(fsys fs.FS, name string, limit int64) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := Check(name, fi, limit); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := Check(name, fi, limit); err != nil {
		return nil, err
	}
	return readLimited(name, f, limit)
}

func readLimited(name string, r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, plain(name, err)
	}
	if int64(len(b)) > limit {
		return nil, &Error{msg: fmt.Sprintf("%s: over the %s limit (it holds more than its size said)", name, units.FormatSize(limit)), err: ErrTooLarge}
	}
	return b, nil
}

// plain words an OS error on path as "path: what" (instead of "open
// path: what"), still wrapping it (errors.Is(err, fs.ErrNotExist) holds).
func plain(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &Error{msg: fmt.Sprintf("%s: %v", path, pe.Err), err: err}
	}
	return &Error{msg: fmt.Sprintf("%s: %v", path, err), err: err}
}

// viaLink adds, to a refusal of a path that is a symbolic link, where
// the link leads.
func viaLink(path string, err error) error {
	var e *Error
	if li, lerr := os.Lstat(path); lerr != nil || li.Mode()&fs.ModeSymlink == 0 || !errors.As(err, &e) {
		return err
	}
	real, rerr := filepath.EvalSymlinks(path)
	if rerr != nil {
		return err
	}
	return &Error{msg: fmt.Sprintf("%s, by a symbolic link to %s", e.msg, real), err: e.err}
}
