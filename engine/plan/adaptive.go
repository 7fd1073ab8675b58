package plan

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// Rounds is the highest repetition number among the plan's trials.
func (pl *Plan) Rounds() int {
	n := 0
	for _, t := range pl.Trials {
		n = max(n, t.Repetition)
	}
	return n
}

// AddRound appends one more round (repetition) of the given cells (indexes
// into Cells), in cell order, after the trials already planned, and
// dry-evaluates them as Build does. It returns the new trials.
func (pl *Plan) AddRound(cells []int) ([]*Trial, hcl.Diagnostics) {
	r := pl.Rounds() + 1
	var ts []*Trial
	for _, ci := range cells {
		if ci < 0 || ci >= len(pl.Cells) {
			continue
		}
		c := pl.Cells[ci]
		ts = append(ts, &Trial{ID: fmt.Sprintf("c%02d-r%d", c.Index+1, r), Index: len(pl.Trials) + len(ts),
			Cell: c.Index, Repetition: r, Params: c.Params})
	}
	var prev *Trial
	if len(pl.Trials) > 0 {
		prev = pl.Trials[len(pl.Trials)-1]
	}
	d := pl.secrets().withhold(pl.prepare(ts, prev))
	if !d.HasErrors() {
		pl.Trials = append(pl.Trials, ts...)
	}
	return ts, d
}

// TrialEstimate is the time one trial spends in its warm and load steps,
// from their durations (defaults 5 s and 10 s; until = "steady" counts its
// maximum); a step bounded only by requests counts 0. Provisioning, health
// checks and teardown come on top. It evaluates the first trial.
func (pl *Plan) TrialEstimate() time.Duration {
	if len(pl.Trials) == 0 {
		return 0
	}
	te := pl.NewTrialEval(pl.Trials[0], true)
	var total time.Duration
	for _, n := range pl.Steps {
		b := steps.BehaviourOf(n.Step.Kind)
		if !b.Drives {
			continue
		}
		cfg, d := te.Step(n.Step)
		if d.HasErrors() {
			continue
		}
		c := steps.LoadOf(cfg)
		dur, err := pipeline.ParseDuration(c.Duration)
		if err != nil {
			continue
		}
		if c.Duration == "" {
			switch {
			case c.Requests > 0:
				dur = 0
			case b.Warms() && c.Until == "steady":
				dur = 30 * time.Second
			case b.Warms():
				dur = 5 * time.Second
			default:
				dur = 10 * time.Second
			}
		}
		total += dur
	}
	return total
}

// adaptiveLine describes adaptive repetitions for the text plan.
func (pl *Plan) adaptiveLine() string {
	a := pl.Adaptive
	if a == nil {
		return ""
	}
	cells := len(pl.Cells)
	est := pl.TrialEstimate()
	s := fmt.Sprintf("adaptive repetitions: %d to %d per cell, adding rounds of the cells whose 95%% interval of req/s is wider than ±%s",
		a.Min, a.Max, fmtPercent(a.Precision))
	if a.Budget > 0 {
		s += fmt.Sprintf(", within a budget of %s", a.Budget)
	}
	s += fmt.Sprintf("\nestimated duration: %s (%d trials) to %s (%d trials), at ~%s of warm and load per trial (provisioning adds to it)",
		roundDur(est*time.Duration(cells*a.Min)), cells*a.Min, roundDur(est*time.Duration(cells*a.Max)), cells*a.Max, roundDur(est))
	return s
}

func fmtPercent(f float64) string { return fmt.Sprintf("%g%%", f*100) }

func roundDur(d time.Duration) time.Duration { return d.Round(time.Second) }
