package hclconf_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	_ "github.com/benchflow/benchflow/providers/local"
)

// FuzzParsePipeline feeds arbitrary bytes through the front end and the
// planner: they may report errors but must never panic or hang. The seed
// corpus is in testdata/fuzz/FuzzParsePipeline plus the shipped pipelines.
func FuzzParsePipeline(f *testing.F) {
	for _, glob := range []string{"../../pipelines/*.hcl", "../plan/testdata/error-files/*.hcl", "../../examples/*/*.hcl"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fsys := fstest.MapFS{"p.hcl": {Data: src}, "t.tmpl": {Data: []byte("x ${a}")}}
		p, diags := hclconf.Parse(fsys, "p.hcl", "p.hcl")
		if p == nil && !diags.HasErrors() {
			t.Fatal("no pipeline and no error")
		}
		if diags.HasErrors() {
			return
		}
		pl, _ := plan.Build(p, plan.Inputs{})
		if pl == nil {
			t.Fatal("Build returned nil")
		}
		if len(pl.Trials) > 0 {
			_ = pl.JSON()
		}
	})
}
