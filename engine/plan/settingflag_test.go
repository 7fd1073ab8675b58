package plan_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
)

// TestVarOfASettingNamesItsFlag: --var repetitions=5 is refused with the
// flag that sets repetitions.
func TestVarOfASettingNamesItsFlag(t *testing.T) {
	src := "pipeline \"p\" {}\nvariable \"duration\" { default = \"1s\" }\nstep \"load\" \"l\" {\n  target   = \"http://127.0.0.1:1/\"\n  duration = var.duration\n}\n"
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{Vars: map[string]string{"repetitions": "5"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "use --repetitions 5") {
		t.Errorf("--var repetitions=5: %v; want an error that says: use --repetitions 5", diags)
	}
}

// TestTemplateTypoEndsOnce: a template's misspelt variable ends its
// sentence with the suggestion's question mark, not "?.".
func TestTemplateTypoEndsOnce(t *testing.T) {
	src := `pipeline "p" {}
service "s" {
  command = ["true"]
  file "c.conf" {
    template = file("c.tmpl")
    vars     = { workers = 1 }
  }
}
`
	fsys := fstest.MapFS{"p.hcl": {Data: []byte(src)}, "c.tmpl": {Data: []byte("worker_processes ${worker};\n")}}
	p, diags := hclconf.Parse(fsys, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{})
	msg := diags.Error()
	if !strings.Contains(msg, `Did you mean "workers"?`) || strings.Contains(msg, "?.") {
		t.Errorf("diagnostics %q: want the suggestion, ending in a single question mark", msg)
	}
}

// TestTrialDiagnosticsOnce: a provider typo that every trial hits is one
// error naming how many trials it applies to, not one per trial.
func TestTrialDiagnosticsOnce(t *testing.T) {
	src := `pipeline "p" { repetitions = 2 }
matrix {
  a = [1, 2]
  b = ["x", "y"]
}
provider "local" "host" {}
service "web" {
  provider = "hots"
  command  = ["true"]
}
`
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{})
	n := 0
	for _, d := range diags {
		if d.Summary == "Reference to undeclared provider" {
			n++
			if !strings.Contains(d.Detail, "in 8 trials (c01-r1, c02-r1, c03-r1, …, c04-r2)") {
				t.Errorf("detail %q: want it to name the 8 trials", d.Detail)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d undeclared-provider errors, want 1: %v", n, diags)
	}
}

// TestBadVarNamesTheFlag: a --var value that fails where the variable is
// used says it came from --var.
func TestBadVarNamesTheFlag(t *testing.T) {
	src := "pipeline \"p\" {}\nvariable \"duration\" { default = \"1s\" }\nstep \"load\" \"l\" {\n  target   = \"http://127.0.0.1:1/\"\n  duration = var.duration\n}\n"
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{Vars: map[string]string{"duration": "abc"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "The value comes from --var duration=abc.") {
		t.Errorf("--var duration=abc: %v; want the error to name --var duration=abc", diags)
	}
}
