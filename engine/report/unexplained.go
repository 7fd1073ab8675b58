package report

import (
	"fmt"
	"strings"

	"github.com/benchflow/benchflow/engine/collect"
)

// unexplainedSlowdown is how much slower than its baseline (req/s ratio)
// a cell must be for the report to check that the accounting explains it.
const unexplainedSlowdown = 0.9

// explainedOutsidePct is how much more CPU outside the service (infra,
// kernel, other; % of one core) than its baseline explains a slower cell
// whose verdict is undetermined.
const explainedOutsidePct = 25.0

// noteUnexplained adds a notice for each cell clearly slower than its
// baseline cell (--baseline) whose verdicts do not account for the gap:
// an undetermined verdict without much more CPU outside the service
// (infra, kernel, other: less than explainedOutsidePct of a core more),
// or the same verdict as the baseline with no more CPU outside the
// service (less than 10% of a core more). The notice gives the service's CPU per 1,000 req/s of both,
// the one number left to compare. A difference the run cannot explain is
// reported, never hidden (docs/results.md, "unexplained").
func (s *Summary) noteUnexplained() {
	if s.Baseline == "" {
		return
	}
	name, value, _ := strings.Cut(s.Baseline, "=")
	idx := -1
	for i, a := range s.Axes {
		if a == name {
			idx = i
		}
	}
	if idx < 0 {
		return
	}
	others := func(c *Cell) string {
		var b strings.Builder
		for i, p := range c.Params {
			if i != idx {
				fmt.Fprintf(&b, "%s=%v\x00", p.Name, p.Value)
			}
		}
		return b.String() + c.Step
	}
	bases := map[string]*Cell{}
	for _, c := range s.Cells {
		if fmt.Sprint(c.Params[idx].Value) == value {
			bases[others(c)] = c
		}
	}
	for _, c := range s.Cells {
		b := bases[others(c)]
		if b == nil || b == c || c.Baseline == nil || c.Verdict == nil || b.Verdict == nil ||
			c.Verdict.CPU == nil || b.Verdict.CPU == nil {
			continue
		}
		r := *c.Baseline
		slower := r.Value < unexplainedSlowdown
		if r.HasCI() {
			slower = slower && r.High < 1
		}
		if !slower {
			continue
		}
		cc, bc := c.Verdict.CPU, b.Verdict.CPU
		cOut, bOut := cc.InfraPct+cc.KernelPct+cc.OtherPct, bc.InfraPct+bc.KernelPct+bc.OtherPct
		same := c.Verdict.Kind == b.Verdict.Kind && cOut-bOut < 10
		// An undetermined verdict with much more CPU outside the service
		// than the baseline (a proxy, a storage driver: at least
		// explainedOutsidePct of a core more) is explained by the budget
		// its evidence prints.
		unclear := c.Verdict.Kind == collect.VerdictUnclear && cOut-bOut < explainedOutsidePct
		if !unclear && !same {
			continue
		}
		msg := fmt.Sprintf("%s is %.2f× %s and the accounting does not explain it (%s vs %s; infra+kernel+other %.0f%% vs %.0f%% of a core)",
			cellLabel(s, c), r.Value, cellLabel(s, b), c.Verdict.Kind, b.Verdict.Kind, cOut, bOut)
		if cr, br := c.RPS.Value, b.RPS.Value; cr > 0 && br > 0 {
			msg += fmt.Sprintf("; the service used %.1f%% vs %.1f%% of a core per 1,000 req/s", cc.ServicePct/(cr/1000), bc.ServicePct/(br/1000))
		}
		s.Notices = append(s.Notices, msg)
	}
}
