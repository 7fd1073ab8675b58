package hclconf

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
)

// decodeRepetitions reads `repetitions`: a whole number (fixed), or an
// object { min, max, precision, budget } (adaptive, pipeline.Adaptive).
func decodeRepetitions(p *pipeline.Pipeline, body hcl.Body, expr hcl.Expression) hcl.Diagnostics {
	if expr == nil {
		return nil
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || v.IsNull() {
		return diags
	}
	bad := func(summary, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: expr.Range().Ptr()}}
	}
	count := func(name string, v cty.Value) (int, hcl.Diagnostics) {
		if v.Type() != cty.Number || !v.IsKnown() {
			return 0, bad("Invalid repetitions", fmt.Sprintf("%s must be a whole number.", name))
		}
		bf := v.AsBigFloat()
		n, acc := bf.Int64()
		if acc != big.Exact || n < 1 || n > pipeline.MaxRepetitions {
			return 0, bad("Invalid repetitions", fmt.Sprintf("%s must be between 1 and %d, not %s.", name, pipeline.MaxRepetitions, bf.Text('g', -1)))
		}
		return int(n), nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		n, d := count("repetitions", v)
		if d.HasErrors() {
			if t != cty.Number {
				return bad("Invalid repetitions", "repetitions is a whole number (repetitions = 3) or an object (repetitions = { min = 3, max = 30, precision = \"3%\" }).")
			}
			return d
		}
		p.Repetitions = n
		return nil
	}
	fields := map[string]cty.Value{}
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		fields[k.AsString()] = ev
	}
	known := []string{"min", "max", "precision", "budget"}
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ok := false
		for _, kn := range known {
			ok = ok || k == kn
		}
		if !ok {
			return bad("Unknown repetitions setting", fmt.Sprintf("repetitions takes min, max, precision and budget, not %q.%s", k, diag.Suggest(k, known)))
		}
	}
	a := &pipeline.Adaptive{Min: 3}
	if mv, ok := fields["min"]; ok {
		n, d := count("repetitions.min", mv)
		if d.HasErrors() {
			return d
		}
		if n < 3 {
			return bad("Invalid repetitions", fmt.Sprintf("repetitions.min must be at least 3 (a 95%% interval needs 3 repetitions), not %d.", n))
		}
		a.Min = n
	}
	mv, ok := fields["max"]
	if !ok {
		return bad("Missing repetitions.max", "Adaptive repetitions need max: the most repetitions a cell may get (e.g. max = 30).")
	}
	n, d := count("repetitions.max", mv)
	if d.HasErrors() {
		return d
	}
	if n < a.Min {
		return bad("Invalid repetitions", fmt.Sprintf("repetitions.max (%d) is below min (%d).", n, a.Min))
	}
	a.Max = n
	str := func(name string) (string, bool, hcl.Diagnostics) {
		v, ok := fields[name]
		if !ok {
			return "", false, nil
		}
		if v.Type() != cty.String || !v.IsKnown() || v.IsNull() {
			return "", true, bad("Invalid repetitions", fmt.Sprintf("repetitions.%s must be a string (e.g. %s).", name, map[string]string{"precision": `"3%"`, "budget": `"20m"`}[name]))
		}
		return v.AsString(), true, nil
	}
	ps, ok, d := str("precision")
	if d.HasErrors() {
		return d
	}
	if !ok {
		return bad("Missing repetitions.precision", "Adaptive repetitions need precision: the half-width of the 95% interval to reach, relative to the estimate (e.g. precision = \"3%\").")
	}
	if a.Precision, d = percent(ps, bad); d.HasErrors() {
		return d
	}
	bs, ok, d := str("budget")
	if d.HasErrors() {
		return d
	}
	if ok {
		b, err := pipeline.ParseDuration(bs)
		if err != nil || b <= 0 {
			return bad("Invalid repetitions", fmt.Sprintf("repetitions.budget must be a positive duration (e.g. \"20m\"), not %q.", bs))
		}
		a.Budget = b
	}
	p.Repetitions = a.Min
	p.Adaptive = a
	return nil
}

func percent(s string, bad func(string, string) hcl.Diagnostics) (float64, hcl.Diagnostics) {
	f, err := pipeline.ParsePercent(s)
	if err != nil {
		return 0, bad("Invalid repetitions", "repetitions.precision: "+err.Error()+".")
	}
	return f, nil
}
