package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/benchflow/benchflow/engine/scratch"
)

// What a writer killed mid-commit leaves, and how it is told apart from
// the user's files: by the record (package scratch). A results folder is
// the user's folder; benchflow deletes only what it recorded creating, and
// never through a symlink.
//
//   - Every staging folder (".staging-" digits, in the run folder and in
//     parts/), every temporary file of an atomic write ("." name ".tmp-"
//     digits) and every part folder moved aside (".staging-" digits "-old")
//     is recorded in the run folder's journal (.benchflow-journal) before
//     it is made; the results folder's temporary latest link in the state
//     folder's journal.
//   - The cleanup (gc, apply, apply --resume, compact) removes the open
//     entries of writers that are gone, exactly as recorded: a symlink at
//     any depth, another kind of file, another inode or nothing there is
//     left alone and reported (Cleanup.Left). A part folder moved aside is
//     put back when it is its trial's only copy.
//   - Only run folders are cleaned: directories (not symlinks) of the
//     results folder named by a valid run id, that no process has locked;
//     a run whose manifest still says "running" is marked "interrupted".
var runIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$`)

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

// Cleanup is what a cleanup of killed writers' leftovers did.
type Cleanup struct {
	// Removed are the staging folders and temporary files removed.
	Removed []string
	// Restored are the part folders put back (a trial's only copy, moved
	// aside by a commit that was killed).
	Restored []string
	// Left are recorded paths that were not exactly what the record says
	// (a symlink on the way or at the path, another kind of file, another
	// inode, nothing there): left alone, with the reason.
	Left []scratch.Left
	// Interrupted are the run folders whose manifest still said "running"
	// although no process writes them (a writer killed with SIGKILL): their
	// status is now "interrupted".
	Interrupted []string
}

func (c *Cleanup) add(r *scratch.Report) {
	if r == nil {
		return
	}
	c.Removed = append(c.Removed, r.Removed...)
	c.Restored = append(c.Restored, r.Restored...)
	c.Left = append(c.Left, r.Left...)
}

// cleanScratch cleans the run folder dir of what killed writers recorded
// making (the caller holds its lock).
func cleanScratch(c *Cleanup, dir string) error {
	r, err := scratch.Run(dir).Clean()
	c.add(r)
	return err
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

// CleanLeftovers cleans the run folders of outDir that no process writes:
// it removes the staging folders and temporary files killed writers
// recorded making (exactly as recorded; the rest is reported in Left), and
// marks "interrupted" a run whose manifest still says "running" (its
// writer was killed before it could say so). Folders that are not run
// folders, symlinks, and runs another process has locked are never
// touched, nor the run folders skip names (a run about to be resumed,
// which Resume cleans itself). The state folder's journal (the temporary
// latest link, publish's and reproduce's folders) is scratch.Machine's.
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

// cleanRun cleans one unlocked candidate run folder (the caller holds its
// lock).
func cleanRun(c *Cleanup, dir, name string) error {
	err := cleanScratch(c, dir)
	m, ok := recognisedRun(dir, name)
	if !ok || m.Status != RunRunning {
		return err
	}
	// Nobody holds the lock, so the process that wrote "running" is gone.
	m.Status = RunInterrupted
	if m.FinishedAt == nil {
		if fi, serr := os.Stat(filepath.Join(dir, "manifest.json")); serr == nil {
			m.FinishedAt = timePtr(fi.ModTime()) // its last write
		}
	}
	werr := writeManifest(dir, m)
	scratch.Run(dir).Tidy()
	if werr != nil {
		return errors.Join(err, fmt.Errorf("marking %s interrupted: %w", dir, werr))
	}
	c.Interrupted = append(c.Interrupted, dir)
	return err
}
