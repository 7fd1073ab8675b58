package trust

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
)

// runtimeShapes lists what the plan cannot show: an attribute of a
// service or an exec step whose value depends on a value known only at
// run time (a service's port, URL or host, a provider's output: service.*
// and self.*, directly or through a local) other than by being written
// into it — through a condition, a function, an index, a for expression
// or an operator. The plan is evaluated with placeholders for those
// values (port 0), so such a command could be shown one way and run
// another: reproduce refuses it, confined, with this reason. A value
// interpolated as it is ("127.0.0.1:${self.port.http}") is shown (the
// placeholder in its place) and accepted.
func runtimeShapes(p *pipeline.Pipeline) []string {
	svcLocals := plan.ServiceLocals(p)
	runtime := func(tr hcl.Traversal) string {
		switch tr.RootName() {
		case "service", "self":
			// A service's name is known; its ports, URL, host, folder
			// and a provider's outputs are not.
			if len(tr) == 2 || len(tr) == 3 && tr.RootName() == "service" {
				if a, ok := tr[len(tr)-1].(hcl.TraverseAttr); ok && a.Name == "name" {
					return ""
				}
			}
			return traversalText(tr)
		case "local":
			if len(tr) > 1 {
				if a, ok := tr[1].(hcl.TraverseAttr); ok && svcLocals[a.Name] {
					return traversalText(tr)
				}
			}
		}
		return ""
	}
	var out []string
	check := func(where string, body hcl.Body, attrs func(string) bool) {
		sb, ok := body.(*hclsyntax.Body)
		if !ok {
			return
		}
		names := make([]string, 0, len(sb.Attributes))
		for n := range sb.Attributes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if !attrs(n) {
				continue
			}
			if kind, refs := hidden(sb.Attributes[n].Expr, runtime); kind != "" {
				out = append(out, fmt.Sprintf("%s's %s depends on %s, known only at run time, through %s: the plan cannot show what will run (write the value into the command as it is, or reproduce with --no-sandbox)", where, n, strings.Join(refs, ", "), kind))
			}
		}
	}
	for _, s := range p.Services {
		check("service "+s.Name, s.Body, func(string) bool { return true })
	}
	for _, st := range p.Steps {
		if st.Kind == "exec" {
			check(st.Addr(), st.Body, func(string) bool { return true })
		}
	}
	return out
}

// hidden returns how e computes something from a run-time value (""
// when it only writes run-time values in as they are), and which.
func hidden(e hclsyntax.Expression, runtime func(hcl.Traversal) string) (string, []string) {
	e = unwrap(e)
	switch x := e.(type) {
	case *hclsyntax.LiteralValueExpr, *hclsyntax.ScopeTraversalExpr:
		return "", nil
	case *hclsyntax.TemplateExpr:
		for _, p := range x.Parts {
			if k, r := hidden(p, runtime); k != "" {
				return k, r
			}
		}
		return "", nil
	case *hclsyntax.TemplateWrapExpr:
		return hidden(x.Wrapped, runtime)
	case *hclsyntax.ParenthesesExpr:
		return hidden(x.Expression, runtime)
	case *hclsyntax.TupleConsExpr:
		for _, p := range x.Exprs {
			if k, r := hidden(p, runtime); k != "" {
				return k, r
			}
		}
		return "", nil
	case *hclsyntax.ObjectConsExpr:
		for _, it := range x.Items {
			for _, p := range []hclsyntax.Expression{it.KeyExpr, it.ValueExpr} {
				if k, r := hidden(p, runtime); k != "" {
					return k, r
				}
			}
		}
		return "", nil
	case *hclsyntax.ObjectConsKeyExpr:
		return hidden(x.Wrapped, runtime)
	case *hclsyntax.ConditionalExpr:
		// A condition known when planning picks the branch the plan
		// shows; only a condition on a run-time value hides one.
		if refs := runtimeRefs(x.Condition, runtime); len(refs) > 0 {
			return "a condition", refs
		}
		for _, p := range []hclsyntax.Expression{x.TrueResult, x.FalseResult} {
			if k, r := hidden(p, runtime); k != "" {
				return k, r
			}
		}
		return "", nil
	case *hclsyntax.FunctionCallExpr:
		// Functions that only put their arguments together show the
		// placeholder where the run-time value goes.
		if passThrough[x.Name] {
			for _, a := range x.Args {
				if k, r := hidden(a, runtime); k != "" {
					return k, r
				}
			}
			return "", nil
		}
	case *hclsyntax.IndexExpr:
		if refs := runtimeRefs(x.Key, runtime); len(refs) > 0 {
			return "an index", refs
		}
		return hidden(x.Collection, runtime)
	}
	refs := runtimeRefs(e, runtime)
	if len(refs) == 0 {
		return "", nil
	}
	kind := "an expression"
	switch e.(type) {
	case *hclsyntax.FunctionCallExpr:
		kind = "a function"
	case *hclsyntax.RelativeTraversalExpr, *hclsyntax.SplatExpr:
		kind = "an index"
	case *hclsyntax.ForExpr, *hclsyntax.TemplateJoinExpr:
		kind = "a for expression"
	case *hclsyntax.BinaryOpExpr, *hclsyntax.UnaryOpExpr:
		kind = "an operator"
	}
	return kind, refs
}

// passThrough are the functions whose result holds their arguments as
// they are: a run-time value passed through them is shown by the plan.
var passThrough = map[string]bool{"join": true, "format": true, "formatlist": true, "concat": true, "tostring": true, "tolist": true, "flatten": true}

// unwrap returns the syntax e wraps: engine/plan wraps every expression
// of a loaded pipeline in a type of its own that embeds it (its
// evaluation budget), whose field this reads.
func unwrap(e hclsyntax.Expression) hclsyntax.Expression {
	for i := 0; i < 8; i++ {
		v := reflect.ValueOf(e)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return e
		}
		f := v.Elem().FieldByName("Expression")
		if !f.IsValid() || !f.CanInterface() {
			return e
		}
		inner, ok := f.Interface().(hclsyntax.Expression)
		if !ok || inner == nil {
			return e
		}
		e = inner
	}
	return e
}

// runtimeRefs lists the run-time values e reads.
func runtimeRefs(e hclsyntax.Expression, runtime func(hcl.Traversal) string) []string {
	var refs []string
	for _, tr := range e.Variables() {
		if r := runtime(tr); r != "" && !contains(refs, r) {
			refs = append(refs, r)
		}
	}
	return refs
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// traversalText writes tr as it reads in HCL: "self.port.http".
func traversalText(tr hcl.Traversal) string {
	var b strings.Builder
	for i, t := range tr {
		switch s := t.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			b.WriteString("[…]")
		default:
			if i > 0 {
				b.WriteString("[…]")
			}
		}
	}
	return b.String()
}
