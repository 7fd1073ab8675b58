package plan_test

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	_ "github.com/benchflow/benchflow/providers/standard"
)

// TestShippedPipelinesValidate plans every pipeline under pipelines/ and
// examples/ as users run them (from disk, with their templates).
func TestShippedPipelinesValidate(t *testing.T) {
	files, _ := filepath.Glob("../../pipelines/*.hcl")
	ex, _ := filepath.Glob("../../examples/*/*.hcl")
	files = append(files, ex...)
	if len(files) < 8 {
		t.Fatalf("found only %d pipelines", len(files))
	}
	// Examples whose hosts come from variables without defaults, given
	// here as a reader would (files that exist stand for the key and
	// known_hosts: validation reads neither).
	vars := map[string]map[string]string{
		"two-hosts/study.hcl": {"server": "10.0.0.2", "identity": "/dev/null", "known_hosts": "/dev/null"},
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			p, diags := hclconf.ParseFile(f)
			if !diags.HasErrors() {
				var d hcl.Diagnostics
				_, d = plan.Build(p, plan.Inputs{Vars: vars[name]})
				diags = append(diags, d...)
			}
			if diags.HasErrors() {
				t.Errorf("%s does not validate: %s", f, diags.Error())
			}
		})
	}
}
