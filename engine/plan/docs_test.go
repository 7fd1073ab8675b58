package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	_ "github.com/benchflow/benchflow/providers/standard"
)

// TestDocExamplesValidate checks that every ```hcl block in docs/ that
// declares a pipeline is valid, so the docs never show a broken example.
func TestDocExamplesValidate(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	more, _ := filepath.Glob("../../docs/*/*.md")
	docs = append(append(docs, more...), "../../README.md")
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := strings.Split(string(b), "```hcl\n")
		for i, blk := range blocks[1:] {
			code, _, _ := strings.Cut(blk, "```")
			if !strings.Contains(code, "pipeline \"") {
				continue
			}
			n++
			name := filepath.Base(doc) + "#" + string(rune('0'+i%10))
			t.Run(name, func(t *testing.T) {
				fsys := fstest.MapFS{
					"p.hcl":                     {Data: []byte(code)},
					"nginx.conf.tmpl":           {Data: []byte("listen ${self.port.http};\n")},
					"templates/nginx.conf.tmpl": {Data: []byte("listen ${self.port.http}; ${access_log} ${workers}\n")},
					"static/logo.jpg":           {Data: []byte{0xff, 0xd8}},
					"requests.star":             {Data: []byte("def request():\n    return {\"path\": \"/\"}\n")},
				}
				p, diags := hclconf.Parse(fsys, "p.hcl", "p.hcl")
				if !diags.HasErrors() {
					_, d := plan.Build(p, plan.Inputs{})
					diags = append(diags, d...)
				}
				if diags.HasErrors() {
					t.Errorf("example in %s does not validate: %s\n%s", doc, diags.Error(), code)
				}
			})
		}
	}
	if n < 10 {
		t.Errorf("only %d pipeline examples found in the docs", n)
	}
}

// TestShippedPipelinesValidate plans every pipeline under pipelines/ and
// examples/ as users run them (from disk, with their templates).
func TestShippedPipelinesValidate(t *testing.T) {
	files, _ := filepath.Glob("../../pipelines/*.hcl")
	ex, _ := filepath.Glob("../../examples/*/*.hcl")
	files = append(files, ex...)
	if len(files) < 8 {
		t.Fatalf("found only %d pipelines", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			p, diags := hclconf.ParseFile(f)
			if !diags.HasErrors() {
				var d hcl.Diagnostics
				_, d = plan.Build(p, plan.Inputs{})
				diags = append(diags, d...)
			}
			if diags.HasErrors() {
				t.Errorf("%s does not validate: %s", f, diags.Error())
			}
		})
	}
}
