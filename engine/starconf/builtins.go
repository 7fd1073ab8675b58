package starconf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// builder collects the declarations a .star file makes.
type builder struct {
	p       *pipeline.Pipeline
	diags   hcl.Diagnostics
	seen    map[string]hcl.Range
	sources map[string]*source

	gotPipeline, gotMatrix, gotOutput bool
}

// blockSpec says how a keyword argument becomes nested blocks.
type blockSpec struct {
	typ     string
	labeled bool // a dict of label → attributes (file, port)
	many    bool // a list of attribute dicts (url)
}

var serviceBlocks = map[string]blockSpec{
	"files":  {typ: "file", labeled: true},
	"ports":  {typ: "port", labeled: true},
	"health": {typ: "health"},
}

// site finds where the running builtin was called from.
func (b *builder) site(thread *starlark.Thread) site {
	fr := thread.CallFrame(1)
	src := b.sources[fr.Pos.Filename()]
	if src == nil {
		src = newSource(fr.Pos.Filename(), nil, nil)
	}
	s := site{src: src, call: src.calls[[2]int32{fr.Pos.Line, fr.Pos.Col}]}
	if s.call != nil {
		s.at = src.nodeRange(s.call)
	} else {
		s.at = src.rng(fr.Pos, fr.Pos)
	}
	return s
}

func (b *builder) errorf(rng hcl.Range, summary, format string, args ...any) {
	b.diags = append(b.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  rng.Ptr(),
	})
}

func (b *builder) dup(kind, key string, rng hcl.Range) bool {
	k := kind + "\x00" + key
	if prev, ok := b.seen[k]; ok {
		b.errorf(rng, fmt.Sprintf("Duplicate %s", kind),
			"A %s named %q was already declared at %s. Names must be unique.", kind, key, shortRange(prev))
		return true
	}
	b.seen[k] = rng
	return false
}

// name takes the label argument of a declaration: the first positional
// argument, or the keyword argument key.
func nameArg(fn string, key string, args starlark.Tuple, kwargs []starlark.Tuple) (string, []starlark.Tuple, error) {
	var v starlark.Value
	switch {
	case len(args) == 1:
		v = args[0]
	case len(args) > 1:
		return "", nil, fmt.Errorf("%s: got %d positional arguments, want 1 (the %s); pass everything else by keyword", fn, len(args), key)
	}
	var rest []starlark.Tuple
	for _, kv := range kwargs {
		if string(kv[0].(starlark.String)) == key && v == nil {
			v = kv[1]
			continue
		}
		rest = append(rest, kv)
	}
	if v == nil {
		return "", nil, fmt.Errorf("%s: missing the %s (first argument)", fn, key)
	}
	s, ok := v.(starlark.String)
	if !ok {
		return "", nil, fmt.Errorf("%s: the %s must be a string, not %s", fn, key, v.Type())
	}
	return string(s), rest, nil
}

// body synthesizes an HCL body from keyword arguments; keys named in
// blocks become nested blocks.
func (b *builder) body(s site, kwargs []starlark.Tuple, blocks map[string]blockSpec) *hclsyntax.Body {
	body := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, SrcRange: s.at, EndRange: hcl.Range{Filename: s.at.Filename, Start: s.at.End, End: s.at.End}}
	for _, kv := range kwargs {
		key := string(kv[0].(starlark.String))
		nameRng, valRng := s.kwarg(key)
		node := s.kwargNode(key)
		if spec, ok := blocks[key]; ok {
			if kv[1] == starlark.None {
				continue // health = None: no block
			}
			b.blocks(s, body, spec, key, kv[1], nameRng, valRng, node)
			continue
		}
		if a := b.attr(s, key, kv[1], nameRng, valRng, node, "argument "+key); a != nil {
			body.Attributes[key] = a
		}
	}
	return body
}

func (b *builder) attr(s site, key string, v starlark.Value, nameRng, valRng hcl.Range, node syntax.Expr, what string) *hclsyntax.Attribute {
	e, err := converter{rng: valRng}.expr(v, what)
	if err != nil {
		b.errorf(valRng, "Invalid value", "%s.", err)
		return nil
	}
	return &hclsyntax.Attribute{
		Name: key, Expr: e,
		SrcRange:    hcl.RangeBetween(nameRng, valRng),
		NameRange:   nameRng,
		EqualsRange: nameRng,
	}
}

// blockBody turns a dict of attributes into a block body.
func (b *builder) blockBody(s site, v starlark.Value, rng hcl.Range, node syntax.Expr, what string) (*hclsyntax.Body, bool) {
	d, ok := v.(*starlark.Dict)
	if !ok {
		b.errorf(rng, "Invalid block", "%s must be a dict of arguments, like {\"http\": \"/\"}, not %s.", what, v.Type())
		return nil, false
	}
	body := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, SrcRange: rng, EndRange: hcl.Range{Filename: rng.Filename, Start: rng.End, End: rng.End}}
	for _, it := range d.Items() {
		k, ok := it[0].(starlark.String)
		if !ok {
			b.errorf(rng, "Invalid block", "The keys of %s must be argument names (strings), not %s.", what, it[0].Type())
			return nil, false
		}
		nameRng, valRng := rng, rng
		var sub syntax.Expr
		if kn, vn := dictEntry(node, string(k)); vn != nil {
			nameRng, valRng, sub = s.src.nodeRange(kn), s.src.nodeRange(vn), vn
		}
		if a := b.attr(s, string(k), it[1], nameRng, valRng, sub, fmt.Sprintf("%s[%q]", what, string(k))); a != nil {
			body.Attributes[string(k)] = a
		}
	}
	return body, true
}

func (b *builder) blocks(s site, body *hclsyntax.Body, spec blockSpec, key string, v starlark.Value, nameRng, valRng hcl.Range, node syntax.Expr) {
	mk := func(labels []string, labelRanges []hcl.Range, bb *hclsyntax.Body, rng hcl.Range) {
		body.Blocks = append(body.Blocks, &hclsyntax.Block{
			Type: spec.typ, Labels: labels, Body: bb,
			TypeRange: rng, LabelRanges: labelRanges,
			OpenBraceRange: rng, CloseBraceRange: rng,
		})
	}
	switch {
	case spec.labeled:
		d, ok := v.(*starlark.Dict)
		if !ok {
			b.errorf(valRng, "Invalid blocks", "%s must be a dict of name → arguments, like {\"http\": {\"container\": 80}}, not %s.", key, v.Type())
			return
		}
		for _, it := range d.Items() {
			label, ok := it[0].(starlark.String)
			if !ok {
				b.errorf(valRng, "Invalid blocks", "The keys of %s are %s names (strings), not %s.", key, spec.typ, it[0].Type())
				continue
			}
			rng, lrng := valRng, valRng
			var sub syntax.Expr
			if kn, vn := dictEntry(node, string(label)); vn != nil {
				rng, lrng, sub = s.src.nodeRange(vn), s.src.nodeRange(kn), vn
			}
			if bb, ok := b.blockBody(s, it[1], rng, sub, fmt.Sprintf("%s[%q]", key, string(label))); ok {
				mk([]string{string(label)}, []hcl.Range{lrng}, bb, lrng)
			}
		}
	case spec.many:
		var items []starlark.Value
		switch l := v.(type) {
		case *starlark.List:
			for i := 0; i < l.Len(); i++ {
				items = append(items, l.Index(i))
			}
		case starlark.Tuple:
			items = l
		case *starlark.Dict:
			items = []starlark.Value{l}
		default:
			b.errorf(valRng, "Invalid blocks", "%s must be a list of dicts of arguments, not %s.", key, v.Type())
			return
		}
		for i, it := range items {
			rng := valRng
			var sub syntax.Expr
			if ln, ok := node.(*syntax.ListExpr); ok && i < len(ln.List) {
				sub = ln.List[i]
				rng = s.src.nodeRange(sub)
			}
			if bb, ok := b.blockBody(s, it, rng, sub, fmt.Sprintf("%s[%d]", key, i)); ok {
				mk(nil, nil, bb, rng)
			}
		}
	default:
		if bb, ok := b.blockBody(s, v, valRng, node, key); ok {
			mk(nil, nil, bb, nameRng)
		}
	}
}

// dictEntry finds the key and value nodes of a literal dict entry.
func dictEntry(node syntax.Expr, key string) (syntax.Expr, syntax.Expr) {
	d, ok := node.(*syntax.DictExpr)
	if !ok {
		return nil, nil
	}
	for _, e := range d.List {
		entry, ok := e.(*syntax.DictEntry)
		if !ok {
			continue
		}
		if lit, ok := entry.Key.(*syntax.Literal); ok {
			if s, ok := lit.Value.(string); ok && s == key {
				return entry.Key, entry.Value
			}
		}
	}
	return nil, nil
}

// kwargNode returns the syntax node of a keyword argument's value.
func (s site) kwargNode(name string) syntax.Expr {
	if s.call == nil {
		return nil
	}
	for _, a := range s.call.Args {
		if be, ok := a.(*syntax.BinaryExpr); ok && be.Op == syntax.EQ {
			if id, ok := be.X.(*syntax.Ident); ok && id.Name == name {
				return be.Y
			}
		}
	}
	return nil
}

// --- builtins ---

func (b *builder) pipelineFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	name, rest, err := nameArg("pipeline", "name", args, kwargs)
	if err != nil {
		return nil, err
	}
	s := b.site(thread)
	if b.gotPipeline {
		b.errorf(s.at, "Duplicate pipeline block", "A pipeline file has at most one pipeline() call; merge the two.")
		return starlark.None, nil
	}
	b.gotPipeline = true
	b.diags = append(b.diags, decodePipeline(b.p, name, s.at, b.body(s, rest, nil))...)
	return starlark.None, nil
}

func (b *builder) variableFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	name, rest, err := nameArg("variable", "name", args, kwargs)
	if err != nil {
		return nil, err
	}
	s := b.site(thread)
	ref := traversal("var", name)
	if !validName(name) {
		b.errorf(s.arg(0), "Invalid variable name", "%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", name)
		return ref, nil
	}
	if b.dup("variable", name, s.at) {
		return ref, nil
	}
	body := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, SrcRange: s.at}
	var plain []starlark.Tuple
	for _, kv := range rest {
		key := string(kv[0].(starlark.String))
		nameRng, valRng := s.kwarg(key)
		switch key {
		case "type":
			ts, ok := kv[1].(starlark.String)
			if !ok {
				b.errorf(valRng, "Invalid type constraint", "type must be a string such as \"number\" or \"list(string)\", not %s.", kv[1].Type())
				continue
			}
			d := pipeline.CheckExpressionNesting(s.src.name, []byte(ts), s.innerStart(key))
			var e hclsyntax.Expression
			if !d.HasErrors() {
				e, d = hclsyntax.ParseExpression([]byte(ts), s.src.name, s.innerStart(key))
			}
			if d.HasErrors() {
				b.diags = append(b.diags, d...)
				continue
			}
			body.Attributes[key] = &hclsyntax.Attribute{Name: key, Expr: e, SrcRange: hcl.RangeBetween(nameRng, valRng), NameRange: nameRng}
		case "validation":
			b.validations(s, body, kv[1], nameRng, valRng)
		default:
			plain = append(plain, kv)
		}
	}
	for k, a := range b.body(s, plain, nil).Attributes {
		body.Attributes[k] = a
	}
	v, d := decodeVariable(name, s.at, body)
	b.diags = append(b.diags, d...)
	if v != nil {
		b.p.Variables = append(b.p.Variables, v)
	}
	return ref, nil
}

// validations turns validation=[{condition=…, error_message=…}] into
// validation blocks. A string condition is parsed as an HCL expression.
func (b *builder) validations(s site, body *hclsyntax.Body, v starlark.Value, nameRng, valRng hcl.Range) {
	var items []starlark.Value
	switch l := v.(type) {
	case *starlark.List:
		for i := 0; i < l.Len(); i++ {
			items = append(items, l.Index(i))
		}
	case starlark.Tuple:
		items = l
	case *starlark.Dict:
		items = []starlark.Value{l}
	default:
		b.errorf(valRng, "Invalid validation", "validation must be a dict {\"condition\": …, \"error_message\": …} or a list of them, not %s.", v.Type())
		return
	}
	node := s.kwargNode("validation")
	for i, it := range items {
		d, ok := it.(*starlark.Dict)
		if !ok {
			b.errorf(valRng, "Invalid validation", "validation[%d] must be a dict, not %s.", i, it.Type())
			continue
		}
		itemNode := node
		if ln, ok := node.(*syntax.ListExpr); ok && i < len(ln.List) {
			itemNode = ln.List[i]
		}
		vb := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}, SrcRange: valRng}
		for _, kv := range d.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				b.errorf(valRng, "Invalid validation", "The keys of validation[%d] must be strings.", i)
				continue
			}
			rng, start := valRng, valRng.Start
			if _, vn := dictEntry(itemNode, string(k)); vn != nil {
				rng = s.src.nodeRange(vn)
				start = rng.Start
				if lit, ok := vn.(*syntax.Literal); ok && lit.Token == syntax.STRING && len(lit.Raw) > 0 && (lit.Raw[0] == '"' || lit.Raw[0] == '\'') {
					start.Column++
					start.Byte++
				}
			}
			var e hclsyntax.Expression
			if cs, isStr := kv[1].(starlark.String); isStr && k == "condition" {
				dg := pipeline.CheckExpressionNesting(s.src.name, []byte(cs), start)
				var ce hclsyntax.Expression
				if !dg.HasErrors() {
					ce, dg = hclsyntax.ParseExpression([]byte(cs), s.src.name, start)
				}
				if dg.HasErrors() {
					b.diags = append(b.diags, dg...)
					continue
				}
				e = ce
			} else {
				ce, err := converter{rng: rng}.expr(kv[1], fmt.Sprintf("validation[%d][%q]", i, string(k)))
				if err != nil {
					b.errorf(rng, "Invalid value", "%s.", err)
					continue
				}
				e = ce
			}
			vb.Attributes[string(k)] = &hclsyntax.Attribute{Name: string(k), Expr: e, SrcRange: rng, NameRange: rng}
		}
		body.Blocks = append(body.Blocks, &hclsyntax.Block{Type: "validation", Body: vb, TypeRange: nameRng, OpenBraceRange: valRng, CloseBraceRange: valRng})
	}
}

// innerStart is the position inside the quotes of a string keyword argument.
func (s site) innerStart(key string) hcl.Pos {
	_, r := s.kwarg(key)
	if lit, ok := s.kwargNode(key).(*syntax.Literal); ok && lit.Token == syntax.STRING && len(lit.Raw) > 0 && (lit.Raw[0] == '"' || lit.Raw[0] == '\'') {
		p := r.Start
		p.Column++
		p.Byte++
		return p
	}
	return r.Start
}

func (b *builder) localFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	var value starlark.Value
	if err := starlark.UnpackArgs("local", args, kwargs, "name", &name, "value", &value); err != nil {
		return nil, err
	}
	s := b.site(thread)
	ref := traversal("local", name)
	if b.dup("local value", name, s.at) {
		return ref, nil
	}
	rng := s.arg(1)
	if _, vr := s.kwarg("value"); len(args) < 2 {
		rng = vr
	}
	e, err := converter{rng: rng}.expr(value, "local "+name)
	if err != nil {
		b.errorf(rng, "Invalid value", "%s.", err)
		return ref, nil
	}
	b.p.Locals = append(b.p.Locals, &pipeline.Local{Name: name, Expr: e, DeclRange: s.at})
	return ref, nil
}

func (b *builder) matrixFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("matrix: axes are keyword arguments, like matrix(size=[1, 2]); got %d positional arguments", len(args))
	}
	s := b.site(thread)
	if b.gotMatrix {
		b.errorf(s.at, "Duplicate matrix block", "A pipeline file has at most one matrix() call; merge the two.")
		return starlark.None, nil
	}
	b.gotMatrix = true
	m := b.p.Matrix
	m.DeclRange = s.at
	for _, kv := range kwargs {
		key := string(kv[0].(starlark.String))
		nameRng, valRng := s.kwarg(key)
		e, err := converter{rng: valRng}.expr(kv[1], "matrix "+key)
		if err != nil {
			b.errorf(valRng, "Invalid value", "%s.", err)
			continue
		}
		switch key {
		case "exclude":
			m.Exclude = e
		case "include":
			m.Include = e
		default:
			if !validName(key) {
				b.errorf(nameRng, "Invalid matrix axis name", "%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", key)
				continue
			}
			switch kv[1].(type) {
			case *starlark.List, starlark.Tuple, *Expr:
			default:
				b.errorf(valRng, "Invalid matrix axis", "Matrix axis %q must be a list of values, like [\"a\", \"b\"]; got %s.", key, kv[1].Type())
				continue
			}
			m.Axes = append(m.Axes, &pipeline.Axis{Name: key, Expr: e, DeclRange: hcl.RangeBetween(nameRng, valRng)})
		}
	}
	return starlark.None, nil
}

func (b *builder) providerFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("provider: got %d positional arguments, want 2 (type and name, as in provider(\"docker\", \"nat\", network = \"bridge\"))", len(args))
	}
	typ, ok1 := args[0].(starlark.String)
	name, ok2 := args[1].(starlark.String)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("provider: type and name must be strings, not %s and %s", args[0].Type(), args[1].Type())
	}
	s := b.site(thread)
	if !validName(string(name)) {
		b.errorf(s.arg(1), "Invalid provider name", "%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", string(name))
		return name, nil
	}
	if b.dup("provider", string(name), s.at) {
		return name, nil
	}
	b.p.Providers = append(b.p.Providers, &pipeline.Provider{
		Type: string(typ), Name: string(name), Config: b.body(s, kwargs, nil),
		DeclRange: s.at, TypeRange: s.arg(0),
	})
	return name, nil
}

func (b *builder) serviceFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	name, rest, err := nameArg("service", "name", args, kwargs)
	if err != nil {
		return nil, err
	}
	s := b.site(thread)
	ref := traversal("service", name)
	if !validName(name) {
		b.errorf(s.arg(0), "Invalid service name", "%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", name)
		return ref, nil
	}
	if b.dup("service", name, s.at) {
		return ref, nil
	}
	body := b.body(s, rest, serviceBlocks)
	b.diags = append(b.diags, checkBody(body, &pipeline.ServiceConfig{})...)
	b.p.Services = append(b.p.Services, &pipeline.Service{Name: name, Body: body, DeclRange: s.at})
	return ref, nil
}

func (b *builder) stepFn(kind string) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		name, rest, err := nameArg("step."+kind, "name", args, kwargs)
		if err != nil {
			return nil, err
		}
		s := b.site(thread)
		ref := traversal("step", kind, name)
		cfg := steps.NewConfig(kind)
		if cfg == nil {
			b.errorf(s.at, "Unknown step kind", "There is no step kind %q.%s Step kinds are %s.", kind, diag.Suggest(kind, steps.Names()), strings.Join(steps.Names(), ", "))
			return ref, nil
		}
		if !validName(name) {
			b.errorf(s.arg(0), "Invalid step name", "%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", name)
			return ref, nil
		}
		if b.dup("step", name, s.at) {
			return ref, nil
		}
		var blocks map[string]blockSpec
		for _, nb := range steps.Lookup(kind).Blocks {
			if blocks == nil {
				blocks = map[string]blockSpec{}
			}
			blocks[nb.Keyword] = blockSpec{typ: nb.Type, labeled: nb.Labeled, many: nb.Many}
		}
		body := b.body(s, rest, blocks)
		b.diags = append(b.diags, checkBody(body, cfg)...)
		b.p.Steps = append(b.p.Steps, &pipeline.Step{Kind: kind, Name: name, Body: body, DeclRange: s.at})
		return ref, nil
	}
}

// claimFn is claim("name", metric = …, cell = {…}, versus = {…}, ratio = …):
// the twin of a claim block.
func (b *builder) claimFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	name, rest, err := nameArg("claim", "name", args, kwargs)
	if err != nil {
		return nil, err
	}
	s := b.site(thread)
	if !validClaimName(name) {
		b.errorf(s.arg(0), "Invalid claim name", "%q is not a valid claim name: use letters, digits, underscores and dashes, starting with a letter or a digit (1M-requests).", name)
		return starlark.None, nil
	}
	if b.dup("claim", name, s.at) {
		return starlark.None, nil
	}
	c, d := decodeClaim(name, s.at, b.body(s, rest, nil))
	b.diags = append(b.diags, d...)
	if c != nil {
		b.p.Claims = append(b.p.Claims, c)
	}
	return starlark.None, nil
}

func (b *builder) outputFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("output: arguments are keywords (dir = …, format = …); got %d positional arguments", len(args))
	}
	s := b.site(thread)
	if b.gotOutput {
		b.errorf(s.at, "Duplicate output block", "A pipeline file has at most one output() call; merge the two.")
		return starlark.None, nil
	}
	b.gotOutput = true
	b.diags = append(b.diags, decodeOutput(b.p, b.body(s, kwargs, nil))...)
	return starlark.None, nil
}

// fileFn is HCL's file(): the text is read when the plan is built.
func fileFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var p starlark.Value
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &p); err != nil {
		return nil, err
	}
	return &Expr{kind: exprCall, fn: fn.Name(), args: []starlark.Value{p}}, nil
}

func templatefileFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var p, vars starlark.Value
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 2, &p, &vars); err != nil {
		return nil, err
	}
	return &Expr{kind: exprCall, fn: fn.Name(), args: []starlark.Value{p, vars}}, nil
}

func (b *builder) hclFn(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var src string
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &src); err != nil {
		return nil, err
	}
	s := b.site(thread)
	d := pipeline.CheckExpressionNesting(s.src.name, []byte(src), s.argStart(0))
	var e hclsyntax.Expression
	if !d.HasErrors() {
		e, d = hclsyntax.ParseExpression([]byte(src), s.src.name, s.argStart(0))
	}
	if d.HasErrors() {
		// Reported where HCL found the problem, inside the string; the
		// file keeps running so that later mistakes are reported too.
		b.diags = append(b.diags, d...)
		return &Expr{kind: exprRaw, raw: &hclsyntax.LiteralValueExpr{Val: cty.NullVal(cty.DynamicPseudoType), SrcRange: s.arg(0)}, src: "null"}, nil
	}
	return &Expr{kind: exprRaw, raw: e, src: src}, nil
}

// fnModule is `fn`: fn.<name>(args…) calls the HCL function <name> when
// the plan is evaluated (fn.jsonencode({"a": matrix.size}), fn.upper(…)).
type fnModule struct{}

var _ starlark.HasAttrs = fnModule{}

func (fnModule) String() string        { return "fn" }
func (fnModule) Type() string          { return "fn" }
func (fnModule) Freeze()               {}
func (fnModule) Truth() starlark.Bool  { return starlark.True }
func (fnModule) Hash() (uint32, error) { return starlark.String("fn").Hash() }
func (fnModule) AttrNames() []string   { return nil }
func (fnModule) Attr(name string) (starlark.Value, error) {
	return starlark.NewBuiltin("fn."+name, func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(kwargs) > 0 {
			return nil, fmt.Errorf("fn.%s: HCL functions take positional arguments only", name)
		}
		return &Expr{kind: exprCall, fn: name, args: append([]starlark.Value(nil), args...)}, nil
	}), nil
}

// root is a predeclared name that starts references (matrix.deploy) and,
// for some, declares things when called (matrix(…), service(…)).
type root struct {
	name  string
	call  *starlark.Builtin // nil: not callable
	kinds map[string]*stepKind
}

var (
	_ starlark.HasAttrs = (*root)(nil)
	_ starlark.Callable = (*root)(nil)
)

func (r *root) String() string        { return r.name }
func (r *root) Type() string          { return "reference" }
func (r *root) Freeze()               {}
func (r *root) Truth() starlark.Bool  { return starlark.True }
func (r *root) Hash() (uint32, error) { return starlark.String(r.name).Hash() }
func (r *root) Name() string          { return r.name }
func (r *root) AttrNames() []string {
	if r.kinds != nil {
		names := make([]string, 0, len(r.kinds))
		for k := range r.kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		return names
	}
	return nil
}

func (r *root) Attr(name string) (starlark.Value, error) {
	name = attrName(name)
	if r.kinds != nil {
		if k, ok := r.kinds[name]; ok {
			return k, nil
		}
		return &stepKind{kind: name, fn: starlark.NewBuiltin("step."+name, r.kinds[pipeline.KindLoad].b.stepFn(name))}, nil
	}
	return traversal(r.name, name), nil
}

func (r *root) CallInternal(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if r.call == nil {
		hint := ""
		switch r.name {
		case "var":
			hint = "; declare variables with variable(\"name\", default = …)"
		case "step":
			hint = "; declare steps with step.load(\"name\", …), step.warm(…), step.tune(…) and so on"
		}
		return nil, fmt.Errorf("%s is not callable%s", r.name, hint)
	}
	// Called directly (not through starlark.Call) so that the caller's
	// frame stays at depth 1, where site() looks for it.
	return r.call.CallInternal(thread, args, kwargs)
}

// stepKind is step.load: called, it declares a load step; its fields are
// references (step.load.main).
type stepKind struct {
	kind string
	fn   *starlark.Builtin
	b    *builder
}

func (k *stepKind) String() string        { return "step." + k.kind }
func (k *stepKind) Type() string          { return "step kind" }
func (k *stepKind) Freeze()               {}
func (k *stepKind) Truth() starlark.Bool  { return starlark.True }
func (k *stepKind) Hash() (uint32, error) { return starlark.String(k.kind).Hash() }
func (k *stepKind) Name() string          { return "step." + k.kind }
func (k *stepKind) AttrNames() []string   { return nil }
func (k *stepKind) Attr(name string) (starlark.Value, error) {
	name = attrName(name)
	return traversal("step", k.kind, name), nil
}
func (k *stepKind) CallInternal(thread *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return k.fn.CallInternal(thread, args, kwargs)
}

// predeclared returns the names a .star pipeline starts with.
func (b *builder) predeclared() starlark.StringDict {
	kinds := map[string]*stepKind{}
	for _, k := range steps.Names() {
		kinds[k] = &stepKind{kind: k, fn: starlark.NewBuiltin("step."+k, b.stepFn(k)), b: b}
	}
	return starlark.StringDict{
		"pipeline":     starlark.NewBuiltin("pipeline", b.pipelineFn),
		"variable":     starlark.NewBuiltin("variable", b.variableFn),
		"provider":     starlark.NewBuiltin("provider", b.providerFn),
		"output":       starlark.NewBuiltin("output", b.outputFn),
		"claim":        starlark.NewBuiltin("claim", b.claimFn),
		"file":         starlark.NewBuiltin("file", fileFn),
		"templatefile": starlark.NewBuiltin("templatefile", templatefileFn),
		"hcl":          starlark.NewBuiltin("hcl", b.hclFn),
		"fn":           fnModule{},
		"local":        &root{name: "local", call: starlark.NewBuiltin("local", b.localFn)},
		"matrix":       &root{name: "matrix", call: starlark.NewBuiltin("matrix", b.matrixFn)},
		"service":      &root{name: "service", call: starlark.NewBuiltin("service", b.serviceFn)},
		"step":         &root{name: "step", kinds: kinds},
		"var":          &root{name: "var"},
		"self":         &root{name: "self"},
		"trial":        &root{name: "trial"},
		"benchflow":    &root{name: "benchflow"},
	}
}
