package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// What the writer does when the disk is full: the trial it could not
// record is still recorded as failed in manifest.json, and the run as
// finished, although the usual rewrite (a temporary file renamed over the
// manifest) needs room the disk no longer has.

// MarkUnrecorded records in the manifest (in memory; Finish writes it)
// that rec's trial ran but could not be committed: its status and error
// (the executor sets "failed" and "recording the trial: …"), without rows.
func (w *Writer) MarkUnrecorded(rec *TrialRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.m.Trial(rec.TrialID)
	if e == nil {
		w.m.Trials = append(w.m.Trials, TrialEntry{TrialID: rec.TrialID, Index: rec.Index, Repetition: rec.Repetition})
		e = &w.m.Trials[len(w.m.Trials)-1]
	}
	e.Status = rec.Status
	if e.Status == "" || e.Status == StatusOK {
		e.Status = StatusFailed
	}
	e.Error = rec.Error
	e.StartedAt = timePtr(rec.StartedAt)
	e.FinishedAt = timePtr(rec.FinishedAt)
}

// isNoSpace reports whether err is a full disk or an exhausted quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// overwriteManifest is writeManifest's last resort on a full disk: it
// writes m as compact JSON over dir/manifest.json in place, which needs no
// new blocks when the compact form is no longer than the indented one
// there. It is not atomic (a crash during the write can leave it torn), so
// it is used only when the atomic rewrite had no room.
func overwriteManifest(dir string, m *Manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	path := filepath.Join(dir, "manifest.json")
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() < int64(len(b)) {
		return fmt.Errorf("no room to rewrite %s in place (%d bytes, the new one has %d)", path, fi.Size(), len(b))
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		return err
	}
	return f.Sync()
}
