package scratch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteOutput writes what a command's output flag (export -o, load
// --out, report --html, …) names, and never replaces what is not a
// regular file:
//
//   - an absent path, or a regular file, is written through a temporary
//     file renamed into place (WriteFile): readers see the old content
//     or the new, never half;
//   - what exists and is not a regular file — a character device such as
//     /dev/null or a terminal, a FIFO — is opened and written in place,
//     as a shell's redirection would;
//   - a symbolic link is followed and the link kept: a link to a regular
//     file has its target replaced atomically; a link to a device or a
//     FIFO is written in place; /dev/stdout and the other /proc/self/fd
//     links write to what the descriptor holds (a regular file there is
//     truncated and written in place, since its path may be gone);
//   - a folder, a socket, or a link to nothing is an error naming it.
func (j *Journal) WriteOutput(path string, perm os.FileMode, write func(f *os.File) error) error {
	lfi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return j.WriteFile(path, perm, write)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fi, link := lfi, lfi.Mode()&os.ModeSymlink != 0
	if link {
		if fi, err = os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			dest, _ := os.Readlink(path)
			return fmt.Errorf("writing %s: a symbolic link to %s, which does not exist (name the file itself)", path, dest)
		} else if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return fmt.Errorf("writing %s: a folder, not a file", path)
	case m&os.ModeSocket != 0:
		return fmt.Errorf("writing %s: a socket, not a file", path)
	case m.IsRegular():
		if !link {
			return j.WriteFile(path, perm, write)
		}
		// Replace the link's target, keeping the link; a target only a
		// descriptor names (/dev/stdout redirected to a file) is
		// written in place.
		if dest, err := filepath.EvalSymlinks(path); err == nil && !strings.HasPrefix(dest, "/proc/") {
			return j.WriteFile(dest, perm, write)
		}
		return writeInPlace(path, true, write)
	}
	return writeInPlace(path, false, write)
}

// writeInPlace opens path (not a regular file when looked at, unless
// trunc) for writing and writes it. Opened without O_TRUNC: were it a
// regular file by now (swapped meanwhile), it is not cut before the
// write fails.
func writeInPlace(path string, trunc bool, write func(f *os.File) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if fi.Mode().IsRegular() {
		if !trunc {
			f.Close()
			return fmt.Errorf("writing %s: it became a regular file while being opened; run again", path)
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// IsRegularOrAbsent reports whether path names a regular file (once
// symbolic links are followed) or nothing: where WriteOutput writes
// through a temporary file, and where files beside it may be written.
func IsRegularOrAbsent(path string) bool {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, lerr := os.Lstat(path)
		return lerr != nil // a link to nothing is neither
	}
	return err == nil && fi.Mode().IsRegular()
}
