package run

import (
	"time"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
)

// Reporter receives progress events. Implementations must be safe for
// concurrent use (independent steps run concurrently). The command's
// terminal and log output is one (cmd/benchflow/console.go).
type Reporter interface {
	RunStart(runID, dir string, trials int)
	TrialStart(t *plan.Trial, total int)
	StepStart(t *plan.Trial, step string)
	LoadProgress(t *plan.Trial, step string, p load.Progress)
	LoadDone(t *plan.Trial, step string, r *measure.Record)
	StepDone(t *plan.Trial, step string, err error)
	// TrialAttempt comes just before TrialDone when the trial's attempt
	// is final: attempt is its number (1 unless busy attempts were
	// discarded), of how many it could have been (busy_rerun + 1, fewer
	// once re-runs stopped), and busy the kind of busy machine it met
	// when it is kept flagged ("noisy", "busy start"), else "".
	TrialAttempt(t *plan.Trial, attempt, of int, busy string)
	// TrialDone: elapsed is the time of that attempt alone.
	TrialDone(t *plan.Trial, rec *results.TrialRecord, elapsed time.Duration)
	RunDone(s *Summary)
	Logf(format string, args ...any)  // shown with --verbose
	Warnf(format string, args ...any) // always shown
}

type nopReporter struct{}

func (nopReporter) RunStart(string, string, int)                               {}
func (nopReporter) TrialStart(*plan.Trial, int)                                {}
func (nopReporter) StepStart(*plan.Trial, string)                              {}
func (nopReporter) LoadProgress(*plan.Trial, string, load.Progress)            {}
func (nopReporter) LoadDone(*plan.Trial, string, *measure.Record)              {}
func (nopReporter) StepDone(*plan.Trial, string, error)                        {}
func (nopReporter) TrialAttempt(*plan.Trial, int, int, string)                 {}
func (nopReporter) TrialDone(*plan.Trial, *results.TrialRecord, time.Duration) {}
func (nopReporter) RunDone(*Summary)                                           {}
func (nopReporter) Logf(string, ...any)                                        {}
func (nopReporter) Warnf(string, ...any)                                       {}
