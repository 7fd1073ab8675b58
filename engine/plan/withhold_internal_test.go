package plan

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/hclconf"
)

// The pass over diagnostics: a summary that quotes something is replaced
// too, the evaluation context (which holds the values) is dropped, a
// second pass changes nothing, and a provider built from a sensitive
// setting has its New error replaced.
func TestWithholdPass(t *testing.T) {
	src := `pipeline "p" {}
variable "tok" {
  type      = string
  sensitive = true
}
provider "local" "l" { stop_timeout = var.tok }
locals { x = var.tok }
step "load" "main" {
  target   = "http://127.0.0.1:8080/"
  duration = "1s"
}
`
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := Build(p, Inputs{Vars: map[string]string{"tok": "1s"}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s := pl.secrets()
	expr := p.Locals[0].Expr
	in := hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: `Bad value "ZQ"`, Detail: "ZQ is wrong", Subject: expr.Range().Ptr(),
			EvalContext: &hcl.EvalContext{}},
		{Severity: hcl.DiagWarning, Summary: "Odd value", Detail: "ZQ is odd", Expression: expr},
		{Severity: hcl.DiagError, Summary: "Elsewhere", Detail: "kept", Subject: p.Steps[0].DeclRange.Ptr()},
	}
	out := s.withhold(in)
	if out[0].Summary != withheldSummary || out[0].Detail != Withheld || out[0].EvalContext != nil || out[0].Subject == nil {
		t.Errorf("quoted summary: %+v", out[0])
	}
	if out[1].Summary != "Odd value" || out[1].Detail != Withheld || out[1].Severity != hcl.DiagWarning {
		t.Errorf("by its expression: %+v", out[1])
	}
	if out[2] != in[2] {
		t.Errorf("a diagnostic of what uses no sensitive value changed: %+v", out[2])
	}
	if in[0].Detail != "ZQ is wrong" {
		t.Error("the input diagnostics were changed")
	}
	again := s.withhold(out)
	for i := range out {
		if again[i] != out[i] {
			t.Errorf("a second pass changed diagnostic %d", i)
		}
	}

	te := pl.NewTrialEval(pl.Trials[0], true)
	sp := &ServiceProvider{Block: p.Providers[0], Err: errors.New(`stop_timeout "ZQ" is bad`)}
	te.withholdProvider(sp)
	if strings.Contains(sp.Err.Error(), "ZQ") || !strings.Contains(sp.Err.Error(), "withheld") {
		t.Errorf("provider error: %v", sp.Err)
	}
}
