package bundle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/benchflow/benchflow/engine/userfile"
)

// Snapshot copies the bundle dir into into (a private folder, made here
// mode 0700), each file opened once, without following a symbolic link,
// and read from that one open file: what reproduce checks (checksums,
// signature, pipeline) and runs is this copy, so a file swapped in dir
// after the copy — or between a check of dir and the copy — cannot run
// (Verify of the copy fails on the swapped one). Anything but a folder
// or a regular file (a symbolic link, a FIFO, a device) is refused,
// named; so is a file larger than max bytes (0: no limit).
func Snapshot(dir, into string, max int64) error {
	if err := os.Mkdir(into, 0o700); err != nil {
		return fmt.Errorf("copying bundle %s: %w", dir, err)
	}
	root, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("reading bundle %s: %w", dir, err)
	}
	if !root.IsDir() {
		return fmt.Errorf("bundle %s: not a folder", dir)
	}
	var total int64
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading bundle %s: %w", dir, err)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		dst := filepath.Join(into, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(dst, 0o700)
		case !d.Type().IsRegular():
			return fmt.Errorf("bundle %s: %s is not a regular file (%s): refusing it", dir, filepath.ToSlash(rel), d.Type())
		}
		in, err := userfile.OpenNoFollow(p, 0)
		if err != nil {
			if errors.Is(err, userfile.ErrNotRegular) {
				return fmt.Errorf("bundle %s: %w: refusing it", dir, err)
			}
			return fmt.Errorf("reading bundle %s: %w", dir, err)
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("copying bundle %s: %w", dir, err)
		}
		var r io.Reader = in
		if max > 0 {
			r = io.LimitReader(in, max-total+1)
		}
		n, err := io.Copy(out, r)
		total += n
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("copying bundle %s: %s: %w", dir, filepath.ToSlash(rel), err)
		}
		if max > 0 && total > max {
			return fmt.Errorf("bundle %s: larger than %d bytes: refusing it", dir, max)
		}
		if snapshotHook != nil {
			snapshotHook(p)
		}
		return nil
	})
}

// snapshotHook, when set (tests), runs after each file is copied.
var snapshotHook func(path string)
