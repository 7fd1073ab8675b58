package bundle

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

// hostile is what a pipeline, its variables or a machine may put in a
// name, a value or an environment field: HTML, a README section's end
// marker, a pipe, a backtick and line breaks.
const hostile = "<img src=x onerror=alert(1)><!-- /benchflow -->|`x`\nnext\r\nline"

// checkMarkdown fails when md holds raw HTML from hostile, or a table row
// whose cells differ in number from its table's header.
func checkMarkdown(t *testing.T, what, md string) {
	t.Helper()
	if text := outsideCode(md); strings.Contains(text, "<img") || strings.Contains(text, "<!--") {
		t.Errorf("%s carries raw HTML:\n%s", what, md)
	}
	cells := func(line string) int { return len(regexp.MustCompile(`(^|[^\\])(\\\\)*\|`).FindAllString(line, -1)) }
	want := -1
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		if want < 0 {
			want = cells(line)
			continue
		}
		if got := cells(line); got != want {
			t.Errorf("%s: a row of %d cells in a table of %d: %q", what, got-1, want-1, line)
		}
	}
	if strings.Contains(md, "\nnext") || strings.Contains(md, "\nline") {
		t.Errorf("%s: a value's line break broke a line:\n%s", what, md)
	}
}

// outsideCode is md without its code spans and indented code lines,
// where HTML is shown as text.
func outsideCode(md string) string {
	var b strings.Builder
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "    ") {
			continue
		}
		for line != "" {
			i := strings.IndexByte(line, '`')
			if i < 0 {
				b.WriteString(line)
				break
			}
			b.WriteString(line[:i])
			n := i
			for n < len(line) && line[n] == '`' {
				n++
			}
			fence := line[i:n]
			end := strings.Index(line[n:], fence)
			if end < 0 {
				b.WriteString(line[i:])
				break
			}
			line = line[n+end+len(fence):]
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestReproduceMDEscapes: REPRODUCE.md shows the pipeline's name,
// variables, file paths and environment fields as text: no HTML, no
// broken table row, no code span closed early.
func TestReproduceMDEscapes(t *testing.T) {
	run := loadRun("20261201T000000Z-aaaa", 1000, []any{0.5, 0.5, 0.5}, 1, hostile)
	m := run.Manifest
	m.Pipeline.Name = hostile
	m.Pipeline.File = hostile
	m.Pipeline.Variables = map[string]any{"note": hostile, "n": 1.0}
	m.Environment["cpu_model"] = hostile
	m.Environment["kernel_name"] = hostile
	md := reproduceMD("bundle", m, MachineLoad(run), []File{{Path: "sources/" + hostile, Bytes: 3}}, nil, nil)
	checkMarkdown(t, "REPRODUCE.md", md)
	if !strings.Contains(md, "| `` note `` |") && !strings.Contains(md, "| `note` |") {
		t.Errorf("REPRODUCE.md lost the variable's name:\n%s", md)
	}
}

// TestVerdictMarkdownEscapes: the verdict in Markdown (reproduction.md,
// which report --update copies into a README) escapes its cells,
// variables, environment fields, warnings and title.
func TestVerdictMarkdownEscapes(t *testing.T) {
	v := &Verdict{Bundle: hostile, BundleRun: "r1", Run: "r2", RunDir: hostile, Pipeline: hostile,
		Claims:      []ClaimVerdict{{Name: hostile, Bundle: "holds", Here: "holds"}},
		Cells:       []CellVerdict{{Cell: "label=" + hostile, Step: "main", Basis: hostile, Reproduced: "no", Explain: []string{hostile}}},
		Environment: []results.Difference{{Field: "cpu_model", A: hostile, B: "x"}},
		Variables:   []VariableDifference{{Name: "note", Bundle: hostile, Here: "y"}},
		Warnings:    []string{hostile},
	}
	var b bytes.Buffer
	if err := v.Write(&b, "markdown"); err != nil {
		t.Fatal(err)
	}
	checkMarkdown(t, "the verdict", b.String())
	_ = results.RunOK
}
