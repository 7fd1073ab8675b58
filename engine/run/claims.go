package run

import (
	"fmt"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/report"
	"github.com/benchflow/benchflow/engine/results"
)

// claimSpecs records the plan's claims for manifest.json.
func claimSpecs(pl *plan.Plan) []results.ClaimSpec {
	var out []results.ClaimSpec
	for _, cp := range pl.Claims {
		c := cp.Claim
		sp := results.ClaimSpec{Name: c.Name, Description: c.Description, Kind: c.Kind, Metric: c.Metric, Step: cp.Step,
			Cell: claimParams(c.Cell), VersusMetric: c.VersusMetric, Verdict: c.Verdict}
		if c.Kind != claims.KindVerdict {
			sp.Bound, sp.BoundOp, sp.BoundValue = c.Bound.Text, c.Bound.Op, c.Bound.Value
		}
		if len(c.Versus) > 0 {
			sp.Versus = claimParams(c.Versus)
		}
		out = append(out, sp)
	}
	return out
}

func claimParams(ps []claims.Param) map[string]any {
	if len(ps) == 0 {
		return nil
	}
	m := map[string]any{}
	for _, p := range ps {
		m[p.Name] = plan.GoValue(p.Value)
	}
	return m
}

// recordClaims judges the run's claims on what it wrote and records them
// in claims.parquet; the outcomes go into the run's summary.
func (r *Runner) recordClaims(dir string, s *Summary) error {
	run, err := results.ReadRun(dir)
	if err != nil {
		return fmt.Errorf("evaluating claims: %w", err)
	}
	if len(run.Manifest.Claims) == 0 {
		return nil
	}
	outs, err := report.EvaluateClaims(run)
	if err != nil {
		return fmt.Errorf("evaluating claims: %w", err)
	}
	s.Claims = outs
	if err := results.WriteClaims(run.Dir, run.Format, report.ClaimRows(run.Manifest.RunID, run.Manifest.Claims, outs)); err != nil {
		return fmt.Errorf("recording claims: %w", err)
	}
	return nil
}
