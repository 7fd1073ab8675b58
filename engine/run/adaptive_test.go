package run

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
	_ "github.com/benchflow/benchflow/providers/local" // the pipeline's implicit provider
)

func adaptivePlan(t *testing.T, reps string) *plan.Plan {
	t.Helper()
	src := "pipeline \"a\" {\n  repetitions = " + reps + "\n}\nmatrix {\n  x = [\"quiet\", \"noisy\"]\n}\nstep \"load\" \"m\" {\n  target = \"http://127.0.0.1:1/\"\n  duration = \"1s\"\n}\n"
	p, d := hclconf.Parse(fstest.MapFS{"a.hcl": {Data: []byte(src)}}, "a.hcl", "a.hcl")
	if d.HasErrors() {
		t.Fatal(d)
	}
	pl, d := plan.Build(p, plan.Inputs{})
	if d.HasErrors() {
		t.Fatal(d)
	}
	return pl
}

// feed records a finished trial of the given req/s for ad.
func feed(ad *adaptive, tr *plan.Trial, rps float64, elapsed time.Duration) {
	res := &measure.Record{Duration: time.Second, Requests: int64(rps)}
	ad.observe(tr, &results.TrialRecord{Status: results.StatusOK, Steps: []results.StepRecord{
		{Name: "m", Kind: "load", Status: results.StatusOK, Result: res}}}, elapsed)
}

// TestAdaptiveNext: after each round only the imprecise cell gets another
// one, up to max; a budget stops earlier; the reason is recorded.
func TestAdaptiveNext(t *testing.T) {
	pl := adaptivePlan(t, `{ min = 3, max = 5, precision = "2%" }`)
	if len(pl.Trials) != 6 || pl.Adaptive == nil {
		t.Fatalf("%d trials planned, adaptive %v", len(pl.Trials), pl.Adaptive)
	}
	ad := newAdaptive(pl)
	noisy := []float64{1000, 1500, 700, 1300, 800}
	for _, tr := range pl.Trials {
		v := 1000.0 + float64(tr.Repetition)
		if tr.Cell == 1 {
			v = noisy[tr.Repetition-1]
		}
		feed(ad, tr, v, time.Second)
	}
	for round := 4; round <= 5; round++ {
		cells := ad.next(pl)
		if len(cells) != 1 || cells[0] != 1 {
			t.Fatalf("round %d: cells %v, want only the noisy cell (1)", round, cells)
		}
		ts, d := pl.AddRound(cells)
		if d.HasErrors() || len(ts) != 1 || ts[0].ID != "c02-r"+string(rune('0'+round)) || ts[0].Index != len(pl.Trials)-1 {
			t.Fatalf("round %d: added %v (%v)", round, ts, d)
		}
		feed(ad, ts[0], noisy[round-1], time.Second)
	}
	if cells := ad.next(pl); cells != nil || ad.rec.Stopped != "max" || !strings.Contains(ad.rec.Reason, "x=noisy") {
		t.Errorf("at max: cells %v, stopped %q: %s", cells, ad.rec.Stopped, ad.rec.Reason)
	}
	rec := ad.record(pl)
	if rec.Rounds != 5 || len(rec.Cells) != 2 || rec.Cells[0].Repetitions != 3 || rec.Cells[1].Repetitions != 5 || rec.Cells[0].HalfWidth == nil || *rec.Cells[0].HalfWidth > 0.02 {
		t.Errorf("record %+v", rec)
	}

	// A budget that one more trial would exceed.
	pl = adaptivePlan(t, `{ min = 3, max = 30, precision = "2%", budget = "1m" }`)
	ad = newAdaptive(pl)
	ad.started = time.Now().Add(-55 * time.Second)
	for _, tr := range pl.Trials {
		feed(ad, tr, noisy[tr.Repetition-1], 9*time.Second)
	}
	if cells := ad.next(pl); cells != nil || ad.rec.Stopped != "budget" || !strings.Contains(ad.rec.Reason, "would not fit in the budget of 1m0s") {
		t.Errorf("budget: cells %v, stopped %q: %s", cells, ad.rec.Stopped, ad.rec.Reason)
	}

	// Everything precise after min: stop at once.
	pl = adaptivePlan(t, `{ min = 3, max = 30, precision = "5%" }`)
	ad = newAdaptive(pl)
	for _, tr := range pl.Trials {
		feed(ad, tr, 1000+float64(tr.Repetition), time.Second)
	}
	if cells := ad.next(pl); cells != nil || ad.rec.Stopped != "precision" {
		t.Errorf("precise: cells %v, stopped %q: %s", cells, ad.rec.Stopped, ad.rec.Reason)
	}
}
