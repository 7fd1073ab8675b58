package plan

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// The evaluation budget of HCL expressions, like the Starlark front end's
// (docs/language.md, "Limits"). Nesting (brackets and chained operators)
// is bounded before parsing (pipeline.MaxExpressionDepth); these bound
// evaluation, once per scope: the plan-wide values (variables, matrix),
// then each trial.
const (
	// MaxEvalSteps bounds the function calls, for-expression iterations
	// and template parts evaluated.
	MaxEvalSteps = 1_000_000
	// MaxEvalBytes bounds the bytes of the strings and collections that
	// functions and templates build, each estimated before it is built.
	MaxEvalBytes = 512 << 20
	// maxTemplateDepth bounds templatefile() calls inside templates.
	maxTemplateDepth = 16
)

// evalBudget counts what one scope of evaluation used. The first time a
// limit is passed it keeps the error, so that a caller that swallowed it
// (try(), can()) still fails: Build and the executor report it.
type evalBudget struct {
	steps, bytes, depth atomic.Int64
	maxSteps, maxBytes  int64

	mu       sync.Mutex
	exceeded *hcl.Diagnostic
}

func newBudget() *evalBudget { return &evalBudget{maxSteps: MaxEvalSteps, maxBytes: MaxEvalBytes} }

// reset starts a new scope.
func (b *evalBudget) reset() {
	b.steps.Store(0)
	b.bytes.Store(0)
	b.mu.Lock()
	b.exceeded = nil
	b.mu.Unlock()
}

// Exceeded is the first budget error of the scope, or nil.
func (b *evalBudget) Exceeded() *hcl.Diagnostic {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exceeded
}

func (b *evalBudget) fail(rng *hcl.Range, summary, detail string) *hcl.Diagnostic {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng}
	b.mu.Lock()
	if b.exceeded == nil {
		b.exceeded = d
	}
	b.mu.Unlock()
	return d
}

// step counts n steps; the error says which limit was passed.
func (b *evalBudget) step(n int64) error {
	if b.steps.Add(n) > b.maxSteps {
		return fmt.Errorf("evaluation step limit exceeded: the expressions of this scope took more than %d steps (function calls, for-expression iterations, template parts)", b.maxSteps)
	}
	return nil
}

// charge counts n bytes (n < 0: too many to count).
func (b *evalBudget) charge(n int64) error {
	if n < 0 || n > b.maxBytes || b.bytes.Add(n) > b.maxBytes {
		what := "a value too large to count"
		if n >= 0 {
			what = fmt.Sprintf("a value of %d MiB", n>>20)
		}
		return fmt.Errorf("memory budget exceeded: building this value (%s) would take the expressions of this scope past %d MiB of strings and collections built", what, b.maxBytes>>20)
	}
	return nil
}

func (b *evalBudget) left() int64 { return max(b.maxBytes-b.bytes.Load(), 0) }

// valueSize estimates the bytes of v once built (strings by length, each
// element 16 bytes more), stopping past limit: the walk is bounded by the
// budget, not by the value ([a, a, a] refers to a three times).
func valueSize(v cty.Value, limit int64) int64 {
	var n int64
	var walk func(v cty.Value)
	walk = func(v cty.Value) {
		if n > limit {
			return
		}
		v, _ = v.Unmark()
		if !v.IsKnown() || v.IsNull() {
			n += 16
			return
		}
		switch {
		case v.Type() == cty.String:
			n += int64(len(v.AsString())) + 16
		case v.Type().IsPrimitiveType():
			n += 16
		case v.CanIterateElements():
			n += 16
			for it := v.ElementIterator(); it.Next() && n <= limit; {
				k, e := it.Element()
				if v.Type().IsMapType() || v.Type().IsObjectType() {
					walk(k)
				}
				walk(e)
			}
		default:
			n += 16
		}
	}
	walk(v)
	return n
}

func mul(a, b, limit int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > limit/b+1 {
		return -1
	}
	return a * b
}

// estimate is what a call of the function name with args will build, in
// bytes, before it is made; -1 is more than can be counted.
func estimate(name string, args []cty.Value, limit int64) int64 {
	str := func(i int) string {
		if i < len(args) {
			if v, _ := args[i].Unmark(); v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
				return v.AsString()
			}
		}
		return ""
	}
	num := func(i int) int64 {
		if i < len(args) {
			if v, _ := args[i].Unmark(); v.IsKnown() && !v.IsNull() && v.Type() == cty.Number {
				if f, _ := v.AsBigFloat().Float64(); f < 1<<53 && f > -(1<<53) {
					return int64(f)
				}
				return 1 << 53
			}
		}
		return 0
	}
	length := func(i int) int64 {
		if i < len(args) {
			if v, _ := args[i].Unmark(); v.IsKnown() && !v.IsNull() && v.CanIterateElements() {
				return int64(v.LengthInt())
			}
		}
		return 0
	}
	size := func() int64 {
		var n int64
		for _, a := range args {
			n += valueSize(a, limit)
			if n > limit {
				return -1
			}
		}
		return n
	}
	switch name {
	case "length", "lookup", "element", "contains", "keys", "values", "coalesce", "coalescelist",
		"abs", "ceil", "floor", "log", "max", "min", "pow", "signum", "tobool", "tonumber",
		"fileexists", "file", "slice", "substr", "trim", "trimprefix", "trimsuffix", "trimspace", "chomp":
		return 0 // a part of what they are given, or small
	case "range":
		// range(n), range(a, b), range(a, b, step): the elements.
		var count int64
		switch len(args) {
		case 1:
			count = num(0)
		case 2:
			count = num(1) - num(0)
		default:
			step := num(2)
			if step == 0 {
				return 0
			}
			count = (num(1) - num(0)) / step
		}
		if count < 0 {
			count = -count
		}
		return mul(count, 32, limit)
	case "setproduct":
		total := int64(1)
		for i := range args {
			total = mul(total, max(length(i), 1), limit)
			if total < 0 {
				return -1
			}
		}
		return mul(total, 16*int64(len(args))+16, limit)
	case "join":
		// join(sep, lists…): every element and a separator each.
		var n int64
		sep := int64(len(str(0)))
		for i := 1; i < len(args); i++ {
			n += valueSize(args[i], limit) + mul(length(i), sep, limit)
			if n > limit {
				return -1
			}
		}
		return n
	case "format", "formatlist":
		f := str(0)
		var widths int64
		cur := int64(0)
		for i := 0; i < len(f); i++ {
			if c := f[i]; c >= '0' && c <= '9' {
				cur = min(cur*10+int64(c-'0'), 1<<40)
				continue
			}
			widths += cur
			cur = 0
		}
		widths += cur
		directives := int64(strings.Count(f, "%"))
		sz := size()
		if sz < 0 {
			return -1
		}
		per := sz + int64(len(f)) + mul(directives, widths+1, limit)
		if name == "formatlist" {
			var n int64 = 1
			for i := 1; i < len(args); i++ {
				n = max(n, length(i))
			}
			return mul(n, per, limit)
		}
		return per
	case "indent":
		s := str(1)
		return mul(num(0)+1, int64(len(s))+int64(strings.Count(s, "\n"))+1, limit)
	case "replace":
		s, sub, rep := str(0), str(1), str(2)
		var count int64
		if sub == "" || (len(sub) > 1 && sub[0] == '/' && sub[len(sub)-1] == '/') {
			count = int64(len(s)) + 1 // a regular expression: at most one match per position
		} else {
			count = int64(strings.Count(s, sub))
		}
		r := mul(count, int64(len(rep)), limit)
		if r < 0 {
			return -1
		}
		return r + int64(len(s))
	case "split", "regexall", "csvdecode", "jsondecode", "chunklist":
		// At most an element per byte (or element) given.
		sz := size()
		if sz < 0 {
			return -1
		}
		return mul(sz+1, 32, limit)
	case "jsonencode":
		return mul(size(), 6, limit) // \u00XX per byte, at most
	case "upper", "lower", "title":
		return mul(size(), 3, limit) // case changes may lengthen UTF-8
	}
	return size()
}

// budgetFunctions wraps every function of fns (in place, so that
// templatefile's own templates use the wrapped ones) to count a step per
// call and charge what it builds before it is called. try() and can()
// take expressions, not values: they are left as they are (what they
// evaluate is counted where it is).
func budgetFunctions(fns map[string]function.Function, b *evalBudget) {
	for name, f := range fns {
		if name == "try" || name == "can" {
			continue
		}
		fns[name] = budgetFunction(name, f, b)
	}
}

func budgetFunction(name string, f function.Function, b *evalBudget) function.Function {
	spec := &function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        f.ReturnTypeForValues,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			var steps int64 = 1
			for _, a := range args {
				if v, _ := a.Unmark(); v.IsKnown() && !v.IsNull() && v.CanIterateElements() {
					steps += int64(v.LengthInt())
				}
			}
			if err := b.step(steps); err != nil {
				b.fail(nil, "Evaluation step limit exceeded", err.Error()+".")
				return cty.NilVal, err
			}
			if err := b.charge(estimate(name, args, b.left())); err != nil {
				b.fail(nil, "Memory budget exceeded", err.Error()+".")
				return cty.NilVal, err
			}
			if name == "templatefile" {
				if b.depth.Add(1) > maxTemplateDepth {
					b.depth.Add(-1)
					err := fmt.Errorf("templatefile() calls nest more than %d deep (does a template include itself?)", maxTemplateDepth)
					b.fail(nil, "Nesting too deep", err.Error()+".")
					return cty.NilVal, err
				}
				defer b.depth.Add(-1)
			}
			return f.Call(args)
		},
	}
	return function.New(spec)
}

// budgeted is an expression whose evaluation is counted before it is
// made: a for expression (a step per element of its collection), a
// splat (likewise) and a template of several parts (the bytes of the
// parts it joins). Embedding keeps every method of the expression it
// wraps (Variables, Range, …); references (*hclsyntax.ScopeTraversalExpr)
// are never wrapped, since hclsyntax finds them by their type.
type budgeted struct {
	hclsyntax.Expression
	b *evalBudget
}

func (e *budgeted) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if e.b.Exceeded() != nil {
		// Past the budget nothing more is evaluated (an outer for
		// expression goes on iterating, each iteration now free).
		return cty.DynamicVal, nil
	}
	var steps, bytes int64
	size := func(x hclsyntax.Expression) (cty.Value, bool) {
		v, d := x.Value(ctx)
		v, _ = v.Unmark()
		return v, !d.HasErrors() && v.IsKnown() && !v.IsNull()
	}
	switch x := e.Expression.(type) {
	case *hclsyntax.ForExpr:
		if v, ok := size(x.CollExpr); ok && v.CanIterateElements() {
			steps = int64(v.LengthInt())
		}
	case *hclsyntax.SplatExpr:
		if v, ok := size(x.Source); ok && v.CanIterateElements() {
			steps = int64(v.LengthInt())
		}
	case *hclsyntax.TemplateExpr:
		steps = int64(len(x.Parts))
		for _, p := range x.Parts {
			switch p.(type) {
			case *hclsyntax.ScopeTraversalExpr, *hclsyntax.RelativeTraversalExpr, *hclsyntax.IndexExpr:
				// A reference: looking it up again is cheap.
				if v, ok := size(p); ok {
					bytes += valueSize(v, e.b.left())
				}
			}
		}
	}
	if err := e.b.step(steps + 1); err != nil {
		return cty.DynamicVal, hcl.Diagnostics{e.b.fail(e.Range().Ptr(), "Evaluation step limit exceeded", err.Error()+".")}
	}
	if err := e.b.charge(bytes); err != nil {
		return cty.DynamicVal, hcl.Diagnostics{e.b.fail(e.Range().Ptr(), "Memory budget exceeded", err.Error()+".")}
	}
	return e.Expression.Value(ctx)
}

// counted wraps e when it is an expression the budget counts.
func counted(e hclsyntax.Expression, b *evalBudget) hclsyntax.Expression {
	switch x := e.(type) {
	case *hclsyntax.ForExpr, *hclsyntax.SplatExpr:
		return &budgeted{Expression: e, b: b}
	case *hclsyntax.TemplateExpr:
		if len(x.Parts) > 1 {
			return &budgeted{Expression: e, b: b}
		}
	}
	return e
}

// instrument wraps the counted expressions below node (each once).
func instrument(node hclsyntax.Node, b *evalBudget) {
	if node == nil {
		return
	}
	w := func(p *hclsyntax.Expression) {
		if *p != nil {
			*p = counted(*p, b)
		}
	}
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if x, ok := n.(*budgeted); ok {
			n = x.Expression
		}
		switch e := n.(type) {
		case *hclsyntax.Attribute:
			w(&e.Expr)
		case *hclsyntax.ForExpr:
			w(&e.CollExpr)
			w(&e.KeyExpr)
			w(&e.ValExpr)
			w(&e.CondExpr)
		case *hclsyntax.SplatExpr:
			w(&e.Source)
			w(&e.Each)
		case *hclsyntax.TemplateExpr:
			for i := range e.Parts {
				w(&e.Parts[i])
			}
		case *hclsyntax.FunctionCallExpr:
			for i := range e.Args {
				w(&e.Args[i])
			}
		case *hclsyntax.TupleConsExpr:
			for i := range e.Exprs {
				w(&e.Exprs[i])
			}
		case *hclsyntax.ObjectConsExpr:
			for i := range e.Items {
				w(&e.Items[i].ValueExpr)
			}
		case *hclsyntax.BinaryOpExpr:
			w(&e.LHS)
			w(&e.RHS)
		case *hclsyntax.UnaryOpExpr:
			w(&e.Val)
		case *hclsyntax.ConditionalExpr:
			w(&e.Condition)
			w(&e.TrueResult)
			w(&e.FalseResult)
		case *hclsyntax.ParenthesesExpr:
			w(&e.Expression)
		case *hclsyntax.TemplateWrapExpr:
			w(&e.Wrapped)
		case *hclsyntax.TemplateJoinExpr:
			w(&e.Tuple)
		case *hclsyntax.IndexExpr:
			w(&e.Collection)
			w(&e.Key)
		case *hclsyntax.RelativeTraversalExpr:
			w(&e.Source)
		}
		return nil
	})
}

// instrumentPipeline wraps the counted expressions of every body and
// expression of p.
func instrumentPipeline(p *pipeline.Pipeline, b *evalBudget) {
	node := func(x any) {
		switch n := x.(type) {
		case *hclsyntax.Body:
			instrument(n, b)
		case hclsyntax.Expression:
			instrument(n, b)
		}
	}
	for _, v := range p.Variables {
		for _, val := range v.Validations {
			node(val.Condition)
		}
	}
	if p.Matrix != nil {
		for _, a := range p.Matrix.Axes {
			node(a.Expr)
		}
		node(p.Matrix.Exclude)
		node(p.Matrix.Include)
	}
	for _, l := range p.Locals {
		node(l.Expr)
		if e, ok := l.Expr.(hclsyntax.Expression); ok {
			l.Expr = counted(e, b)
		}
	}
	for _, s := range p.Services {
		node(s.Body)
	}
	for _, pv := range p.Providers {
		node(pv.Config)
	}
	for _, st := range p.Steps {
		node(st.Body)
	}
}

// budgets holds each pipeline's budget: its expressions are instrumented
// once, with it, and every plan of the pipeline (a resumed run plans
// again) uses it, one scope at a time.
var budgets sync.Map // *pipeline.Pipeline → *evalBudget

func pipelineBudget(p *pipeline.Pipeline) *evalBudget {
	if b, ok := budgets.Load(p); ok {
		return b.(*evalBudget)
	}
	b, loaded := budgets.LoadOrStore(p, newBudget())
	if !loaded {
		instrumentPipeline(p, b.(*evalBudget))
	}
	return b.(*evalBudget)
}

// withExceeded adds the budget's error to diags when an evaluation passed
// a limit but the error was swallowed (try(), can()) or dropped.
func withExceeded(diags hcl.Diagnostics, b *evalBudget) hcl.Diagnostics {
	d := b.Exceeded()
	if d == nil || d.Subject == nil {
		return diags
	}
	for _, x := range diags {
		if x == d || (x.Summary == d.Summary && x.Subject != nil && *x.Subject == *d.Subject) {
			return diags
		}
	}
	return append(diags, d)
}
