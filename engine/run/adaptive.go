package run

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
	"github.com/benchflow/benchflow/engine/steps"
)

// adaptive drives repetitions = { min, max, precision, budget }: it
// collects each cell's req/s per load step as trials finish and, when the
// planned trials are done, decides whether to add a round and of which
// cells (docs/language.md, "pipeline").
type adaptive struct {
	a       *pipeline.Adaptive
	exclude bool // exclude_unsteady: unsteady repetitions do not count
	started time.Time
	// rps[cell][step] lists the successful repetitions' req/s.
	rps   map[int]map[string][]float64
	steps []string      // load step names, first seen order
	ran   map[int]int   // trials run per cell
	spent time.Duration // time spent in trials
	n     int           // trials run
	rec   results.AdaptiveRecord
}

func newAdaptive(pl *plan.Plan) *adaptive {
	a := pl.Adaptive
	return &adaptive{a: a, exclude: pl.Pipeline.ExcludeUnsteady, started: time.Now(),
		rps: map[int]map[string][]float64{}, ran: map[int]int{},
		rec: results.AdaptiveRecord{Min: a.Min, Max: a.Max, Precision: a.Precision, BudgetS: a.Budget.Seconds()}}
}

// observe records a finished trial.
func (ad *adaptive) observe(t *plan.Trial, rec *results.TrialRecord, elapsed time.Duration) {
	ad.ran[t.Cell]++
	ad.spent += elapsed
	ad.n++
	if ad.rps[t.Cell] == nil {
		ad.rps[t.Cell] = map[string][]float64{}
	}
	for _, s := range rec.Steps {
		if !steps.BehaviourOf(s.Kind).Measures {
			continue
		}
		if !contains(ad.steps, s.Name) {
			ad.steps = append(ad.steps, s.Name)
		}
		if rec.Status != results.StatusOK || s.Status != results.StatusOK || s.Result == nil {
			continue
		}
		if ad.exclude {
			if ok, _ := results.SteadyOf(s.Result); !ok {
				continue
			}
		}
		ad.rps[t.Cell][s.Name] = append(ad.rps[t.Cell][s.Name], s.Result.RPS())
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// widest is a cell's largest relative half-width over its load steps.
func (ad *adaptive) widest(cell int) float64 {
	w := 0.0
	for _, st := range ad.steps {
		w = math.Max(w, stats.RelativeHalfWidth(ad.rps[cell][st]))
	}
	if len(ad.steps) == 0 {
		return math.Inf(1)
	}
	return w
}

// next decides after a round: the cells to run once more, or none with
// the reason the run stops (recorded in the manifest).
func (ad *adaptive) next(pl *plan.Plan) []int {
	var want, atMax []int
	worst, worstCell := 0.0, -1
	for _, c := range pl.Cells {
		w := ad.widest(c.Index)
		if w <= ad.a.Precision {
			continue
		}
		if w > worst || worstCell < 0 {
			worst, worstCell = w, c.Index
		}
		if ad.ran[c.Index] >= ad.a.Max {
			atMax = append(atMax, c.Index)
			continue
		}
		want = append(want, c.Index)
	}
	prec := fmtPct(ad.a.Precision)
	ad.rec.Rounds = pl.Rounds()
	switch {
	case worstCell < 0:
		ad.stop("precision", fmt.Sprintf("every cell's 95%% interval of req/s is within ±%s after %d rounds", prec, pl.Rounds()))
		return nil
	case len(want) == 0:
		ad.stop("max", fmt.Sprintf("%d cell(s) reached max = %d repetitions with intervals still wider than ±%s (widest ±%s: %s)",
			len(atMax), ad.a.Max, prec, fmtPct(worst), cellName(pl, worstCell)))
		return nil
	}
	if ad.a.Budget > 0 && ad.n > 0 {
		perTrial := ad.spent / time.Duration(ad.n)
		if used, round := time.Since(ad.started), perTrial*time.Duration(len(want)); used+round > ad.a.Budget {
			ad.stop("budget", fmt.Sprintf("the next round (%d trials, ~%s) would not fit in the budget of %s (%s used); %d cell(s) still wider than ±%s (widest ±%s: %s)",
				len(want), round.Round(time.Second), ad.a.Budget, used.Round(time.Second), len(want)+len(atMax), prec, fmtPct(worst), cellName(pl, worstCell)))
			return nil
		}
	}
	return want
}

func (ad *adaptive) stop(why, reason string) {
	ad.rec.Stopped, ad.rec.Reason = why, reason
}

// record is the manifest's "adaptive" object.
func (ad *adaptive) record(pl *plan.Plan) *results.AdaptiveRecord {
	r := ad.rec
	r.Rounds = pl.Rounds()
	r.Cells = nil
	for _, c := range pl.Cells {
		for _, st := range ad.steps {
			ac := results.AdaptiveCell{Params: paramsMap(c.Params), Step: st, Repetitions: ad.ran[c.Index]}
			if w := stats.RelativeHalfWidth(ad.rps[c.Index][st]); !math.IsInf(w, 0) {
				ac.HalfWidth = &w
			}
			r.Cells = append(r.Cells, ac)
		}
	}
	return &r
}

func cellName(pl *plan.Plan, cell int) string {
	for _, c := range pl.Cells {
		if c.Index == cell {
			var parts []string
			for _, p := range c.Params {
				parts = append(parts, p.Name+"="+plan.ValueString(p.Value))
			}
			if len(parts) == 0 {
				return "the only cell"
			}
			return strings.Join(parts, ", ")
		}
	}
	return fmt.Sprintf("cell %d", cell+1)
}

func fmtPct(f float64) string {
	if math.IsInf(f, 0) {
		return "∞ (fewer than 3 successful repetitions)"
	}
	return fmt.Sprintf("%.2g%%", 100*f)
}

// addRound asks ad whether another round is needed and plans it.
func (r *Runner) addRound(ctx context.Context, ad *adaptive, s *Summary) {
	if ctx.Err() != nil {
		return
	}
	cells := ad.next(r.plan)
	if len(cells) == 0 {
		r.rep.Logf("adaptive repetitions: stopping (%s): %s", ad.rec.Stopped, ad.rec.Reason)
		return
	}
	worst := 0.0
	for _, c := range cells {
		worst = math.Max(worst, ad.widest(c))
	}
	ts, d := r.plan.AddRound(cells)
	if d.HasErrors() {
		ad.stop("error", "planning round "+fmt.Sprint(r.plan.Rounds()+1)+": "+diag.Err(d).Error())
		r.rep.Warnf("adaptive repetitions: %s", ad.rec.Reason)
		return
	}
	s.Trials += len(ts)
	r.rep.Logf("adaptive repetitions: round %d for %d of %d cells, still wider than ±%s (widest ±%s)",
		ts[0].Repetition, len(cells), len(r.plan.Cells), fmtPct(ad.a.Precision), fmtPct(worst))
}
