package starconf_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

// FuzzParseStar runs arbitrary bytes as a pipeline file and plans the
// result: neither may panic, and every error must be located in a file.
// The committed corpus is under testdata/fuzz/FuzzParseStar; the twins and
// error files are added as seeds.
func FuzzParseStar(f *testing.F) {
	for _, pattern := range []string{"testdata/twins/*.star", "testdata/error-files/*.star", "../../pipelines/*.star"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	tmpl := []byte("worker_processes ${workers};\n")
	f.Fuzz(func(t *testing.T, src []byte) {
		fsys := fstest.MapFS{
			"main.star":                 {Data: src},
			"lib.star":                  {Data: []byte("x = 1\ndef f(n):\n    return n\n")},
			"templates/nginx.conf.tmpl": {Data: tmpl},
			"link.star":                 {Data: []byte("/etc/passwd"), Mode: os.ModeSymlink},
		}
		p, diags := starconf.ParseContext(context.Background(), fsys, "main.star", "main.star",
			starconf.Options{MaxSteps: 50_000, MaxAlloc: 32 << 20, Print: io.Discard})
		checkLocated(t, diags)
		if diags.HasErrors() || p == nil {
			return
		}
		// Planning is linear in the number of trials: keep fuzzed
		// matrices small so every input finishes quickly.
		cells := 1
		for _, a := range p.Matrix.Axes {
			if tc, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
				cells *= max(1, len(tc.Exprs))
			} else {
				cells *= 10
			}
		}
		if cells > 64 || generatesFiles(p) {
			return
		}
		_, diags = plan.Build(p, plan.Inputs{Repetitions: 1})
		checkLocated(t, diags)
	})
}

// generatesFiles reports a random_bytes file: the planner generates its
// content (up to 1 GiB) for every trial, far too slow for fuzzing.
func generatesFiles(p *pipeline.Pipeline) bool {
	for _, sv := range p.Services {
		if b, ok := sv.Body.(*hclsyntax.Body); ok {
			for _, blk := range b.Blocks {
				if _, ok := blk.Body.Attributes["random_bytes"]; ok {
					return true
				}
			}
		}
	}
	return false
}

func checkLocated(t *testing.T, diags hcl.Diagnostics) {
	t.Helper()
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil && d.Subject.Filename == "" {
			t.Errorf("error without a file name: %s: %s", d.Summary, d.Detail)
		}
	}
}
