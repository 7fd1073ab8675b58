package plan_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	_ "github.com/benchflow/benchflow/providers/local"
	_ "github.com/benchflow/benchflow/providers/nomad"
)

// TestErrorFiles parses and plans every file in testdata/error-files and
// expects exactly the errors announced by "# ERROR: <summary>" comments, on
// the lines that carry them.
func TestErrorFiles(t *testing.T) {
	dir := filepath.Join("testdata", "error-files")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 20 {
		t.Fatalf("only %d error files; want at least 20 kinds of mistake", len(entries))
	}
	for _, e := range entries {
		name := e.Name()
		t.Run(strings.TrimSuffix(name, ".hcl"), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			sc := bufio.NewScanner(bytes.NewReader(src))
			sc.Buffer(nil, 1<<20) // some files test very long lines
			for line := 1; sc.Scan(); line++ {
				if _, msg, ok := strings.Cut(sc.Text(), "# ERROR: "); ok {
					want = append(want, fmt.Sprintf("%d: %s", line, strings.TrimSpace(msg)))
				}
			}
			if len(want) == 0 {
				t.Fatal("file announces no # ERROR")
			}
			diags := parseAndPlan(t, dir, name)
			var got []string
			for _, d := range diags {
				if d.Severity != hcl.DiagError {
					continue
				}
				line := 0
				if d.Subject != nil {
					line = d.Subject.Start.Line
					if d.Subject.Filename != name {
						t.Errorf("diagnostic %q names file %q, want %q", d.Summary, d.Subject.Filename, name)
					}
				}
				if d.Detail == "" {
					t.Errorf("diagnostic %q has no detail", d.Summary)
				}
				got = append(got, fmt.Sprintf("%d: %s", line, d.Summary))
			}
			sort.Strings(got)
			sort.Strings(want)
			got = dedupe(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("errors differ (-want +got):\n%s", diff)
			}
		})
	}
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func parseAndPlan(t *testing.T, dir, name string) hcl.Diagnostics {
	t.Helper()
	p, diags := hclconf.Parse(os.DirFS(dir), name, name)
	if diags.HasErrors() || p == nil {
		return diags
	}
	_, d := plan.Build(p, plan.Inputs{})
	return append(diags, d...)
}
