package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

// A symbolic link may lead only inside the pipeline's folder, whichever
// way a pipeline reads the file: file(), templatefile(), fileexists(), a
// file block's source, body_file, script (HCL) and load() (Starlark).
func TestSymlinksStayInsideThePipelineFolder(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "shadow")
	if err := os.WriteFile(secret, []byte("root:SECRETHASH:19000::::::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "lib.star"), []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(name, target string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("real.txt", "inside\n")
	write("real.star", "y = 2\n")
	link("inside.txt", "real.txt")
	link("inside.star", "real.star")
	link("out.txt", secret)
	link("out.star", filepath.Join(outside, "lib.star"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("sub/up", outside) // a linked folder leading out

	plan1 := func(t *testing.T, src string) hcl.Diagnostics {
		t.Helper()
		write("p.hcl", src)
		p, diags := hclconf.ParseFile(filepath.Join(dir, "p.hcl"))
		if diags.HasErrors() {
			return diags
		}
		pl, d := plan.Build(p, plan.Inputs{})
		if !d.HasErrors() {
			if b, err := jsonOf(pl); err == nil && strings.Contains(b, "SECRETHASH") {
				t.Errorf("plan --json shows the outside file:\n%s", b)
			}
		}
		return append(diags, d...)
	}
	head := "pipeline \"p\" {}\nservice \"web\" {\n  command = [\"x\"]\n"
	for name, body := range map[string]string{
		"file":         `file "a" { content = file("out.txt") }`,
		"templatefile": `file "a" { content = templatefile("out.txt", {}) }`,
		"fileexists":   `file "a" { content = fileexists("out.txt") ? "yes" : "no" }`,
		"source":       `file "a" { source = "out.txt" }`,
		"folder":       `file "a" { source = "sub/up/shadow" }`,
	} {
		t.Run(name, func(t *testing.T) {
			diags := plan1(t, head+"  "+body+"\n}\n")
			if !diags.HasErrors() || !strings.Contains(allDiags(diags), "leaves the pipeline's folder") {
				t.Errorf("want an error saying the link leaves the folder, got %v", diags)
			}
			for _, d := range diags {
				if d.Subject == nil || d.Subject.Filename == "" {
					t.Errorf("unlocated: %s", d.Error())
				}
			}
		})
	}
	for name, body := range map[string]string{
		"body_file": `body_file = "out.txt"`,
		"script":    `script = "out.star"`,
	} {
		t.Run(name, func(t *testing.T) {
			diags := plan1(t, "pipeline \"p\" {}\nstep \"load\" \"l\" {\n  target = \"http://127.0.0.1:1/\"\n  requests = 1\n  "+body+"\n}\n")
			if !diags.HasErrors() || !strings.Contains(allDiags(diags), "leaves the pipeline's folder") {
				t.Errorf("want an error saying the link leaves the folder, got %v", diags)
			}
		})
	}
	t.Run("inside", func(t *testing.T) {
		if diags := plan1(t, head+"  file \"a\" { content = file(\"inside.txt\") }\n  file \"b\" { source = \"inside.txt\" }\n}\n"); diags.HasErrors() {
			t.Errorf("a link inside the folder: %v", diags)
		}
	})
	t.Run("starlark load", func(t *testing.T) {
		write("in.star", "load(\"inside.star\", \"y\")\npipeline(\"p\")\n")
		if _, diags := starconf.ParseFile(filepath.Join(dir, "in.star")); diags.HasErrors() {
			t.Errorf("load() of a link inside the folder: %v", diags)
		}
		write("bad.star", "load(\"out.star\", \"x\")\npipeline(\"p\")\n")
		_, diags := starconf.ParseFile(filepath.Join(dir, "bad.star"))
		if !diags.HasErrors() || diags[0].Summary != "Forbidden load() path" || !strings.Contains(allDiags(diags), "leaves the pipeline's folder") {
			t.Errorf("load() of a link leading out: %v", diags)
		}
	})
}

func jsonOf(pl *plan.Plan) (string, error) {
	var b strings.Builder
	err := pl.WriteJSON(&b)
	return b.String(), err
}

func allDiags(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(d.Error() + "\n")
	}
	return b.String()
}
