package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHCLEvaluationBudget: inputs that overflowed the parser's or the
// evaluator's stack (a million unary operators, long binary, conditional
// and index chains, a template that includes itself) or allocated without
// limit (join, setproduct, range, format widths, doubling locals, nested
// for expressions) fail validate with a located error, promptly, without
// a crash.
func TestHCLEvaluationBudget(t *testing.T) {
	rep := func(s string, n int) string { return strings.Repeat(s, n) }
	doubling := func(expr string) string {
		var b strings.Builder
		b.WriteString("locals {\n  l0 = \"0123456789abcdef\"\n")
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, "  l%d = %s\n", i, strings.ReplaceAll(expr, "P", fmt.Sprintf("local.l%d", i-1)))
		}
		b.WriteString("}\n")
		return b.String()
	}
	cases := []struct {
		name, body string
		files      map[string]string
		want       string
	}{
		{"bang", "locals {\n  x = " + rep("!", 1000000) + "true\n}\n", nil, "Expression too deep"},
		{"minus", "locals {\n  x = " + rep("-", 1000000) + "1\n}\n", nil, "Expression too deep"},
		{"mixed unary in parens", "locals {\n  x = (" + rep("!\n", 200000) + "true)\n}\n", nil, "Expression too deep"},
		{"binary chain", "locals {\n  x = 1" + rep(" + 1", 300000) + "\n}\n", nil, "Expression too deep"},
		{"and chain", "locals {\n  x = true" + rep(" && true", 300000) + "\n}\n", nil, "Expression too deep"},
		{"conditional chain", "locals {\n  x = " + rep("true ? 1 : ", 100000) + "2\n}\n", nil, "Expression too deep"},
		{"index chain", "locals {\n  i = 0\n  x = [[1]]" + rep("[local.i]", 100000) + "\n}\n", nil, "Expression too deep"},
		{"templatefile itself", "locals {\n  x = templatefile(\"t.tpl\", {})\n}\n", map[string]string{"t.tpl": "a${templatefile(\"t.tpl\", {})}"}, "nest more than 16 deep"},
		{"templatefile pair", "locals {\n  x = templatefile(\"a.tpl\", {})\n}\n", map[string]string{"a.tpl": "${templatefile(\"b.tpl\", {})}", "b.tpl": "${templatefile(\"a.tpl\", {})}"}, "nest more than 16 deep"},
		{"join doubling", doubling(`join("", [P, P])`), nil, "budget exceeded"},
		{"template doubling", doubling(`"${P}${P}"`), nil, "budget exceeded"},
		{"format doubling", doubling(`format("%s%s", P, P)`), nil, "budget exceeded"},
		{"replace growth", doubling(`replace(P, "a", P)`), nil, "budget exceeded"},
		{"setproduct", "locals {\n  r = range(1000)\n  x = setproduct(local.r, local.r, local.r, local.r)\n}\n", nil, "budget exceeded"},
		{"format width", "locals {\n  x = format(\"%9999999999d\", 1)\n}\n", nil, "budget exceeded"},
		{"nested for", "locals {\n  r = range(1000)\n  x = [for i in local.r : [for j in local.r : [for k in local.r : k]]]\n}\n", nil, "limit exceeded"},
		{"can swallows", "locals {\n  r = range(1000)\n  x = can([for i in local.r : [for j in local.r : [for k in local.r : k]]])\n}\n", nil, "limit exceeded"},
	}
	located := regexp.MustCompile(`(?m)^p\.hcl:\d+,\d+: \S|^\S+\.tpl:\d+,\d+: \S`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "pipeline \"p\" {}\n" + c.body
			if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			for n, b := range c.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, stderr, code := robustRun(t, dir, 60*time.Second, "validate", "p.hcl")
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%.2000s", code, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("the error does not say %q:\n%.2000s", c.want, stderr)
			}
			if !located.MatchString(stderr) {
				t.Errorf("no located error (FILE:LINE,COL: Summary):\n%.2000s", stderr)
			}
		})
	}
}
