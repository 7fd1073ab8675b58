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
