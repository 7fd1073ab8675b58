package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrRunLocked is returned (wrapped) by Resume when another process is
// writing the run folder.
var ErrRunLocked = errors.New("another benchflow process is writing this run")

// lockRun takes an exclusive flock(2) on the run folder, held while this
// process writes it: two `apply --resume` of one run would both run every
// pending trial. The lock is released by unlockRun or when the process
// ends, however it ends.
func lockRun(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (wait for it to end, or stop it); the run folder is locked while a process writes it", ErrRunLocked)
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return f, nil
}

func unlockRun(f *os.File) {
	if f != nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// removeLeftovers deletes what a writer killed mid-commit leaves in a run
// folder: staging folders and temporary files. The caller holds the lock.
func removeLeftovers(dir string) ([]string, error) {
	var removed []string
	var errs []error
	for _, pat := range []string{".staging-*", ".*.tmp-*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range m {
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, p)
		}
	}
	return removed, errors.Join(errs...)
}

// CleanLeftovers removes the staging folders and temporary files that
// killed writers left in the run folders of outDir, skipping runs another
// process is writing. It returns what it removed.
func CleanLeftovers(outDir string) ([]string, error) {
	entries, err := os.ReadDir(outDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(outDir, e.Name())
		if m, _ := filepath.Glob(filepath.Join(dir, ".staging-*")); len(m) == 0 {
			if m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(m) == 0 {
				continue
			}
		}
		f, err := lockRun(dir)
		if err != nil {
			continue // in use, or unreadable: not ours to clean
		}
		r, err := removeLeftovers(dir)
		unlockRun(f)
		removed = append(removed, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}
