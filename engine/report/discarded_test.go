package report

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
)

// TestDiscardedAttemptsLeftOutOfEstimates: an attempt re-run because the
// machine was busy (busy_rerun) is in the tables, flagged, and in no
// estimate: the cell's repetitions, interval, histogram and claims are
// those of the attempts that count, and the notices say what was re-run.
func TestDiscardedAttemptsLeftOutOfEstimates(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 7))
	m := &results.Manifest{
		RunID: "rerun", Pipeline: results.PipelineInfo{Name: "p", SHA256: "abc", Format: "hcl"},
		BenchflowVersion: "test", StartedAt: t0, Order: "interleaved", Repetitions: 3,
		Matrix: map[string]any{"size": []any{"6"}}, Axes: []string{"size"},
		Environment: map[string]any{"fingerprint": "f"},
	}
	quiet := &results.QuietCheck{WindowS: 1, OtherPct: 2}
	busy := &results.QuietCheck{WindowS: 1, OtherPct: 97, Top: "sh 97%", Busy: true}
	mk := func(id string, rep, attempt int, rps float64, q *results.QuietCheck, discarded string) *results.TrialRecord {
		verdict := "client-bound"
		if q.Busy {
			verdict = "noisy"
		}
		return &results.TrialRecord{
			TrialID: id, Index: rep - 1, Repetition: rep, Attempt: attempt, Discarded: discarded,
			Params: []results.Param{{Name: "size", Value: "6"}}, Provider: "host", Status: results.StatusOK,
			StartedAt: t0, FinishedAt: t0.Add(time.Minute),
			Steps: []results.StepRecord{{Name: "main", Kind: "load", Status: results.StatusOK,
				Result: synthLoad(rng, rps, 500, 3, 100), Quiet: q, Verdict: verdict}},
		}
	}
	recs := []*results.TrialRecord{
		mk("c01-r1", 1, 1, 10000, quiet, ""),
		// The busy attempt: a tenth of the req/s, which would widen the
		// interval tenfold were it counted.
		mk("c01-r2-a1", 2, 1, 1000, busy, "busy start: processes outside the run used 97% of a core before step main (sh 97%)"),
		mk("c01-r2", 2, 2, 10100, quiet, ""),
		mk("c01-r3", 3, 1, 9900, quiet, ""),
	}
	for _, r := range recs {
		if r.Discarded == "" {
			m.Trials = append(m.Trials, results.TrialEntry{TrialID: r.TrialID, Index: r.Index, Repetition: r.Repetition})
		}
	}
	w, err := results.Create(dir, m, []byte("pipeline {}"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.CommitTrial(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(results.RunOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, compact := range []bool{false, true} {
		if compact {
			if _, err := results.Compact(w.Dir()); err != nil {
				t.Fatal(err)
			}
		}
		run, err := results.ReadRun(w.Dir())
		if err != nil {
			t.Fatal(err)
		}
		// The tables keep the discarded attempt, flagged.
		var flagged []string
		for _, r := range run.Trials {
			if r.Discarded {
				flagged = append(flagged, r.TrialID)
				if r.Attempt != 1 || !strings.HasPrefix(r.DiscardedWhy, "busy start") {
					t.Errorf("compacted %v: discarded row %s: attempt %d, why %q", compact, r.TrialID, r.Attempt, r.DiscardedWhy)
				}
			} else if r.TrialID == "c01-r2" && r.Attempt != 2 {
				t.Errorf("compacted %v: the re-run's attempt is %d, want 2", compact, r.Attempt)
			}
		}
		if len(flagged) != 1 || flagged[0] != "c01-r2-a1" {
			t.Fatalf("compacted %v: discarded rows %v, want [c01-r2-a1]", compact, flagged)
		}
		if len(run.Manifest.Trials) != 3 || len(run.Manifest.Discarded) != 1 || run.Manifest.Discarded[0].Discarded == "" {
			t.Fatalf("compacted %v: manifest has %d trials and discarded %+v, want 3 and the one attempt", compact, len(run.Manifest.Trials), run.Manifest.Discarded)
		}
		s, err := Summarize(run, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Cells) != 1 {
			t.Fatalf("%d cells", len(s.Cells))
		}
		c := s.Cells[0]
		if c.N != 3 || s.Trials != 3 || s.TrialsOK != 3 {
			t.Errorf("compacted %v: cell n=%d, trials %d ok %d; want 3 of 3 (the discarded attempt is not a repetition)", compact, c.N, s.Trials, s.TrialsOK)
		}
		for _, id := range c.TrialIDs {
			if id == "c01-r2-a1" {
				t.Errorf("compacted %v: the discarded attempt is among the cell's trials %v", compact, c.TrialIDs)
			}
		}
		if lo := c.RPS.Low; lo < 9000 {
			t.Errorf("compacted %v: interval low %.0f req/s: the busy attempt (1,000 req/s) is in the estimate", compact, lo)
		}
		notices := strings.Join(s.Notices, "\n")
		if !strings.Contains(notices, "c01-r2-a1 (busy start)") || !strings.Contains(notices, "left out of every estimate") {
			t.Errorf("compacted %v: the notices do not say what was re-run:\n%s", compact, notices)
		}
		if strings.Contains(notices, "started on a busy machine") || strings.Contains(notices, "noisy") {
			t.Errorf("compacted %v: the counted attempts were quiet, yet the notices call them busy:\n%s", compact, notices)
		}
		state := results.MachineStateOf(run.Trials)
		if got := state.String(); got != "quiet (1 busy attempt re-run and discarded)" {
			t.Errorf("compacted %v: machine state %q", compact, got)
		}
	}
}
