package hclconf

import (
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "pipeline", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "matrix"},
		{Type: "provider", LabelNames: []string{"type", "name"}},
		{Type: "service", LabelNames: []string{"name"}},
		{Type: "step", LabelNames: []string{"kind", "name"}},
		{Type: "output"},
		{Type: "claim", LabelNames: []string{"name"}},
	},
}

type pipelineBlock struct {
	Description   string         `hcl:"description,optional"`
	Repetitions   hcl.Expression `hcl:"repetitions,optional"`
	Order         string         `hcl:"order,optional"`
	Seed          *int64         `hcl:"seed,optional"`
	OnFailure     string         `hcl:"on_failure,optional"`
	ReuseServices bool           `hcl:"reuse_services,optional"`
	// ExcludeUnsteady: see pipeline.Pipeline.ExcludeUnsteady.
	ExcludeUnsteady bool `hcl:"exclude_unsteady,optional"`
	// BusyRerun: see pipeline.Pipeline.BusyRerun.
	BusyRerun *int64 `hcl:"busy_rerun,optional"`
	// BusyGiveUp: see pipeline.Pipeline.BusyGiveUp.
	BusyGiveUp *int64 `hcl:"busy_give_up,optional"`
}

type outputBlock struct {
	Dir    string `hcl:"dir,optional"`
	Format string `hcl:"format,optional"`
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true}, {Name: "error_message", Required: true},
	},
}

// ParseFile reads and decodes a pipeline file from the OS file system.
func ParseFile(filename string) (*pipeline.Pipeline, hcl.Diagnostics) {
	dir := path.Dir(filename)
	return Parse(osFS(dir), filename, path.Base(filename))
}

// Parse decodes the pipeline file name (relative to fsys) whose display
// name in diagnostics is display. Everything that can be checked without a
// trial is checked here; bodies evaluated per trial are kept for
// engine/plan. It never panics, whatever the bytes.
func Parse(fsys fs.FS, display, name string) (*pipeline.Pipeline, hcl.Diagnostics) {
	src, err := pipeline.ReadFile(fsys, name)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read pipeline file",
			Detail:   fmt.Sprintf("Reading %s: %s.", display, err),
			Subject:  &hcl.Range{Filename: display, Start: hcl.InitialPos, End: hcl.InitialPos},
		}}
	}
	return ParseSource(fsys, display, src)
}

// ParseSource decodes pipeline source bytes; fsys is the pipeline's folder.
func ParseSource(fsys fs.FS, display string, src []byte) (p *pipeline.Pipeline, diags hcl.Diagnostics) {
	defer func() {
		if r := recover(); r != nil {
			p = nil
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Internal error while decoding the pipeline",
				Detail:   fmt.Sprintf("benchflow could not decode this file (%v). Please report it with the file attached.", r),
				Subject:  &hcl.Range{Filename: display, Start: hcl.InitialPos, End: hcl.InitialPos},
			})
		}
	}()
	if d := checkLimits(display, src); d.HasErrors() {
		return nil, d
	}
	file, diags := hclsyntax.ParseConfig(src, display, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	p = pipeline.New(display, fsys, src, "hcl")
	content, cdiags := file.Body.Content(rootSchema)
	diags = append(diags, cdiags...)

	seen := map[string]hcl.Range{}
	dup := func(kind, key string, rng hcl.Range) bool {
		k := kind + "\x00" + key
		if prev, ok := seen[k]; ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Duplicate %s", kind),
				Detail:   fmt.Sprintf("A %s named %q was already declared at %s. Names must be unique.", kind, key, shortRange(prev)),
				Subject:  rng.Ptr(),
			})
			return true
		}
		seen[k] = rng
		return false
	}

	var gotPipeline, gotMatrix, gotOutput bool
	for _, b := range content.Blocks {
		switch b.Type {
		case "pipeline":
			if gotPipeline {
				diags = append(diags, singleBlock("pipeline", b))
				continue
			}
			gotPipeline = true
			diags = append(diags, decodePipeline(p, b)...)
		case "variable":
			if !validName(b.Labels[0]) {
				diags = append(diags, badName("variable", b.Labels[0], b.LabelRanges[0]))
				continue
			}
			if dup("variable", b.Labels[0], b.DefRange) {
				continue
			}
			v, d := decodeVariable(b)
			diags = append(diags, d...)
			if v != nil {
				p.Variables = append(p.Variables, v)
			}
		case "locals":
			attrs, d := b.Body.JustAttributes()
			diags = append(diags, d...)
			for _, a := range sortedAttrs(attrs) {
				if dup("local value", a.Name, a.NameRange) {
					continue
				}
				p.Locals = append(p.Locals, &pipeline.Local{Name: a.Name, Expr: a.Expr, DeclRange: a.Range})
			}
		case "matrix":
			if gotMatrix {
				diags = append(diags, singleBlock("matrix", b))
				continue
			}
			gotMatrix = true
			diags = append(diags, decodeMatrix(p.Matrix, b)...)
		case "provider":
			if !validName(b.Labels[1]) {
				diags = append(diags, badName("provider", b.Labels[1], b.LabelRanges[1]))
				continue
			}
			if dup("provider", b.Labels[1], b.DefRange) {
				continue
			}
			p.Providers = append(p.Providers, &pipeline.Provider{
				Type: b.Labels[0], Name: b.Labels[1], Config: b.Body,
				DeclRange: b.DefRange, TypeRange: b.LabelRanges[0],
			})
		case "service":
			if !validName(b.Labels[0]) {
				diags = append(diags, badName("service", b.Labels[0], b.LabelRanges[0]))
				continue
			}
			if dup("service", b.Labels[0], b.DefRange) {
				continue
			}
			diags = append(diags, checkBody(b.Body, &pipeline.ServiceConfig{})...)
			p.Services = append(p.Services, &pipeline.Service{Name: b.Labels[0], Body: b.Body, DeclRange: b.DefRange})
		case "step":
			diags = append(diags, decodeStepBlock(p, b, dup)...)
		case "claim":
			diags = append(diags, decodeClaimBlock(p, b, dup)...)
		case "output":
			if gotOutput {
				diags = append(diags, singleBlock("output", b))
				continue
			}
			gotOutput = true
			diags = append(diags, DecodeOutput(p, b.Body)...)
		}
	}
	if !gotPipeline {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing pipeline block",
			Detail:   `A pipeline file needs one block like pipeline "name" { description = "…" }.`,
			Subject:  &hcl.Range{Filename: display, Start: hcl.InitialPos, End: hcl.InitialPos},
		})
	}
	if len(p.Steps) == 0 && gotPipeline {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "No steps",
			Detail:   "The pipeline declares no step blocks, so trials only provision and tear down services.",
			Subject:  p.DeclRange.Ptr(),
		})
	}
	return p, diags
}

// decodeStepBlock decodes a step block into p; dup reports (into the
// caller's diagnostics) a name already declared.
func decodeStepBlock(p *pipeline.Pipeline, b *hcl.Block, dup func(kind, key string, rng hcl.Range) bool) (diags hcl.Diagnostics) {
	kind, name := b.Labels[0], b.Labels[1]
	cfg := steps.NewConfig(kind)
	if cfg == nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown step kind",
			Detail:   fmt.Sprintf("There is no step kind %q.%s Step kinds are %s.", kind, diag.Suggest(kind, steps.Names()), strings.Join(steps.Names(), ", ")),
			Subject:  b.LabelRanges[0].Ptr(),
		})
		return diags
	}
	if !validName(name) {
		diags = append(diags, badName("step", name, b.LabelRanges[1]))
		return diags
	}
	if dup("step", name, b.DefRange) {
		return diags
	}
	diags = append(diags, checkBody(b.Body, cfg)...)
	p.Steps = append(p.Steps, &pipeline.Step{Kind: kind, Name: name, Body: b.Body, DeclRange: b.DefRange})
	return diags
}

// decodeClaimBlock decodes a claim block into p, as decodeStepBlock.
func decodeClaimBlock(p *pipeline.Pipeline, b *hcl.Block, dup func(kind, key string, rng hcl.Range) bool) (diags hcl.Diagnostics) {
	if !ValidClaimName(b.Labels[0]) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid claim name",
			Detail:  fmt.Sprintf("%q is not a valid claim name: use letters, digits, underscores and dashes, starting with a letter or a digit (1M-requests).", b.Labels[0]),
			Subject: b.LabelRanges[0].Ptr()})
		return diags
	}
	if dup("claim", b.Labels[0], b.DefRange) {
		return diags
	}
	c, d := claims.Decode(b.Labels[0], b.DefRange, b.Body)
	diags = append(diags, d...)
	if c != nil {
		p.Claims = append(p.Claims, c)
	}
	return diags
}

func decodePipeline(p *pipeline.Pipeline, b *hcl.Block) hcl.Diagnostics {
	return DecodePipeline(p, b.Labels[0], b.DefRange, b.Body)
}

// DecodePipeline decodes the body of a pipeline block into p. The Starlark
// front end uses it too, so both accept and reject the same things.
func DecodePipeline(p *pipeline.Pipeline, name string, at hcl.Range, body hcl.Body) hcl.Diagnostics {
	p.Name = name
	p.DeclRange = at
	var pb pipelineBlock
	diags := gohcl.DecodeBody(body, nil, &pb)
	if diags.HasErrors() {
		return diags
	}
	p.Description = pb.Description
	diags = append(diags, decodeRepetitions(p, body, pb.Repetitions)...)
	switch pb.Order {
	case "":
	case pipeline.OrderInterleaved, pipeline.OrderSequential, pipeline.OrderRandom:
		p.Order = pb.Order
	default:
		diags = append(diags, attrDiag(body, "order", "Invalid trial order",
			fmt.Sprintf("order must be \"interleaved\", \"sequential\" or \"random\", not %q.%s", pb.Order,
				diag.Suggest(pb.Order, []string{"interleaved", "sequential", "random"}))))
	}
	if pb.Seed != nil {
		p.Seed = *pb.Seed
	}
	switch pb.OnFailure {
	case "":
	case "continue", "abort", "all":
		p.OnFailure = pb.OnFailure
	default:
		diags = append(diags, attrDiag(body, "on_failure", "Invalid on_failure",
			fmt.Sprintf("on_failure must be \"continue\" (the default: go on, but stop when the first two trials fail the same way), \"abort\" (stop at the first failed trial) or \"all\" (run every trial whatever fails), not %q.", pb.OnFailure)))
	}
	if p.Adaptive != nil && p.Order != pipeline.OrderInterleaved {
		diags = append(diags, attrDiag(body, "repetitions", "Adaptive repetitions need interleaved order",
			fmt.Sprintf("repetitions = { min, max, precision } adds whole rounds of the cells that need them, which needs order = \"interleaved\", not %q.", p.Order)))
	}
	p.ReuseServices = pb.ReuseServices
	p.ExcludeUnsteady = pb.ExcludeUnsteady
	if n := pb.BusyRerun; n != nil {
		if *n < 0 || *n > pipeline.MaxBusyRerun {
			diags = append(diags, attrDiag(body, "busy_rerun", "Invalid busy_rerun",
				fmt.Sprintf("busy_rerun is how many times a trial that found the machine busy runs again: 0 (never) to %d, not %d.", pipeline.MaxBusyRerun, *n)))
		} else {
			p.BusyRerun = int(*n)
		}
	}
	if n := pb.BusyGiveUp; n != nil {
		if *n < 0 || *n > pipeline.MaxBusyGiveUp {
			diags = append(diags, attrDiag(body, "busy_give_up", "Invalid busy_give_up",
				fmt.Sprintf("busy_give_up is how many attempts in a row may find the machine busy before busy trials are no longer run again: 0 (never give up) to %d, not %d.", pipeline.MaxBusyGiveUp, *n)))
		} else {
			p.BusyGiveUp = int(*n)
		}
	}
	return diags
}

func decodeVariable(b *hcl.Block) (*pipeline.Variable, hcl.Diagnostics) {
	return DecodeVariable(b.Labels[0], b.DefRange, b.Body)
}

// DecodeVariable decodes the body of a variable block (both front ends).
func DecodeVariable(name string, at hcl.Range, body hcl.Body) (*pipeline.Variable, hcl.Diagnostics) {
	v := &pipeline.Variable{Name: name, Type: cty.DynamicPseudoType, DeclRange: at}
	content, diags := body.Content(variableSchema)
	if a, ok := content.Attributes["description"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &v.Description)...)
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &v.Sensitive)...)
	}
	if a, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Type = ty
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.Type != cty.DynamicPseudoType {
				cv, err := convert.Convert(val, v.Type)
				if err != nil {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid default value for variable",
						Detail:   fmt.Sprintf("The default value of variable %q does not match its type %s: %s.", v.Name, typeexpr.TypeString(v.Type), err),
						Subject:  a.Expr.Range().Ptr(),
					})
				} else {
					val = cv
				}
			}
			v.Default = val
		}
	}
	for _, vb := range content.Blocks {
		vc, d := vb.Body.Content(validationSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		val := &pipeline.Validation{Condition: vc.Attributes["condition"].Expr, DeclRange: vb.DefRange}
		diags = append(diags, gohcl.DecodeExpression(vc.Attributes["error_message"].Expr, nil, &val.ErrorMessage)...)
		ok := false
		for _, tr := range val.Condition.Variables() {
			if tr.RootName() == "var" && len(tr) > 1 {
				if at, isAttr := tr[1].(hcl.TraverseAttr); isAttr && at.Name == v.Name {
					ok = true
				}
			}
		}
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid variable validation condition",
				Detail:   fmt.Sprintf("The condition must refer to var.%s, the variable being validated.", v.Name),
				Subject:  val.Condition.Range().Ptr(),
			})
		}
		v.Validations = append(v.Validations, val)
	}
	return v, diags
}

func decodeMatrix(m *pipeline.Matrix, b *hcl.Block) hcl.Diagnostics {
	m.DeclRange = b.DefRange
	attrs, diags := b.Body.JustAttributes()
	for _, a := range sortedAttrs(attrs) {
		switch a.Name {
		case "exclude":
			m.Exclude = a.Expr
		case "include":
			m.Include = a.Expr
		default:
			if !validName(a.Name) {
				diags = append(diags, badName("matrix axis", a.Name, a.NameRange))
				continue
			}
			m.Axes = append(m.Axes, &pipeline.Axis{Name: a.Name, Expr: a.Expr, DeclRange: a.Range})
		}
	}
	return diags
}

// DecodeOutput decodes the body of an output block into p.Output.
func DecodeOutput(p *pipeline.Pipeline, body hcl.Body) hcl.Diagnostics {
	var o outputBlock
	diags := gohcl.DecodeBody(body, nil, &o)
	if o.Dir != "" {
		p.Output.Dir = o.Dir
	}
	switch o.Format {
	case "", "parquet":
	case "arrow":
		p.Output.Format = "arrow"
	default:
		diags = append(diags, attrDiag(body, "format", "Invalid output format",
			fmt.Sprintf("The output format must be \"parquet\" or \"arrow\", not %q.", o.Format)))
	}
	return diags
}

// CheckBody reports structural problems in a service or step body (both
// front ends); see checkBody.
func CheckBody(body hcl.Body, v any) hcl.Diagnostics { return checkBody(body, v) }

// ValidName reports whether s is a valid block or axis name.
func ValidName(s string) bool { return validName(s) }

// ShortRange renders FILE:LINE,COL.
func ShortRange(r hcl.Range) string { return shortRange(r) }

// checkBody reports structural problems (unknown or missing arguments and
// blocks, with suggestions) in a body that is only evaluated per trial.
// Nested blocks are checked against the struct type of the field that
// declares them (`hcl:"name,block"`), so a schema owns its nested blocks.
func checkBody(body hcl.Body, v any) hcl.Diagnostics {
	schema, _ := gohcl.ImpliedBodySchema(v)
	content, diags := body.Content(schema)
	for _, blk := range content.Blocks {
		if nested := blockStruct(v, blk.Type); nested != nil {
			diags = append(diags, checkBody(blk.Body, nested)...)
		}
	}
	return diags
}

// blockStruct returns a pointer to a new value of the struct type the
// field tagged `hcl:"<typ>,block"` of *v holds (itself, through a pointer
// or as a slice's element), or nil.
func blockStruct(v any, typ string) any {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("hcl") != typ+",block" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return reflect.New(ft).Interface()
		}
	}
	return nil
}

func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := out[i].Range, out[j].Range
		if ri.Start.Line != rj.Start.Line {
			return ri.Start.Line < rj.Start.Line
		}
		return ri.Start.Column < rj.Start.Column
	})
	return out
}

func singleBlock(kind string, b *hcl.Block) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Duplicate %s block", kind),
		Detail:   fmt.Sprintf("A pipeline file has at most one %s block; merge the two.", kind),
		Subject:  b.DefRange.Ptr(),
	}
}

func badName(kind, name string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid %s name", kind),
		Detail:   fmt.Sprintf("%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", name),
		Subject:  rng.Ptr(),
	}
}

// ValidClaimName: a claim is never referred to in an expression, so its
// name may start with a digit ("1M-requests"): letters, digits,
// underscores and dashes, not starting with a dash.
func ValidClaimName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func validName(s string) bool {
	return hclsyntax.ValidIdentifier(s) && s != "" && !strings.HasPrefix(s, "-")
}

// attrDiag builds an error pointing at the attribute name of body, or at the
// body when the attribute cannot be found.
func attrDiag(body hcl.Body, name, summary, detail string) *hcl.Diagnostic {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
	if sb, ok := body.(*hclsyntax.Body); ok {
		if a, ok := sb.Attributes[name]; ok {
			d.Subject = a.Expr.Range().Ptr()
			return d
		}
		d.Subject = sb.SrcRange.Ptr()
	}
	return d
}

func shortRange(r hcl.Range) string {
	return fmt.Sprintf("%s:%d,%d", r.Filename, r.Start.Line, r.Start.Column)
}
