package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// DirFS is the file system of a pipeline's folder. Like os.DirFS it reads
// files below dir, and it follows symbolic links only where they stay
// inside dir: each path is resolved (filepath.EvalSymlinks) and refused
// when the result lies outside the folder. Every way a pipeline reads a
// file — file(), templatefile(), fileexists(), a file block's source,
// body_file, script and Starlark's load() — goes through it, so all follow
// one rule.
//
// It also remembers every regular file it opened, read or found with
// Stat (FilesRead), so that a run can keep every file the pipeline read
// (results sources/, and the bundles of engine/bundle).
func DirFS(dir string) fs.FS { return &dirFS{dir: dir, read: map[string]bool{}} }

type dirFS struct {
	dir  string
	mu   sync.Mutex
	read map[string]bool // slash paths of regular files used
}

// FilesRead returns the slash-separated paths (relative to the pipeline's
// folder, sorted) of the regular files fsys opened, read or found with
// Stat, when fsys is a DirFS; nil otherwise.
func FilesRead(fsys fs.FS) []string {
	d, ok := fsys.(*dirFS)
	if !ok {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.read))
	for p := range d.read {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// note records name when real is a regular file.
func (d *dirFS) note(name, real string) {
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return
	}
	d.mu.Lock()
	d.read[path.Clean(name)] = true
	d.mu.Unlock()
}

// ErrOutside is wrapped by the errors of paths that leave the folder.
var ErrOutside = fmt.Errorf("leaves the pipeline's folder")

func (d *dirFS) resolve(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	root, err := filepath.EvalSymlinks(d.dir)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		// Report the error (ENOENT, …) on the name the pipeline used.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: a symbolic link leads to %s", ErrOutside, real)}
	}
	return real, nil
}

func (d *dirFS) Open(name string) (fs.File, error) {
	real, err := d.resolve("open", name)
	if err != nil {
		return nil, err
	}
	d.note(name, real)
	return openNonBlocking(real)
}

func (d *dirFS) Stat(name string) (fs.FileInfo, error) {
	real, err := d.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	d.note(name, real)
	return os.Stat(real)
}

// ReadFile is ReadFile(d, name): regular files of at most MaxFileSize
// bytes only.
func (d *dirFS) ReadFile(name string) ([]byte, error) { return ReadFile(d, name) }
