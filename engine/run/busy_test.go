package run

import (
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

func TestBusyReason(t *testing.T) {
	quiet := &results.QuietCheck{WindowS: 1, OtherPct: 3}
	busy := &results.QuietCheck{WindowS: 1, OtherPct: 88, Top: "cc1 88%", Busy: true}
	cases := []struct {
		name string
		rec  results.TrialRecord
		want string // prefix; "" = not busy
	}{
		{"quiet", results.TrialRecord{Status: results.StatusOK, Steps: []results.StepRecord{{Name: "main", Kind: "load", Quiet: quiet, Verdict: "server-bound"}}}, ""},
		{"busy start", results.TrialRecord{Status: results.StatusOK, Steps: []results.StepRecord{{Name: "main", Kind: "load", Quiet: busy, Verdict: "noisy"}}},
			"busy start: processes outside the run used 88% of a core before step main (cc1 88%)"},
		{"noisy during the load", results.TrialRecord{Status: results.StatusOK, Steps: []results.StepRecord{{Name: "main", Kind: "load", Quiet: quiet, Verdict: "noisy", VerdictEvidence: "other 45%"}}},
			"noisy: step main: other 45%"},
		{"a busy warm-up is not the measurement", results.TrialRecord{Status: results.StatusOK, Steps: []results.StepRecord{{Name: "w", Kind: "warm", Quiet: busy, Verdict: "noisy"}, {Name: "main", Kind: "load", Quiet: quiet}}}, ""},
		{"a failed trial is not re-run", results.TrialRecord{Status: results.StatusFailed, Steps: []results.StepRecord{{Name: "main", Kind: "load", Quiet: busy, Verdict: "noisy"}}}, ""},
		{"no collect step: nothing tells", results.TrialRecord{Status: results.StatusOK, Steps: []results.StepRecord{{Name: "main", Kind: "load"}}}, ""},
	}
	for _, c := range cases {
		got := busyReason(&c.rec)
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: busyReason = %q, want %q", c.name, got, c.want)
		}
	}
	if got := attemptID("c01-r2", 1); got != "c01-r2-a1" {
		t.Errorf("attemptID = %q", got)
	}
	if got := shortWhy("busy start: processes outside …"); got != "busy start" {
		t.Errorf("shortWhy = %q", got)
	}
}
