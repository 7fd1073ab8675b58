package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// What a writer killed mid-commit leaves, and how it is told apart from
// the user's files. A results folder is the user's folder: only names this
// package makes, inside run folders it made, are ever removed.
//
//   - A run folder is a directory (not a symlink) of the results folder
//     named by a valid run id and holding a regular manifest.json whose
//     run_id is that name (docs/results.md's layout).
//   - In it, os.MkdirTemp(dir, ".staging-") makes the staging folders
//     (".staging-" and decimal digits) and writeFileAtomic's
//     os.CreateTemp(dir, "."+name+".tmp-*") the temporary files ("." name
//     ".tmp-" digits); under sources/ only such files the manifest does not
//     list as the pipeline's own; under parts/ (the per-trial part
//     folders, parts.go) its staging folders (".staging-" digits, and
//     ".staging-" digits "-old", put back when it is a trial's only copy)
//     and temporary files.
//   - In the results folder itself, pointLatest's ".latest.tmp-<run id>"
//     symlink, once no process writes that run.
//
// Nothing is followed through a symlink, and a run folder another process
// has locked is left alone.
var (
	runIDPattern      = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$`)
	stagingPattern    = regexp.MustCompile(`^\.staging-[0-9]+$`)
	tempFilePattern   = regexp.MustCompile(`^\..+\.tmp-[0-9]+$`)
	latestTempPattern = regexp.MustCompile(`^\.latest\.tmp-([0-9]{8}T[0-9]{6}Z-[0-9a-f]{4})$`)
)

// maxManifestBytes bounds the manifest.json the cleanup reads.
const maxManifestBytes = 64 << 20

// ValidRunID reports whether id has the form NewRunID makes
// (20261130T044500Z-3f9c).
func ValidRunID(id string) bool {
	if !runIDPattern.MatchString(id) {
		return false
	}
	_, err := time.Parse("20060102T150405Z", id[:16])
	return err == nil
}

// Cleanup is what CleanLeftovers did.
type Cleanup struct {
	// Removed are the staging folders and temporary files removed.
	Removed []string
	// Interrupted are the run folders whose manifest still said "running"
	// although no process writes them (a writer killed with SIGKILL): their
	// status is now "interrupted".
	Interrupted []string
}

// recognisedRun reads the manifest of dir (with its parts' trial entries),
// a run folder only if it holds a manifest with a valid run id (equal to
// name when name is not empty).
func recognisedRun(dir, name string) (*Manifest, bool) {
	// Never a manifest.json reached through a symlink; ReadManifest
	// checks the rest (a bounded regular file, a valid run id).
	if fi, err := os.Lstat(filepath.Join(dir, "manifest.json")); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	m, err := ReadManifest(dir)
	if err != nil || !ValidRunID(m.RunID) || (name != "" && m.RunID != name) {
		return nil, false
	}
	return m, true
}

// removeLeftovers deletes what a writer killed mid-commit leaves in the
// run folder dir, of manifest m: its staging folders and temporary files.
// The caller holds the lock.
func removeLeftovers(dir string, m *Manifest) ([]string, error) {
	var errs []error
	removed, err := removeStaging(dir, nil)
	if err != nil {
		errs = append(errs, err)
	}
	r, err := removeSourceTemps(dir, m)
	removed = append(removed, r...)
	if err != nil {
		errs = append(errs, err)
	}
	r, err = removePartsLeftovers(dir)
	removed = append(removed, r...)
	if err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// removeStaging removes from the folder root (not below it) the staging
// folders (".staging-" digits) and temporary files ("." name ".tmp-"
// digits) a writer killed mid-commit left, and returns what it removed.
// With restore (the parts folder), a folder named ".staging-" digits
// "-old" is offered to restore first: it is removed like a staging folder
// unless restore put it back (true) or failed.
func removeStaging(root string, restore func(path string) (bool, error)) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		p := filepath.Join(root, e.Name())
		staging := e.Type().IsDir() && stagingPattern.MatchString(e.Name())
		if restore != nil && e.Type().IsDir() && stagingOldPattern.MatchString(e.Name()) {
			put, err := restore(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if put {
				continue
			}
			staging = true
		}
		switch {
		case staging:
			// A staging folder holds only the files being written;
			// RemoveAll removes a symlink in it, never what it points at.
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
		case e.Type().IsRegular() && tempFilePattern.MatchString(e.Name()):
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
				continue
			}
		default:
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// removeSourceTemps removes the temporary files SaveSources left under
// dir/sources: files of the temporary name pattern that are not one of the
// pipeline's files the manifest lists (a loaded file may have any name).
func removeSourceTemps(dir string, m *Manifest) ([]string, error) {
	root := filepath.Join(dir, SourcesDir)
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return nil, nil
	}
	listed := map[string]bool{}
	for _, f := range m.Pipeline.Files {
		listed[f.Path] = true
	}
	var removed []string
	var errs []error
	// WalkDir does not follow symlinks.
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if !d.Type().IsRegular() || !tempFilePattern.MatchString(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || listed[filepath.ToSlash(rel)] {
			return nil
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
			return nil
		}
		removed = append(removed, p)
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// CleanLeftovers cleans the run folders of outDir that no process writes:
// it removes the staging folders and temporary files killed writers left,
// and marks "interrupted" a run whose manifest still says "running" (its
// writer was killed before it could say so). Folders that are not run
// folders, symlinks, and runs another process has locked are never
// touched, nor the run folders skip names (a run about to be resumed,
// which Resume cleans itself).
func CleanLeftovers(outDir string, skip ...string) (*Cleanup, error) {
	c := &Cleanup{}
	entries, err := os.ReadDir(outDir)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	var skipped []os.FileInfo
	for _, p := range skip {
		if fi, err := os.Stat(p); err == nil {
			skipped = append(skipped, fi)
		}
	}
	isSkipped := func(dir string) bool {
		fi, err := os.Lstat(dir)
		return err == nil && slices.ContainsFunc(skipped, func(s os.FileInfo) bool { return os.SameFile(fi, s) })
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if m := latestTempPattern.FindStringSubmatch(name); m != nil && e.Type()&fs.ModeSymlink != 0 {
			if err := removeLatestTemp(outDir, name, m[1]); err != nil {
				errs = append(errs, err)
			} else {
				c.Removed = append(c.Removed, filepath.Join(outDir, name))
			}
			continue
		}
		if !e.Type().IsDir() || !ValidRunID(name) {
			continue
		}
		dir := filepath.Join(outDir, name)
		if isSkipped(dir) {
			continue
		}
		f, err := lockRun(dir)
		if err != nil {
			continue // in use, or unreadable: not ours to clean
		}
		err = cleanRun(c, dir, name)
		unlockRun(f)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// removeLatestTemp removes outDir/name, the temporary latest link of run
// runID, unless that run is being written (its writer may be about to
// rename it).
func removeLatestTemp(outDir, name, runID string) error {
	dir := filepath.Join(outDir, runID)
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		f, err := lockRun(dir)
		if err != nil {
			return nil
		}
		defer unlockRun(f)
	}
	return os.Remove(filepath.Join(outDir, name))
}

// cleanRun cleans one unlocked candidate run folder (the caller holds its
// lock).
func cleanRun(c *Cleanup, dir, name string) error {
	m, ok := recognisedRun(dir, name)
	if !ok {
		return nil
	}
	removed, err := removeLeftovers(dir, m)
	c.Removed = append(c.Removed, removed...)
	if m.Status != RunRunning {
		return err
	}
	// Nobody holds the lock, so the process that wrote "running" is gone.
	m.Status = RunInterrupted
	if m.FinishedAt == nil {
		if fi, serr := os.Stat(filepath.Join(dir, "manifest.json")); serr == nil {
			m.FinishedAt = timePtr(fi.ModTime()) // its last write
		}
	}
	if werr := writeManifest(dir, m); werr != nil {
		return errors.Join(err, fmt.Errorf("marking %s interrupted: %w", dir, werr))
	}
	c.Interrupted = append(c.Interrupted, dir)
	return err
}
