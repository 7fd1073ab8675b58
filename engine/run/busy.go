package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/results"
)

// busyReason says why a finished trial found the machine busy: a load step
// that started busy (its quiet check) or whose verdict is noisy
// (processes outside the run used the CPU during the load). It is "" for
// a trial that did not succeed (a failure is not re-run) and for one
// without a whole-machine collect step (nothing tells).
func busyReason(rec *results.TrialRecord) string {
	if rec.Status != results.StatusOK {
		return ""
	}
	for _, s := range rec.Steps {
		if s.Kind == "warm" {
			continue
		}
		if q := s.Quiet; q != nil && q.Busy {
			why := fmt.Sprintf("busy start: processes outside the run used %.0f%% of a core before step %s", q.OtherPct, s.Name)
			if q.Top != "" {
				why += " (" + q.Top + ")"
			}
			return why
		}
		if s.Verdict == collect.VerdictNoisy {
			why := "noisy: step " + s.Name
			if s.VerdictEvidence != "" {
				why += ": " + s.VerdictEvidence
			}
			return why
		}
	}
	return ""
}

// attemptID is the id a discarded attempt is committed under: the trial's
// id plus "-a<attempt>" (the attempt that counts keeps the trial's id, so
// resume, reports and bundles find it by the plan's id).
func attemptID(trialID string, attempt int) string {
	return fmt.Sprintf("%s-a%d", trialID, attempt)
}

// discard turns rec into discarded attempt number attempt: its own id,
// the reason, and its logs moved beside it.
func (r *Runner) discard(rec *results.TrialRecord, attempt int, why string) {
	id := attemptID(rec.TrialID, attempt)
	logs := filepath.Join(r.w.Dir(), "logs")
	if err := os.Rename(filepath.Join(logs, rec.TrialID), filepath.Join(logs, id)); err != nil && !os.IsNotExist(err) {
		r.rep.Warnf("trial %s: keeping the logs of its discarded attempt: %v", rec.TrialID, err)
	}
	rec.TrialID, rec.Attempt, rec.Discarded = id, attempt, why
}

// shortWhy is the first clause of a discard reason, for one-line notices.
func shortWhy(why string) string {
	if i := strings.Index(why, ":"); i > 0 {
		return why[:i]
	}
	return why
}
