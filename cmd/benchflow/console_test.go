package main

import (
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
)

// TestConsoleOneLinePerTrial: without --verbose a trial is one line — its
// status, that attempt's own time, "attempt 2 of 3" when a busy attempt
// was discarded, "kept flagged" when still busy, and its load's figures;
// the start and the load are not lines of their own.
func TestConsoleOneLinePerTrial(t *testing.T) {
	var b strings.Builder
	c := &Console{W: &b}
	c.RunStart("r", "/tmp/r", 2)
	tr := &plan.Trial{ID: "c02-r1", Index: 1}
	rec := &results.TrialRecord{TrialID: "c02-r1", Status: results.StatusOK}
	for attempt := 1; attempt <= 2; attempt++ {
		c.TrialStart(tr, 2)
		c.LoadDone(tr, "load.main", &measure.Record{Requests: 1000, Duration: time.Second})
	}
	c.TrialAttempt(tr, 2, 3, "")
	c.TrialDone(tr, rec, 5400*time.Millisecond)
	c.TrialStart(tr, 2)
	c.TrialAttempt(tr, 1, 1, "noisy")
	c.TrialDone(tr, rec, 61*time.Second)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want the run's and one per trial:\n%s", len(lines), b.String())
	}
	if want := "[2/2] trial c02-r1: ok in 5.4s, attempt 2 of 3 · load.main 1000 req/s, p99 0.00 ms, 0 errors"; lines[1] != want {
		t.Errorf("trial line\n%q, want\n%q", lines[1], want)
	}
	if want := "[2/2] trial c02-r1: ok in 1m1s, kept flagged noisy"; lines[2] != want {
		t.Errorf("trial line\n%q, want\n%q", lines[2], want)
	}
}
