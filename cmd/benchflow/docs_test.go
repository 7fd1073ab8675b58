package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A code block of the documentation, with the marker comment on the line
// before its fence (docs/extending.md, "Code blocks in the docs").
type docBlock struct {
	file   string // relative to the repository root
	line   int    // of the opening fence, 1-based
	lang   string
	body   string
	marker string // "fragment" or "files"
	arg    string // the marker's text after the colon
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d (```%s)", b.file, b.line, b.lang) }

var markerRE = regexp.MustCompile(`^<!--\s*(fragment|files)\s*(?::\s*(.*?))?\s*-->$`)

// docBlocks returns the fenced blocks of README.md and docs/**/*.md.
// Blocks without a language are output or listings and not returned.
func docBlocks(t *testing.T, root string) []docBlock {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		for i := 0; i < len(lines); i++ {
			trim := strings.TrimLeft(lines[i], " ")
			if !strings.HasPrefix(trim, "```") {
				continue
			}
			indent := len(lines[i]) - len(trim)
			b := docBlock{file: f, line: i + 1, lang: strings.TrimSpace(strings.TrimPrefix(trim, "```"))}
			for j := i - 1; j >= 0; j-- {
				prev := strings.TrimSpace(lines[j])
				if prev == "" {
					continue
				}
				if m := markerRE.FindStringSubmatch(prev); m != nil {
					b.marker, b.arg = m[1], m[2]
				}
				break
			}
			var body []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				l := lines[i]
				if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
					l = l[indent:]
				}
				body = append(body, l)
			}
			b.body = strings.Join(body, "\n") + "\n"
			if b.lang != "" {
				blocks = append(blocks, b)
			}
		}
	}
	return blocks
}

// cheapCommands are the benchflow subcommands a docs block may run in the
// test: quick, and touching nothing outside the folder.
var cheapCommands = map[string]bool{"validate": true, "plan": true, "render": true, "report": true, "export": true, "compare": true}

// cheapShell reports whether every command of a shell block is a cheap
// benchflow command (or --help), possibly piped into a text filter; it
// returns the first command that is not.
func cheapShell(body string) (bool, string) {
	filters := map[string]bool{"head": true, "tail": true, "grep": true, "wc": true, "sort": true}
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(body, "\\\n", " ")))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		for n, part := range strings.Split(line, "|") {
			f := strings.Fields(part)
			if len(f) == 0 {
				return false, line
			}
			if n > 0 {
				if !filters[f[0]] {
					return false, line
				}
				continue
			}
			if f[0] != "benchflow" && f[0] != "./bin/benchflow" {
				return false, line
			}
			help := false
			for _, a := range f[1:] {
				help = help || a == "--help" || a == "-h"
			}
			if !help && (len(f) < 2 || !cheapCommands[f[1]]) {
				return false, line
			}
		}
	}
	return true, ""
}

// TestDocsBlocks runs every code block of README.md and docs/ as printed,
// or requires it to be marked <!-- fragment: why --> on the line before its
// fence: hcl and starlark blocks through `benchflow validate` (with the
// files of a <!-- files: DIR --> marker beside them), sh blocks of cheap
// benchflow commands through a shell in a folder holding ./bin/benchflow,
// the repository's pipelines/, examples/ and docs/, and results/latest (a
// short quickstart run), and sql blocks through DuckDB on that run.
func TestDocsBlocks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := docBlocks(t, root)
	if len(blocks) < 50 {
		t.Fatalf("found %d code blocks in README.md and docs/: the parser is broken", len(blocks))
	}

	// The folder sh and sql blocks run in.
	work := t.TempDir()
	for _, d := range []string{"pipelines", "examples", "docs"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(work, "bin"), 0o755)
	if err := os.Symlink(bin, filepath.Join(work, "bin", "benchflow")); err != nil {
		t.Fatal(err)
	}
	var fixture bool
	results := func() {
		if fixture {
			return
		}
		fixture = true
		cmd := exec.Command(bin, "apply", "pipelines/quickstart.hcl", "--var", "duration=1s", "--repetitions", "1")
		cmd.Dir = work
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apply (the fixture run): %v\n%s", err, b)
		}
	}

	ran, marked := 0, 0
	for _, b := range blocks {
		if b.marker == "fragment" {
			marked++
			continue
		}
		switch b.lang {
		case "hcl", "starlark":
			dir := t.TempDir()
			if b.marker == "files" {
				if out, err := exec.Command("cp", "-r", filepath.Join(root, b.arg)+"/.", dir).CombinedOutput(); err != nil {
					t.Fatalf("%s: <!-- files: %s -->: %v\n%s", b, b.arg, err, out)
				}
			}
			name := filepath.Join(dir, "block.hcl")
			if b.lang == "starlark" {
				name = filepath.Join(dir, "block.star")
			}
			if err := os.WriteFile(name, []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "validate", name).CombinedOutput(); err != nil {
				t.Errorf("%s does not validate as printed (fix it, or mark it <!-- fragment: why --> on the line before the fence):\n%s", b, out)
			}
			ran++
		case "sh":
			if ok, cmd := cheapShell(b.body); !ok {
				t.Errorf("%s runs %q, which the test does not run: mark the block <!-- fragment: why --> on the line before the fence", b, cmd)
				continue
			}
			results()
			cmd := exec.Command("bash", "-eo", "pipefail", "-c", b.body)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "PATH="+filepath.Join(work, "bin")+":"+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s fails as printed: %v (fix it, or mark it <!-- fragment: why -->):\n%s", b, err, out)
			}
			ran++
		case "sql":
			results()
			if err := runSQL(work, b.body); err != nil {
				t.Errorf("%s fails in DuckDB on a quickstart run: %v (fix it, or mark it <!-- fragment: why -->)", b, err)
			}
			ran++
		default:
			t.Errorf("%s: a %s block the test cannot run: mark it <!-- fragment: why --> on the line before the fence", b, b.lang)
		}
	}
	t.Logf("%d code blocks: %d run, %d marked as fragments", len(blocks), ran, marked)
}

// runSQL runs a block's statements in DuckDB with work as the current
// folder, so that 'results/latest/…' paths resolve as printed.
func runSQL(work, body string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(work); err != nil {
		return err
	}
	defer os.Chdir(wd)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.Query(body)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// TestDocsBlockParser: the parser finds the marker, the language and an
// indented block's body; cheapShell refuses what the test must not run.
func TestDocsBlockParser(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "docs"), 0o755)
	md := "# x\n\n<!-- fragment: needs pandas -->\n```python\nimport pandas\n```\n\n1. a list\n\n   ```hcl\n   pipeline \"p\" {}\n   ```\n\n```\noutput\n```\n"
	os.WriteFile(filepath.Join(root, "README.md"), []byte(md), 0o644)
	got := docBlocks(t, root)
	if len(got) != 2 || got[0].marker != "fragment" || got[0].arg != "needs pandas" || got[1].lang != "hcl" || got[1].body != "pipeline \"p\" {}\n" || got[1].marker != "" {
		t.Errorf("blocks %+v", got)
	}
	for body, want := range map[string]bool{
		"./bin/benchflow validate pipelines/quickstart.hcl   # check it\n": true,
		"benchflow plan --help | head -3\n":                                true,
		"benchflow apply pipelines/quickstart.hcl\n":                       false,
		"make build\n": false,
		"benchflow report results/latest | jq .\n": false,
	} {
		if ok, _ := cheapShell(body); ok != want {
			t.Errorf("cheapShell(%q) = %v, want %v", body, ok, want)
		}
	}
	var buf bytes.Buffer
	fmt.Fprint(&buf, got[0])
	if !strings.Contains(buf.String(), "README.md:4") {
		t.Errorf("block position %q, want README.md:4", buf.String())
	}
}
