package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// injectStudy has a matrix axis whose values are what a spreadsheet
// would run as formulas, a negative number, HTML and a value with a pipe
// and a line break; a variable holds HTML too.
const injectStudy = `
pipeline "inject" {
  repetitions = 1
}
variable "note" {
  default = "<img src=x onerror=alert(1)>|x"
}
matrix {
  label = ["=1+2", "-2+3", "@SUM(A1)", "+x", "\tx", "\rx", "-3.5", "plain", "<img src=x onerror=alert(1)>", "a|b\nc"]
}
provider "local" "host" {}
service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health {
    http    = "/"
    timeout = "10s"
  }
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 1
  threads     = 1
  requests    = 20
}
`

// neutralised maps each matrix value to its CSV cell without --raw.
var neutralised = map[string]string{
	"=1+2": "'=1+2", "-2+3": "'-2+3", "@SUM(A1)": "'@SUM(A1)", "+x": "'+x", "\tx": "'\tx", "\rx": "'\rx",
	"-3.5": "-3.5", "plain": "plain", "<img src=x onerror=alert(1)>": "<img src=x onerror=alert(1)>", "a|b\nc": "a|b\nc",
}

// stdoutOf runs the binary in dir and returns its standard output; it
// fails the test on a non-zero exit.
func stdoutOf(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("benchflow %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// column reads a CSV document and returns the values of its column
// name.
func column(t *testing.T, doc []byte, name string) []string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(doc)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("the CSV does not parse: %v\n%s", err, doc)
	}
	col := indexOf(recs[0], name)
	if col < 0 {
		t.Fatalf("no column %s in %v", name, recs[0])
	}
	var out []string
	for _, r := range recs[1:] {
		out = append(out, r[col])
	}
	return out
}

// TestOutputsForOtherPrograms runs a study whose matrix values and
// variable are hostile, with the real binary: export and report --format
// csv neutralise the cells a spreadsheet would run as formulas (numbers
// stay numbers) and --raw keeps them as they are; every Markdown output
// (report and compare --format markdown, a bundle's report.md and
// REPRODUCE.md) shows HTML as text and keeps each value in its table
// cell; export --where refuses NaN and infinities as it refuses 1e999.
func TestOutputsForOtherPrograms(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(injectStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runBin(t, dir, "apply", "p.hcl", "--out", "res"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	run := filepath.Join("res", "latest")

	for _, c := range []struct {
		name string
		args []string
	}{
		{"export", []string{"export", run}},
		{"report --format csv", []string{"report", run, "--format", "csv"}},
	} {
		got := column(t, stdoutOf(t, dir, c.args...), "param_label")
		raw := column(t, stdoutOf(t, dir, append(c.args, "--raw")...), "param_label")
		if len(got) != len(neutralised) || len(raw) != len(got) {
			t.Fatalf("%s: %d rows, --raw %d, want %d", c.name, len(got), len(raw), len(neutralised))
		}
		for i, v := range raw {
			want, ok := neutralised[v]
			if !ok {
				t.Errorf("%s --raw: param_label %q is not a value of the matrix", c.name, v)
				continue
			}
			if got[i] != want {
				t.Errorf("%s: param_label %q written %q, want %q", c.name, v, got[i], want)
			}
		}
	}

	if out, err := runBin(t, dir, "publish", run, "bundle"); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	markdown := map[string]string{
		"report --format markdown":  string(stdoutOf(t, dir, "report", run, "--format", "markdown")),
		"compare --format markdown": string(stdoutOf(t, dir, "compare", run, run, "--format", "markdown")),
	}
	for _, f := range []string{"report.md", "REPRODUCE.md"} {
		b, err := os.ReadFile(filepath.Join(dir, "bundle", f))
		if err != nil {
			t.Fatal(err)
		}
		markdown["bundle/"+f] = string(b)
	}
	cells := regexp.MustCompile(`(^|[^\\])(\\\\)*\|`)
	for what, md := range markdown {
		if text := withoutCode(md); strings.Contains(text, "<img") {
			t.Errorf("%s carries raw HTML:\n%s", what, md)
		}
		want := -1
		rows := 0
		for _, line := range strings.Split(md, "\n") {
			if !strings.HasPrefix(line, "|") {
				want = -1
				continue
			}
			n := len(cells.FindAllString(line, -1))
			if want < 0 {
				want = n
				continue
			}
			rows++
			if n != want {
				t.Errorf("%s: a row of %d cells in a table of %d: %q", what, n-1, want-1, line)
			}
		}
		if rows == 0 {
			t.Errorf("%s has no table:\n%s", what, md)
		}
		if strings.Contains(md, "\nc |") {
			t.Errorf("%s: the line break of a matrix value broke a row:\n%s", what, md)
		}
	}

	for _, v := range []string{"NaN", "nan", "inf", "+Inf", "-Infinity", "1e999"} {
		w := "rps>" + v
		out, err := runBin(t, dir, "export", run, "--where", w)
		if exitCode(err) != 1 || !strings.Contains(out, `"`+v+`" is not a finite number`) {
			t.Errorf("export --where %s: exit %d, want 1 and a refusal:\n%s", w, exitCode(err), out)
		}
	}
}

// withoutCode is md without its code spans and indented code lines, where
// HTML is shown as text.
func withoutCode(md string) string {
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
			end := strings.Index(line[n:], line[i:n])
			if end < 0 {
				b.WriteString(line[i:])
				break
			}
			line = line[n+end+n-i:]
		}
		b.WriteString("\n")
	}
	return b.String()
}
