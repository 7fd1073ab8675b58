package claims

import (
	"fmt"
	"strings"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

var claimSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "description"}, {Name: "metric"}, {Name: "step"}, {Name: "cell"},
		{Name: "versus"}, {Name: "versus_metric"}, {Name: "ratio"}, {Name: "value"}, {Name: "verdict"},
		{Name: "enabled"},
	},
}

// Decode decodes the body of a claim block (both front ends). Its
// values are literals, but for enabled, an expression of variables kept
// for engine/plan, which evaluates it and checks what the claim matches
// against the matrix.
func Decode(name string, at hcl.Range, body hcl.Body) (*Claim, hcl.Diagnostics) {
	c := &Claim{Name: name, DeclRange: at, CellRange: at, VersusRange: at, StepRange: at, MetricRange: at, VersusMetricRange: at, EnabledRange: at}
	content, diags := body.Content(claimSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	attr := func(n string) *hcl.Attribute { return content.Attributes[n] }
	if a := attr("enabled"); a != nil {
		c.Enabled, c.EnabledRange = a.Expr, a.Expr.Range()
	}
	str := func(n string) (string, hcl.Range, bool) {
		a := attr(n)
		if a == nil {
			return "", at, false
		}
		v, d := a.Expr.Value(nil)
		if d.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid claim argument",
				Detail:   fmt.Sprintf("%s of a claim must be a literal string.", n),
				Subject:  a.Expr.Range().Ptr(),
			})
			return "", a.Expr.Range(), false
		}
		return v.AsString(), a.Expr.Range(), true
	}
	errAt := func(rng hcl.Range, summary, detail string, args ...any) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(detail, args...), Subject: rng.Ptr()})
	}
	c.Description, _, _ = str("description")
	metric, mrng, hasMetric := str("metric")
	c.Metric, c.MetricRange = metric, mrng
	c.Step, c.StepRange, _ = str("step")
	if a := attr("cell"); a != nil {
		c.CellRange = a.Expr.Range()
		c.Cell = claimParams(a, &diags)
	}
	if a := attr("versus"); a != nil {
		c.VersusRange = a.Expr.Range()
		c.Versus = claimParams(a, &diags)
	}
	ratio, rrng, hasRatio := str("ratio")
	value, vrng, hasValue := str("value")
	verdict, drng, hasVerdict := str("verdict")
	vmetric, vmrng, hasVersusMetric := str("versus_metric")
	c.VersusMetric, c.VersusMetricRange = vmetric, vmrng
	hasVersus := attr("versus") != nil
	if diags.HasErrors() {
		return nil, diags
	}

	if hasVerdict {
		c.Kind = KindVerdict
		c.Verdict = verdict
		for _, other := range []string{"metric", "ratio", "value", "versus", "versus_metric"} {
			if a := attr(other); a != nil {
				errAt(a.NameRange, "Verdict claim with a bound",
					"A claim with verdict = … states the cell's bottleneck verdict; it takes no %s (write a second claim for a metric).", other)
			}
		}
		known := false
		for _, v := range Verdicts {
			known = known || v == verdict
		}
		if !known {
			errAt(drng, "Unknown verdict", "There is no verdict %q.%s Verdicts are %s.", verdict,
				diag.Suggest(verdict, Verdicts), strings.Join(quoteAll(Verdicts), ", "))
		}
		if len(c.Cell) == 0 {
			errAt(at, "Missing claim cell", "A verdict claim names the cells it is about: cell = { axis = \"value\" }.")
		}
		return c, diags
	}
	if !hasMetric {
		errAt(at, "Missing claim metric", "A claim needs metric = \"rps\" (or another trials column: %s) with ratio = or value =, or verdict = \"server-bound\".",
			strings.Join(MetricNames(), ", "))
		return nil, diags
	}
	m, ok := LookupMetric(metric)
	unit := m.Unit
	if !ok {
		errAt(mrng, "Unknown claim metric", "There is no claim metric %q.%s Metrics are %s.", metric,
			diag.Suggest(metric, MetricNames()), MetricsText())
	}
	vm, vok := LookupMetric(vmetric)
	vunit := vm.Unit
	if hasVersusMetric && !vok {
		errAt(vmrng, "Unknown claim metric", "There is no claim metric %q.%s Metrics are %s.", vmetric,
			diag.Suggest(vmetric, MetricNames()), MetricsText())
	}
	switch {
	case hasVersusMetric && hasVersus:
		errAt(vmrng, "Both versus and versus_metric", "A ratio claim divides the metric of its cells either by the same metric of other cells (versus = { axis = \"value\" }) or by another metric of the same trials (versus_metric = \"latency_p50_us\"), not both: write two claims.")
	case hasVersusMetric && hasValue:
		errAt(vmrng, "Versus metric without ratio", "versus_metric = … divides metric by another metric of the same trials: bound that ratio (ratio = \"> 3\") instead of the value.")
	case hasVersusMetric && !hasRatio:
		errAt(vmrng, "Versus metric without ratio", "versus_metric = … divides metric by another metric of the same trials: add ratio = \"> 3\" (metric / versus_metric).")
	case hasVersusMetric && vmetric == metric:
		errAt(vmrng, "Versus metric is the metric", "versus_metric must name another metric than metric = %q; as written the ratio is 1 by construction.", metric)
	case hasVersusMetric && ok && vok && unit != vunit:
		errAt(vmrng, "Versus metric in another unit", "metric %q is in %s and versus_metric %q in %s: a ratio of two metrics of one trial compares like with like (two latencies, two CPU shares, two rates).", metric, unit, vmetric, vunit)
	case hasVersusMetric:
		c.Kind = KindRatio
		b, err := ParseBound(ratio, "")
		if err != nil {
			errAt(rrng, "Invalid claim bound", "The ratio bound %s.", err)
		}
		c.Bound = b
		return c, diags
	case hasRatio && hasValue:
		errAt(vrng, "Both ratio and value", "A claim bounds either the ratio of its cell to the versus cell (ratio = \"< 0.6\") or the cell's own value (value = \"< 10ms\"), not both.")
	case hasRatio && !hasVersus:
		errAt(rrng, "Ratio without versus", "ratio = … compares the cell with other cells: add versus = { axis = \"value\" } (the cells it is compared with), or versus_metric = \"latency_p50_us\" (another metric of the same trials), or bound the value itself with value = ….")
	case hasValue && hasVersus:
		errAt(attr("versus").NameRange, "Versus without ratio", "versus = … names the cells to compare with: bound the ratio (ratio = \"< 0.6\") instead of the value.")
	case hasRatio:
		c.Kind = KindRatio
		b, err := ParseBound(ratio, "")
		if err != nil {
			errAt(rrng, "Invalid claim bound", "The ratio bound %s.", err)
		}
		c.Bound = b
	case hasValue:
		c.Kind = KindValue
		if ok {
			b, err := ParseBound(value, unit)
			if err != nil {
				errAt(vrng, "Invalid claim bound", "The value bound %s (the metric %s is in %s).", err, metric, unit)
			}
			c.Bound = b
		}
	case hasVersus:
		errAt(attr("versus").NameRange, "Versus without ratio", "versus = … names the cells to compare with: add ratio = \"< 0.6\" (cell / versus).")
	default:
		errAt(at, "Missing claim bound", "A claim on metric %q needs ratio = \"< 0.6\" (with versus = …) or value = \"< 10ms\".", metric)
	}
	if c.Kind == KindRatio {
		if len(c.Cell) == 0 {
			errAt(rrng, "Missing claim cell", "A ratio claim names the cells it is about (cell = { axis = \"value\" }) and those it compares them with (versus).")
		} else if sameParams(c.Cell, c.Versus) {
			errAt(c.VersusRange, "Versus selects the same cells", "versus must change at least one parameter of cell; as written the ratio is 1 by construction.")
		}
	}
	return c, diags
}

// claimParams decodes cell = { axis = value, … }: an object of literal
// primitives.
func claimParams(a *hcl.Attribute, diags *hcl.Diagnostics) []Param {
	bad := func(rng hcl.Range, detail string) {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid claim cells",
			Detail: detail, Subject: rng.Ptr()})
	}
	if oc, ok := a.Expr.(*hclsyntax.ObjectConsExpr); ok {
		var out []Param
		seen := map[string]bool{}
		for _, it := range oc.Items {
			k, d := it.KeyExpr.Value(nil)
			if kw := hcl.ExprAsKeyword(it.KeyExpr); kw != "" {
				k, d = cty.StringVal(kw), nil
			}
			if d.HasErrors() || k.IsNull() || !k.IsKnown() || k.Type() != cty.String {
				bad(it.KeyExpr.Range(), "The keys of "+a.Name+" are matrix axis names.")
				continue
			}
			v, d := it.ValueExpr.Value(nil)
			if d.HasErrors() || v.IsNull() || !v.IsKnown() || !v.Type().IsPrimitiveType() {
				bad(it.ValueExpr.Range(), fmt.Sprintf("%s.%s must be one literal value of the axis (a string, number or bool).", a.Name, k.AsString()))
				continue
			}
			if seen[k.AsString()] {
				bad(it.KeyExpr.Range(), fmt.Sprintf("Axis %q is named twice in %s.", k.AsString(), a.Name))
				continue
			}
			seen[k.AsString()] = true
			out = append(out, Param{Name: k.AsString(), Value: v, Range: hcl.RangeBetween(it.KeyExpr.Range(), it.ValueExpr.Range())})
		}
		if len(out) == 0 && len(oc.Items) == 0 {
			bad(a.Expr.Range(), a.Name+" names no axis: write { axis = \"value\" }.")
		}
		return out
	}
	bad(a.Expr.Range(), a.Name+" must be an object of matrix axis = value, like { deploy = \"host\" }.")
	return nil
}

func sameParams(a, b []Param) bool {
	for _, vb := range b {
		found := false
		for _, va := range a {
			if va.Name == vb.Name {
				found = true
				if PrimitiveString(va.Value) != PrimitiveString(vb.Value) {
					return false
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}
