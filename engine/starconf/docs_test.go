package starconf_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
	"github.com/benchflow/benchflow/engine/starconf/script"
)

// TestDocsExamples runs every ```starlark block of docs/starlark.md: request
// scripts (blocks starting with "# request script") build their pool,
// pipelines parse and plan without errors.
func TestDocsExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/starlark.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(doc), "```starlark\n")[1:] {
		end := strings.Index(part, "```")
		if end < 0 {
			t.Fatal("unterminated ```starlark block")
		}
		blocks = append(blocks, part[:end])
	}
	if len(blocks) < 4 {
		t.Fatalf("found %d starlark blocks, want at least 4", len(blocks))
	}
	for i, src := range blocks {
		if strings.HasPrefix(src, "# request script") {
			s, err := script.LoadSource(context.Background(), "requests.star", []byte(src), "http://127.0.0.1:8080", script.Options{Print: io.Discard})
			if err != nil {
				t.Errorf("block %d: %v", i, err)
				continue
			}
			if pool, err := s.Pool(); err != nil || len(pool) == 0 {
				t.Errorf("block %d: pool %d, %v", i, len(pool), err)
			}
			continue
		}
		p, diags := starconf.ParseSource(fstest.MapFS{}, "doc.star", []byte(src))
		if diags.HasErrors() {
			t.Errorf("block %d:\n%s\n%s", i, src, diags.Error())
			continue
		}
		pl, diags := plan.Build(p, plan.Inputs{})
		if diags.HasErrors() {
			t.Errorf("block %d does not plan: %s", i, diags.Error())
			continue
		}
		if p.Name == "size-sweep" && (len(pl.Trials) != 6 || len(pl.Steps) != 7) {
			t.Errorf("size-sweep: %d trials and %d steps, the doc says 6 and 7", len(pl.Trials), len(pl.Steps))
		}
	}
}
