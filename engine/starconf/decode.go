package starconf

// The fixed declarations (pipeline, variable, output) are decoded from
// synthesized bodies with the same rules and messages as engine/hclconf,
// so both front ends accept and reject the same things.

import (
	"fmt"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/benchflow/benchflow/engine/pipeline"
)

type pipelineBlock struct {
	Description   string `hcl:"description,optional"`
	Repetitions   *int   `hcl:"repetitions,optional"`
	Order         string `hcl:"order,optional"`
	Seed          *int64 `hcl:"seed,optional"`
	OnFailure     string `hcl:"on_failure,optional"`
	ReuseServices bool   `hcl:"reuse_services,optional"`
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

func decodePipeline(p *pipeline.Pipeline, name string, at hcl.Range, body *hclsyntax.Body) hcl.Diagnostics {
	p.Name = name
	p.DeclRange = at
	var pb pipelineBlock
	diags := gohcl.DecodeBody(body, nil, &pb)
	if diags.HasErrors() {
		return diags
	}
	p.Description = pb.Description
	if pb.Repetitions != nil {
		if *pb.Repetitions < 1 || *pb.Repetitions > 10000 {
			diags = append(diags, attrDiag(body, "repetitions", "Invalid repetitions",
				fmt.Sprintf("repetitions must be between 1 and 10000, not %d.", *pb.Repetitions)))
		}
		p.Repetitions = *pb.Repetitions
	}
	switch pb.Order {
	case "":
	case pipeline.OrderInterleaved, pipeline.OrderSequential, pipeline.OrderRandom:
		p.Order = pb.Order
	default:
		diags = append(diags, attrDiag(body, "order", "Invalid trial order",
			fmt.Sprintf("order must be \"interleaved\", \"sequential\" or \"random\", not %q.%s", pb.Order,
				suggest(pb.Order, []string{"interleaved", "sequential", "random"}))))
	}
	if pb.Seed != nil {
		p.Seed = *pb.Seed
	}
	switch pb.OnFailure {
	case "":
	case "continue", "abort":
		p.OnFailure = pb.OnFailure
	default:
		diags = append(diags, attrDiag(body, "on_failure", "Invalid on_failure",
			fmt.Sprintf("on_failure must be \"continue\" or \"abort\", not %q.", pb.OnFailure)))
	}
	p.ReuseServices = pb.ReuseServices
	return diags
}

func decodeOutput(p *pipeline.Pipeline, body *hclsyntax.Body) hcl.Diagnostics {
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

func decodeVariable(name string, at hcl.Range, body *hclsyntax.Body) (*pipeline.Variable, hcl.Diagnostics) {
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

// checkBody reports structural problems (unknown or missing arguments and
// blocks, with suggestions) in a body that is only evaluated per trial.
func checkBody(body hcl.Body, v any) hcl.Diagnostics {
	schema, _ := gohcl.ImpliedBodySchema(v)
	content, diags := body.Content(schema)
	for _, blk := range content.Blocks {
		switch blk.Type {
		case "file":
			diags = append(diags, checkBody(blk.Body, &pipeline.FileConfig{})...)
		case "port":
			diags = append(diags, checkBody(blk.Body, &pipeline.PortConfig{})...)
		case "health":
			diags = append(diags, checkBody(blk.Body, &pipeline.HealthConfig{})...)
		case "url":
			diags = append(diags, checkBody(blk.Body, &pipeline.URLConfig{})...)
		}
	}
	return diags
}

func validName(s string) bool {
	return hclsyntax.ValidIdentifier(s) && s != "" && !strings.HasPrefix(s, "-")
}

// attrDiag builds an error pointing at the value of an argument of body,
// or at the body when the argument is absent.
func attrDiag(body *hclsyntax.Body, name, summary, detail string) *hcl.Diagnostic {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: body.SrcRange.Ptr()}
	if a, ok := body.Attributes[name]; ok {
		d.Subject = a.Expr.Range().Ptr()
	}
	return d
}

func suggest(given string, options []string) string {
	best, bestDist := "", 1<<30
	for _, o := range options {
		if d := levenshtein.Distance(given, o, nil); d < bestDist && d < 3 {
			best, bestDist = o, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

func shortRange(r hcl.Range) string {
	return fmt.Sprintf("%s:%d,%d", r.Filename, r.Start.Line, r.Start.Column)
}
