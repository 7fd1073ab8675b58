package plan

import (
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// SensitiveMark is the cty mark a sensitive variable's value carries in
// the evaluation that tracks where it goes. cty propagates marks through
// every operator, template, for expression, index and function (a
// function that does not handle marks itself gets its arguments unmarked
// and its result marked with their union), so whatever is computed from
// a sensitive value — upper(var.token), strrev(), substr(), split() — is
// marked too.
const SensitiveMark = "sensitive"

// hasSensitive reports whether the pipeline declares a sensitive variable.
func (p *Plan) hasSensitive() bool {
	for _, v := range p.Pipeline.Variables {
		if v.Sensitive {
			return true
		}
	}
	return false
}

// markedVars is the var object with every sensitive variable marked.
func (p *Plan) markedVars() cty.Value {
	m := make(map[string]cty.Value, len(p.Vars))
	for k, v := range p.Vars {
		m[k] = v
	}
	for _, v := range p.Pipeline.Variables {
		if val, ok := m[v.Name]; ok && v.Sensitive {
			m[v.Name] = val.Mark(SensitiveMark)
		}
	}
	return cty.ObjectVal(m)
}

// DerivedSensitive evaluates, with the sensitive variables marked, every
// expression of the pipeline (locals, services, providers, steps, and
// every sub-expression of them) for this trial, and returns the text of
// each value that came out marked: the forms a sensitive value takes once
// transformed, for redaction. Values the ordinary evaluation computes are
// not changed: marks exist only in this evaluation.
func (te *TrialEval) DerivedSensitive() []string {
	p := te.plan
	if !p.hasSensitive() {
		return nil
	}
	set := map[string]bool{}
	add := func(s string) {
		if len(s) >= 4 {
			set[s] = true
		}
	}
	vars := te.baseVars()
	vars["var"] = p.markedVars()
	vars["service"] = cty.ObjectVal(te.services)
	locals, _ := te.evalLocals(vars)
	for _, v := range locals {
		collectMarked(v, add)
	}
	vars["local"] = cty.ObjectVal(locals)
	vars["self"] = Self("", "", nil)
	ctx := &hcl.EvalContext{Variables: vars, Functions: p.functions}
	visit := func(n hclsyntax.Node) hcl.Diagnostics {
		inner := n
		if b, ok := n.(*budgeted); ok {
			inner = b.Expression
		}
		switch inner.(type) {
		case *hclsyntax.TemplateExpr, *hclsyntax.TemplateJoinExpr:
			// Its parts are visited one by one: "${service.web.url}/?t=${var.token}"
			// registers the token, not the whole URL.
			return nil
		}
		if e, ok := n.(hclsyntax.Expression); ok {
			if v, d := e.Value(ctx); !d.HasErrors() {
				collectMarked(v, add)
			}
		}
		return nil
	}
	walk := func(b hcl.Body) {
		if sb, ok := b.(*hclsyntax.Body); ok {
			hclsyntax.VisitAll(sb, visit)
		}
	}
	for _, l := range p.Pipeline.Locals {
		if e, ok := l.Expr.(hclsyntax.Expression); ok {
			hclsyntax.VisitAll(e, visit)
		}
	}
	for _, s := range p.Pipeline.Services {
		walk(s.Body)
	}
	for _, pv := range p.Pipeline.Providers {
		walk(pv.Config)
	}
	for _, st := range p.Pipeline.Steps {
		walk(st.Body)
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// collectMarked adds the text of every marked part of v.
func collectMarked(v cty.Value, add func(string)) {
	if v == cty.NilVal || !v.ContainsMarked() {
		return
	}
	if v.IsMarked() {
		u, _ := v.UnmarkDeep()
		addAll(u, add)
		return
	}
	if v.IsKnown() && !v.IsNull() && v.CanIterateElements() {
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			collectMarked(ev, add)
		}
	}
}

// addAll adds every primitive inside v, and for a sequence of primitives
// the ways it is commonly printed joined (a sensitive value split into
// characters is still the value once joined).
func addAll(v cty.Value, add func(string)) {
	if !v.IsKnown() || v.IsNull() {
		return
	}
	if v.Type().IsPrimitiveType() {
		add(ValueString(v))
		return
	}
	if !v.CanIterateElements() {
		return
	}
	var parts []string
	prim := true
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		addAll(ev, add)
		if ev.IsKnown() && !ev.IsNull() && ev.Type().IsPrimitiveType() {
			parts = append(parts, ValueString(ev))
		} else {
			prim = false
		}
	}
	if prim && len(parts) > 1 {
		for _, sep := range []string{"", " ", ",", ", ", "\n", `","`, `", "`, `" "`, `' '`} {
			add(strings.Join(parts, sep))
		}
	}
}
