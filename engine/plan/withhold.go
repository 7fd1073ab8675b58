package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// Withheld is the detail of a diagnostic whose expression has a sensitive
// input: the message a function, a conversion or an index gives quotes
// what it was given ("invalid character 'Z'", "invalid date format verb
// 'q'"), a part of the secret, so none of it is shown. Only the summary
// and the location remain, with this sentence.
const Withheld = "The detail is withheld because the value is sensitive (it is computed from a sensitive variable)."

// withheldSummary replaces a summary that could quote a value.
const withheldSummary = "Error in an expression with a sensitive value"

// withheld marks a diagnostic already withheld (Extra), so that a second
// pass leaves it alone.
type withheld struct{}

// secrets is what of a pipeline is computed from its sensitive variables,
// found from the references of its expressions (as cty marks would flow,
// but without evaluating): a diagnostic located there, or of an
// expression that refers to one of them, is withheld.
type secrets struct {
	// names are the sensitive references: "var" → sensitive variables,
	// "local" → locals computed from them, "matrix" → axes computed from
	// them (directly or by include).
	names map[string]map[string]bool
	// roots are names sensitive as a whole (a rendered file's vars).
	roots map[string]bool
	// exprs are the top-level expressions (attribute values, locals,
	// axes, validation conditions, claims' enabled), blocks every block;
	// each with whether it uses a sensitive value.
	exprs, blocks []span
}

type span struct {
	rng       hcl.Range
	sensitive bool
}

// secrets is the plan's, found once.
func (p *Plan) secrets() *secrets {
	p.secretsOnce.Do(func() { p.secretSet = findSecrets(p.Pipeline) })
	return p.secretSet
}

func findSecrets(p *pipeline.Pipeline) *secrets {
	s := &secrets{names: map[string]map[string]bool{"var": {}, "local": {}, "matrix": {}}}
	has := false
	for _, v := range p.Variables {
		if v.Sensitive {
			s.names["var"][v.Name] = true
			has = true
		}
	}
	if !has {
		return nil
	}
	if p.Matrix != nil {
		for _, a := range p.Matrix.Axes {
			if a.Expr != nil && s.refers(a.Expr.Variables()) {
				s.names["matrix"][a.Name] = true
			}
		}
		if p.Matrix.Include != nil && s.refers(p.Matrix.Include.Variables()) {
			// An included cell takes its values from the include entry.
			for _, a := range p.Matrix.Axes {
				s.names["matrix"][a.Name] = true
			}
		}
	}
	// Locals refer to each other: until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, l := range p.Locals {
			if !s.names["local"][l.Name] && l.Expr != nil && s.refers(l.Expr.Variables()) {
				s.names["local"][l.Name] = true
				changed = true
			}
		}
	}
	expr := func(e hcl.Expression) bool {
		if e == nil {
			return false
		}
		sens := s.refers(e.Variables())
		s.exprs = append(s.exprs, span{e.Range(), sens})
		return sens
	}
	var body func(b hcl.Body) bool
	body = func(b hcl.Body) bool {
		sb, ok := b.(*hclsyntax.Body)
		if !ok || sb == nil {
			return false
		}
		sens := false
		for _, a := range sb.Attributes {
			sens = expr(a.Expr) || sens
		}
		for _, blk := range sb.Blocks {
			x := body(blk.Body)
			s.blocks = append(s.blocks, span{blk.Range(), x})
			sens = sens || x
		}
		return sens
	}
	block := func(decl hcl.Range, b hcl.Body) {
		rng := decl
		if sb, ok := b.(*hclsyntax.Body); ok && sb != nil && sb.SrcRange.Filename == decl.Filename {
			rng = hcl.RangeOver(decl, sb.SrcRange)
		}
		s.blocks = append(s.blocks, span{rng, body(b)})
	}
	for _, v := range p.Variables {
		for _, val := range v.Validations {
			expr(val.Condition)
		}
	}
	if p.Matrix != nil {
		for _, a := range p.Matrix.Axes {
			expr(a.Expr)
		}
		expr(p.Matrix.Exclude)
		expr(p.Matrix.Include)
	}
	for _, l := range p.Locals {
		expr(l.Expr)
	}
	for _, c := range p.Claims {
		expr(c.Enabled)
	}
	for _, sv := range p.Services {
		block(sv.DeclRange, sv.Body)
	}
	for _, pv := range p.Providers {
		block(pv.DeclRange, pv.Config)
	}
	for _, st := range p.Steps {
		block(st.DeclRange, st.Body)
	}
	return s
}

// refers reports whether one of the references is sensitive: a sensitive
// name, or the whole object that holds one (var, local, matrix).
func (s *secrets) refers(trs []hcl.Traversal) bool {
	for _, tr := range trs {
		root := tr.RootName()
		if s.roots[root] {
			return true
		}
		m, ok := s.names[root]
		if !ok {
			continue
		}
		name, ok := "", false
		if len(tr) > 1 {
			switch t := tr[1].(type) {
			case hcl.TraverseAttr:
				name, ok = t.Name, true
			case hcl.TraverseIndex:
				if k, _ := t.Key.Unmark(); k.Type() == cty.String && k.IsKnown() && !k.IsNull() {
					name, ok = k.AsString(), true
				}
			}
		}
		if !ok {
			// var, var[x], local: every value inside.
			for _, sens := range m {
				if sens {
					return true
				}
			}
			continue
		}
		if m[name] {
			return true
		}
	}
	return false
}

// covers reports whether d is about something computed from a sensitive
// value: its expression refers to one; or it is located in a top-level
// expression that does (a for expression's element, a template's part);
// or it is located on a block that uses one and not in one of the
// block's expressions that does not (a check of the decoded block, such
// as a provider's configuration or a file's mode), unless it is an error
// of the block's structure, which shows no value.
func (s *secrets) covers(d *hcl.Diagnostic) bool {
	if d.Expression != nil && s.refers(d.Expression.Variables()) {
		return true
	}
	if d.Subject == nil {
		return false
	}
	sub := *d.Subject
	inClean := false
	for _, e := range s.exprs {
		if within(sub, e.rng) {
			if e.sensitive {
				return true
			}
			inClean = true
		}
	}
	if inClean {
		return false
	}
	var inner *span
	for i, b := range s.blocks {
		if within(sub, b.rng) && (inner == nil || size(b.rng) < size(inner.rng)) {
			inner = &s.blocks[i]
		}
	}
	return inner != nil && inner.sensitive && !structural(d.Summary)
}

func within(r, in hcl.Range) bool {
	return r.Filename == in.Filename && r.Start.Byte >= in.Start.Byte && r.End.Byte <= in.End.Byte
}

func size(r hcl.Range) int { return r.End.Byte - r.Start.Byte }

// structural reports whether a summary is one of HCL's errors of a body's
// schema (an argument or block missing, unexpected or repeated): they
// name the argument, never its value.
func structural(summary string) bool {
	switch summary {
	case "Unsupported argument", "Unsupported block type", "Missing required argument", "Duplicate argument":
		return true
	}
	for _, p := range []string{"Extraneous label for ", "Duplicate ", "Missing "} {
		if strings.HasPrefix(summary, p) && (strings.HasSuffix(summary, " block") || strings.Contains(summary, " for ")) {
			return true
		}
	}
	return false
}

// withhold returns diags with every diagnostic s covers replaced by one
// that keeps its severity, location and summary (a generic one when the
// summary quotes anything) and says the detail is withheld; the function
// a failed call names is kept (it is part of the pipeline's text). The
// evaluation context, which holds the values, is dropped. diags itself
// is not changed.
func (s *secrets) withhold(diags hcl.Diagnostics) hcl.Diagnostics {
	if s == nil || len(diags) == 0 {
		return diags
	}
	var out hcl.Diagnostics
	for i, d := range diags {
		if _, done := d.Extra.(withheld); done || !s.covers(d) {
			if out != nil {
				out = append(out, d)
			}
			continue
		}
		if out == nil {
			out = append(make(hcl.Diagnostics, 0, len(diags)), diags[:i]...)
		}
		nd := *d
		nd.Detail = Withheld
		if fe, ok := d.Extra.(hclsyntax.FunctionCallDiagExtra); ok && fe.CalledFunctionName() != "" {
			nd.Detail = fmt.Sprintf("Call to function %q failed. %s", fe.CalledFunctionName(), Withheld)
		}
		if strings.ContainsAny(nd.Summary, "\"'`") {
			nd.Summary = withheldSummary
		}
		nd.EvalContext = nil
		nd.Extra = withheld{}
		out = append(out, &nd)
	}
	if out == nil {
		return diags
	}
	return out
}

// withhold applies the plan's secrets to *diags (for a deferred call at
// the return of a method whose diagnostics leave the package).
func (te *TrialEval) withhold(diags *hcl.Diagnostics) {
	*diags = te.plan.secrets().withhold(*diags)
}

// errWithheld replaces the error of a provider built from a block that
// uses a sensitive value (its New's message may quote the configuration).
var errWithheld = errors.New("the detail is withheld because the value is sensitive (it is computed from a sensitive variable)")

// withholdProvider replaces sp.Err when sp's block uses a sensitive value.
func (te *TrialEval) withholdProvider(sp *ServiceProvider) {
	s := te.plan.secrets()
	if s == nil || sp == nil || sp.Err == nil || sp.Block == nil || errors.Is(sp.Err, errWithheld) {
		return
	}
	if s.covers(&hcl.Diagnostic{Subject: sp.Block.DeclRange.Ptr()}) {
		sp.Err = errWithheld
	}
}

// template is s for a template rendered with the trial's names and a
// file block's vars (all sensitive when its vars attribute is): the
// template's parts are its top-level expressions.
func (s *secrets) template(expr hclsyntax.Expression, vars cty.Value, varsSensitive bool) *secrets {
	if s == nil {
		return nil
	}
	t := &secrets{names: s.names, roots: map[string]bool{}}
	if varsSensitive && vars != cty.NilVal && !vars.IsNull() && vars.IsKnown() && vars.CanIterateElements() {
		for it := vars.ElementIterator(); it.Next(); {
			if k, _ := it.Element(); k.Type() == cty.String {
				t.roots[k.AsString()] = true
			}
		}
	}
	parts := []hclsyntax.Expression{expr}
	if b, ok := expr.(*budgeted); ok {
		parts[0] = b.Expression
	}
	if te, ok := parts[0].(*hclsyntax.TemplateExpr); ok {
		parts = te.Parts
	}
	for _, p := range parts {
		t.exprs = append(t.exprs, span{p.Range(), t.refers(p.Variables())})
	}
	return t
}

// fileVarsSensitive reports whether a file block named name (in any
// service) has a vars attribute computed from a sensitive value.
func (p *Plan) fileVarsSensitive(name string) bool {
	s := p.secrets()
	if s == nil {
		return false
	}
	for _, sv := range p.Pipeline.Services {
		sb, ok := sv.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		for _, b := range sb.Blocks {
			if b.Type != "file" || len(b.Labels) == 0 || b.Labels[0] != name {
				continue
			}
			if a, ok := b.Body.Attributes["vars"]; ok && s.refers(a.Expr.Variables()) {
				return true
			}
		}
	}
	return false
}
