package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// ClaimPlan is a claim checked against the matrix: the load step it
// judges and the cells it selects (indexes into Plan.Cells).
type ClaimPlan struct {
	Claim  *claims.Claim
	Step   string // the load step (the claim's, or the only one)
	Cells  []int
	Versus []int // for each of Cells, its versus cell (ratio claims with versus)
}

// checkClaims matches every claim's cells against the matrix and its step
// and metric against the steps: a claim that selects no cell, names an
// axis or a value the matrix does not have, or a metric no step records
// is an error here, before anything runs. A claim whose enabled is false
// goes to ClaimsOff: its step, metric and axis names are still checked
// (they do not depend on variables), not the values it selects.
func (pl *Plan) checkClaims() hcl.Diagnostics {
	p := pl.Pipeline
	var diags hcl.Diagnostics
	errAt := func(rng hcl.Range, summary, format string, args ...any) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()})
	}
	var loads []string
	searches := map[string]bool{}
	collect := false
	for _, s := range p.Steps {
		switch s.Kind {
		case pipeline.KindLoad:
			loads = append(loads, s.Name)
			searches[s.Name] = steps.SearchBlock(s.Body) != nil
		case pipeline.KindCollect:
			collect = true
		}
	}
	axisNames := make([]string, len(pl.Axes))
	for i, a := range pl.Axes {
		axisNames[i] = a.Name
	}
	ectx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(pl.Vars)}, Functions: pl.functions}
	for _, c := range p.Claims {
		on, d := claimEnabled(c, ectx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		cp := ClaimPlan{Claim: c, Step: c.Step}
		switch {
		case c.Step != "":
			found := false
			for _, l := range loads {
				found = found || l == c.Step
			}
			if !found {
				errAt(c.StepRange, "Unknown claim step", "There is no load step %q.%s Load steps: %s.", c.Step, diag.Suggest(c.Step, loads), listOrNone(loads))
				continue
			}
		case len(loads) == 1:
			cp.Step = loads[0]
		case len(loads) == 0:
			errAt(c.DeclRange, "Claim without a load step", "Claim %q judges what a load step measured, and the pipeline has no load step.", c.Name)
			continue
		default:
			errAt(c.DeclRange, "Ambiguous claim step", "The pipeline has several load steps (%s): say which one claim %q is about with step = \"name\".", strings.Join(loads, ", "), c.Name)
			continue
		}
		if m := c.VersusMetric; m != "" && (claims.FromCollect(m) && !collect || m == "capacity_rps" && !searches[cp.Step]) {
			errAt(c.VersusMetricRange, "Claim on a metric no step records", "Claim %q divides by %s, which no step of the pipeline records (cpu_* come from a collect step during the load, capacity_rps from a load step's search block).", c.Name, m)
			continue
		}
		switch {
		case claims.FromCollect(c.Metric) && !collect, c.Kind == claims.KindVerdict && !collect:
			what := "metric " + c.Metric
			if c.Kind == claims.KindVerdict {
				what = "a verdict"
			}
			errAt(c.MetricRange, "Claim on a metric no step records", "Claim %q judges %s, which comes from the whole-machine accounting of a collect step during the load; the pipeline has no collect step.", c.Name, what)
			continue
		case c.Metric == "capacity_rps" && !searches[cp.Step]:
			errAt(c.MetricRange, "Claim on a metric no step records", "capacity_rps is the result of a capacity search; load step %q has no search block.", cp.Step)
			continue
		}
		ok := true
		for _, prm := range append(append([]claims.Param(nil), c.Cell...), c.Versus...) {
			ax := pl.axis(prm.Name)
			if ax == nil {
				errAt(prm.Range, "Unknown claim parameter", "The matrix has no axis %q.%s Axes: %s.", prm.Name, diag.Suggest(prm.Name, axisNames), listOrNone(axisNames))
				ok = false
				continue
			}
			if !on {
				continue // values are matched only for a claim that is on
			}
			want := claims.PrimitiveString(prm.Value)
			var vals []string
			found := false
			for _, v := range ax.Values {
				s := claims.PrimitiveString(v)
				vals = append(vals, strconv.Quote(s))
				found = found || s == want
			}
			if !found {
				errAt(prm.Range, "No cell matches the claim", "Axis %q has no value %q; its values are %s.", prm.Name, want, strings.Join(vals, ", "))
				ok = false
			}
		}
		if !ok {
			continue
		}
		if !on {
			pl.ClaimsOff = append(pl.ClaimsOff, c)
			continue
		}
		for i, cell := range pl.Cells {
			if !cellMatches(cell, c.Cell) {
				continue
			}
			if c.Kind != claims.KindRatio || len(c.Versus) == 0 {
				cp.Cells = append(cp.Cells, i)
				continue
			}
			j := pl.versusCell(cell, c.Versus)
			if j < 0 {
				errAt(c.VersusRange, "No versus cell", "Cell %s has no counterpart with %s in the matrix (an exclude removed it?): a ratio claim compares each selected cell with the cell that differs only by versus.",
					cellString(cell), claims.ParamString(c.Versus))
				ok = false
				break
			}
			cp.Cells = append(cp.Cells, i)
			cp.Versus = append(cp.Versus, j)
		}
		if !ok {
			continue
		}
		if len(cp.Cells) == 0 {
			errAt(c.CellRange, "No cell matches the claim", "No matrix cell has %s (an exclude removed them, or the values never meet).", claims.ParamString(c.Cell))
			continue
		}
		pl.Claims = append(pl.Claims, cp)
	}
	return diags
}

// claimEnabled evaluates a claim's enabled (true without one) with the
// plan's variables: the only things known when claims are matched
// against the matrix.
func claimEnabled(c *claims.Claim, ctx *hcl.EvalContext) (bool, hcl.Diagnostics) {
	if c.Enabled == nil {
		return true, nil
	}
	var diags hcl.Diagnostics
	for _, tr := range c.Enabled.Variables() {
		if tr.RootName() != "var" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference in claim enabled",
				Detail: fmt.Sprintf("Claim %q: enabled refers to %s; it may only use variables (var.*) and functions, the only things known when claims are matched against the matrix.",
					c.Name, traversalString(tr)),
				Subject: tr.SourceRange().Ptr()})
		}
	}
	if diags.HasErrors() {
		return false, diags
	}
	v, d := c.Enabled.Value(ctx)
	if d.HasErrors() {
		return false, d
	}
	v, _ = v.UnmarkDeep()
	bad := func(got string) (bool, hcl.Diagnostics) {
		return false, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid claim enabled",
			Detail:  fmt.Sprintf("Claim %q: enabled must be true or false, like contains(var.paths, \"gateway\"); got %s.", c.Name, got),
			Subject: c.EnabledRange.Ptr()}}
	}
	switch {
	case !v.IsKnown():
		return bad("a value not known before the run")
	case v.IsNull():
		return bad("null")
	case v.Type() != cty.Bool:
		return bad("a " + v.Type().FriendlyName())
	}
	return v.True(), nil
}

func (pl *Plan) axis(name string) *Axis {
	for i := range pl.Axes {
		if pl.Axes[i].Name == name {
			return &pl.Axes[i]
		}
	}
	return nil
}

func cellMatches(c Cell, want []claims.Param) bool {
	for _, w := range want {
		found := false
		for _, p := range c.Params {
			if p.Name == w.Name {
				found = claims.PrimitiveString(p.Value) == claims.PrimitiveString(w.Value)
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// versusCell is the index of the cell with c's parameters but those of
// versus, or -1.
func (pl *Plan) versusCell(c Cell, versus []claims.Param) int {
	for i, o := range pl.Cells {
		if !cellMatches(o, versus) {
			continue
		}
		same := true
		for _, p := range c.Params {
			overridden := false
			for _, v := range versus {
				overridden = overridden || v.Name == p.Name
			}
			if overridden {
				continue
			}
			for _, q := range o.Params {
				if q.Name == p.Name && claims.PrimitiveString(q.Value) != claims.PrimitiveString(p.Value) {
					same = false
				}
			}
		}
		if same {
			return i
		}
	}
	return -1
}

func cellString(c Cell) string {
	var parts []string
	for _, p := range c.Params {
		parts = append(parts, p.Name+"="+claims.PrimitiveString(p.Value))
	}
	return strings.Join(parts, ", ")
}

// OffLine is what `plan` says of a claim whose enabled is false.
const OffLine = "off (enabled = false): not matched against the matrix, not judged, not recorded"

// ClaimLine is a claim in words for `plan`: "rps of deploy=nat / deploy=host < 0.6 (2 cells)".
func (cp ClaimPlan) ClaimLine() string {
	c := cp.Claim
	cells := fmt.Sprintf("%d cell", len(cp.Cells))
	if len(cp.Cells) != 1 {
		cells += "s"
	}
	sel := claims.ParamString(c.Cell)
	if sel == "" {
		sel = "every cell"
	}
	switch c.Kind {
	case claims.KindVerdict:
		return fmt.Sprintf("verdict of %s is %s (%s)", sel, c.Verdict, cells)
	case claims.KindRatio:
		if c.VersusMetric != "" {
			return fmt.Sprintf("%s / %s of %s %s (per trial; %s, step %s)", c.Metric, c.VersusMetric, sel, c.Bound.Text, cells, cp.Step)
		}
		return fmt.Sprintf("%s of %s / %s %s (%s, step %s)", c.Metric, sel, claims.ParamString(c.Versus), c.Bound.Text, cells, cp.Step)
	default:
		return fmt.Sprintf("%s of %s %s (%s, step %s)", c.Metric, sel, c.Bound.Text, cells, cp.Step)
	}
}
