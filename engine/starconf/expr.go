package starconf

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// exprKind tells what an Expr stands for.
type exprKind int

const (
	exprTraversal exprKind = iota // matrix.deploy, service.nginx.url
	exprConcat                    // ref + "/path"
	exprCall                      // file("x.tmpl"), templatefile(...)
	exprRaw                       // hcl("…"): a parsed HCL expression
)

// Expr is a value known only when a trial is evaluated: a reference
// (service.nginx.url), a concatenation with strings, an HCL function call
// (file(), templatefile()) or a parsed HCL expression (hcl()). It becomes
// an hclsyntax.Expression in the synthesized bodies.
type Expr struct {
	kind  exprKind
	root  string
	path  []any // string (attribute) or starlark index key (string/int)
	parts []starlark.Value
	fn    string
	args  []starlark.Value
	raw   hclsyntax.Expression
	src   string // text of hcl() expressions, for String()
}

var (
	_ starlark.HasAttrs  = (*Expr)(nil)
	_ starlark.HasBinary = (*Expr)(nil)
	_ starlark.Mapping   = (*Expr)(nil)
)

func traversal(root string, path ...any) *Expr {
	return &Expr{kind: exprTraversal, root: root, path: path}
}

// String renders the expression as an HCL template ("${matrix.size}"), so
// that str(ref), "%s" % ref and "{}".format(ref) make strings that are
// parsed back into the same expression when used as values.
func (e *Expr) String() string {
	if e.kind == exprConcat {
		return e.template()
	}
	return "${" + e.hclText() + "}"
}

// template is the text of a concatenation as an HCL template, without
// quotes.
func (e *Expr) template() string {
	var b strings.Builder
	for _, p := range e.parts {
		if s, ok := p.(starlark.String); ok {
			b.WriteString(string(s))
		} else {
			b.WriteString(p.String())
		}
	}
	return b.String()
}

// hclText is the expression as HCL source.
func (e *Expr) hclText() string {
	switch e.kind {
	case exprTraversal:
		var b strings.Builder
		b.WriteString(e.root)
		for _, p := range e.path {
			switch p := p.(type) {
			case string:
				b.WriteString("." + p)
			case starlark.String:
				b.WriteString("[" + strconv.Quote(string(p)) + "]")
			default:
				b.WriteString(fmt.Sprintf("[%v]", p))
			}
		}
		return b.String()
	case exprConcat:
		return strconv.Quote(e.template())
	case exprCall:
		var parts []string
		for _, a := range e.args {
			switch a := a.(type) {
			case *Expr:
				parts = append(parts, a.hclText())
			case starlark.String:
				parts = append(parts, strconv.Quote(string(a)))
			default:
				parts = append(parts, a.String())
			}
		}
		return e.fn + "(" + strings.Join(parts, ", ") + ")"
	}
	return e.src
}

// Type is "reference" for plain references and "expression" otherwise.
func (e *Expr) Type() string {
	if e.kind == exprTraversal {
		return "reference"
	}
	return "expression"
}

// Freeze does nothing: an Expr is immutable.
func (e *Expr) Freeze() {}

// Truth is true: the value is not known while the file runs. Use hcl()
// for conditions on matrix values.
func (e *Expr) Truth() starlark.Bool { return starlark.True }

// Hash fails: references cannot be dict keys.
func (e *Expr) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable: %s (a %s is known only per trial)", e.hclText(), e.Type())
}

// Attr extends a reference: service.nginx → service.nginx.url.
func (e *Expr) Attr(name string) (starlark.Value, error) {
	name = attrName(name)
	if e.kind != exprTraversal {
		return nil, starlark.NoSuchAttrError(fmt.Sprintf("%s has no .%s field: only references (like service.web.url) have fields", e.hclText(), name))
	}
	return e.with(name), nil
}

// AttrNames is empty: any name is a valid reference until the plan says otherwise.
func (e *Expr) AttrNames() []string { return nil }

// Get indexes a reference: service.web.ports["http"].
func (e *Expr) Get(k starlark.Value) (starlark.Value, bool, error) {
	if e.kind != exprTraversal {
		return nil, false, fmt.Errorf("%s cannot be indexed: only references (like service.web.ports) can", e.hclText())
	}
	switch k.(type) {
	case starlark.String, starlark.Int:
		return e.with(k), true, nil
	}
	return nil, false, fmt.Errorf("index of %s must be a string or int, not %s", e.hclText(), k.Type())
}

func (e *Expr) with(p any) *Expr {
	path := append(append([]any(nil), e.path...), p)
	return &Expr{kind: exprTraversal, root: e.root, path: path}
}

// Binary supports + with strings and other expressions (string
// concatenation, as "${a}${b}" in HCL).
func (e *Expr) Binary(op syntax.Token, y starlark.Value, side starlark.Side) (starlark.Value, error) {
	if op != syntax.PLUS {
		return nil, nil
	}
	switch y.(type) {
	case starlark.String, *Expr:
	default:
		return nil, nil
	}
	var parts []starlark.Value
	add := func(v starlark.Value) {
		if c, ok := v.(*Expr); ok && c.kind == exprConcat {
			parts = append(parts, c.parts...)
			return
		}
		parts = append(parts, v)
	}
	if side == starlark.Left {
		add(e)
		add(y)
	} else {
		add(y)
		add(e)
	}
	return &Expr{kind: exprConcat, parts: parts}, nil
}

// converter turns Starlark values into HCL expressions located at rng.
type converter struct {
	rng hcl.Range
}

func (c converter) lit(v cty.Value) hclsyntax.Expression {
	return &hclsyntax.LiteralValueExpr{Val: v, SrcRange: c.rng}
}

// expr converts v. what names the value in errors ("argument image").
func (c converter) expr(v starlark.Value, what string) (hclsyntax.Expression, error) {
	switch v := v.(type) {
	case starlark.NoneType:
		return c.lit(cty.NullVal(cty.DynamicPseudoType)), nil
	case starlark.Bool:
		return c.lit(cty.BoolVal(bool(v))), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return c.lit(cty.NumberIntVal(i)), nil
		}
		return c.lit(cty.NumberVal(new(big.Float).SetInt(v.BigInt()))), nil
	case starlark.Float:
		n, err := cty.ParseNumberVal(strconv.FormatFloat(float64(v), 'g', -1, 64))
		if err != nil {
			return nil, fmt.Errorf("%s: %s is not a valid number", what, v.String())
		}
		return c.lit(n), nil
	case starlark.String:
		return c.str(string(v), what)
	case starlark.Bytes:
		return c.str(string(v), what)
	case *starlark.List:
		return c.tuple(v.Len(), v.Index, what)
	case starlark.Tuple:
		return c.tuple(v.Len(), v.Index, what)
	case *starlark.Dict:
		items := v.Items()
		return c.object(len(items), func(i int) (starlark.Value, starlark.Value) { return items[i][0], items[i][1] }, what)
	case *starlarkstruct.Struct:
		names := v.AttrNames()
		sort.Strings(names)
		return c.object(len(names), func(i int) (starlark.Value, starlark.Value) {
			val, _ := v.Attr(names[i])
			return starlark.String(names[i]), val
		}, what)
	case *Expr:
		return c.ofExpr(v, what)
	}
	return nil, fmt.Errorf("%s: a %s cannot be used as a pipeline value (use strings, numbers, bools, lists, dicts or references)", what, v.Type())
}

func (c converter) str(s, what string) (hclsyntax.Expression, error) {
	if !strings.Contains(s, "${") && !strings.Contains(s, "%{") {
		return c.lit(cty.StringVal(s)), nil
	}
	diags := pipeline.CheckTemplateNesting(c.rng.Filename, []byte(s), c.rng.Start)
	var e hclsyntax.Expression
	if !diags.HasErrors() {
		e, diags = hclsyntax.ParseTemplate([]byte(s), c.rng.Filename, c.rng.Start)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: invalid template %q: %s", what, s, diags[0].Summary+": "+diags[0].Detail)
	}
	return e, nil
}

func (c converter) tuple(n int, at func(int) starlark.Value, what string) (hclsyntax.Expression, error) {
	t := &hclsyntax.TupleConsExpr{SrcRange: c.rng, OpenRange: c.rng}
	for i := 0; i < n; i++ {
		e, err := c.expr(at(i), fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		t.Exprs = append(t.Exprs, e)
	}
	return t, nil
}

func (c converter) object(n int, at func(int) (starlark.Value, starlark.Value), what string) (hclsyntax.Expression, error) {
	o := &hclsyntax.ObjectConsExpr{SrcRange: c.rng, OpenRange: c.rng}
	for i := 0; i < n; i++ {
		k, v := at(i)
		ks, ok := k.(starlark.String)
		if !ok {
			return nil, fmt.Errorf("%s: keys must be strings, not %s (%s)", what, k.Type(), k.String())
		}
		ve, err := c.expr(v, fmt.Sprintf("%s[%q]", what, string(ks)))
		if err != nil {
			return nil, err
		}
		o.Items = append(o.Items, hclsyntax.ObjectConsItem{
			KeyExpr:   &hclsyntax.ObjectConsKeyExpr{Wrapped: c.lit(cty.StringVal(string(ks)))},
			ValueExpr: ve,
		})
	}
	return o, nil
}

func (c converter) ofExpr(e *Expr, what string) (hclsyntax.Expression, error) {
	switch e.kind {
	case exprTraversal:
		tr := hcl.Traversal{hcl.TraverseRoot{Name: e.root, SrcRange: c.rng}}
		for _, p := range e.path {
			switch p := p.(type) {
			case string:
				tr = append(tr, hcl.TraverseAttr{Name: p, SrcRange: c.rng})
			case starlark.String:
				tr = append(tr, hcl.TraverseIndex{Key: cty.StringVal(string(p)), SrcRange: c.rng})
			case starlark.Int:
				i, _ := p.Int64()
				tr = append(tr, hcl.TraverseIndex{Key: cty.NumberIntVal(i), SrcRange: c.rng})
			}
		}
		return &hclsyntax.ScopeTraversalExpr{Traversal: tr, SrcRange: c.rng}, nil
	case exprConcat:
		t := &hclsyntax.TemplateExpr{SrcRange: c.rng}
		for _, p := range e.parts {
			pe, err := c.expr(p, what)
			if err != nil {
				return nil, err
			}
			t.Parts = append(t.Parts, pe)
		}
		return t, nil
	case exprCall:
		f := &hclsyntax.FunctionCallExpr{Name: e.fn, NameRange: c.rng, OpenParenRange: c.rng, CloseParenRange: c.rng}
		for i, a := range e.args {
			ae, err := c.expr(a, fmt.Sprintf("%s: argument %d of %s()", what, i+1, e.fn))
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, ae)
		}
		return f, nil
	}
	return e.raw, nil
}
