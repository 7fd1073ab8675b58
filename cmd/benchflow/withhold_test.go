package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// leakedLetters lists the letters of secret that out shows and the
// pipeline's text does not.
func leakedLetters(secret, text, out string) []string {
	var l []string
	for _, r := range secret {
		if !strings.ContainsRune(text, r) && strings.ContainsRune(out, r) {
			l = append(l, string(r))
		}
	}
	return l
}

func runWith(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BENCHFLOW_TMPDIR="+dir)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// TestSensitiveErrorsWithheld: sixteen locals decode one character of a
// sensitive token each, and formatdate takes the token as its format.
// validate, plan (text and JSON) and apply report each error at its line
// with its detail withheld, and none of the token's letters; the same
// pipeline with the variable not sensitive shows them (the control).
func TestSensitiveErrorsWithheld(t *testing.T) {
	const secret = "ZQXJWKVYGHP"
	var b strings.Builder
	b.WriteString("pipeline \"p\" {}\n\nvariable \"tok\" {\n  type      = string\n  sensitive = %v\n}\n\nlocals {\n")
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&b, "  j%d = jsondecode(substr(var.tok, %d, 1))\n", i, i)
	}
	b.WriteString("  f = formatdate(var.tok, \"2006-01-02T15:04:05Z\")\n}\n\nstep \"load\" \"main\" {\n  target   = \"http://127.0.0.1:1/\"\n  duration = \"1s\"\n}\n")
	for _, sensitive := range []bool{true, false} {
		dir := t.TempDir()
		text := fmt.Sprintf(b.String(), sensitive)
		file := filepath.Join(dir, "p.hcl")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"validate", file}, {"validate", "--json", file}, {"plan", file}, {"plan", "--json", file},
			{"apply", file, "--out", filepath.Join(dir, "results")},
		} {
			out, err := runWith(t, dir, append(args, "--var", "tok="+secret)...)
			if err == nil {
				t.Errorf("benchflow %v succeeded:\n%s", args, out)
				continue
			}
			leak := leakedLetters(secret, text+file, out)
			if !sensitive {
				if len(leak) < 5 || strings.Contains(out, "withheld") {
					t.Errorf("not sensitive: benchflow %v should show the detail:\n%s", args, out)
				}
				continue
			}
			if len(leak) > 0 {
				t.Errorf("benchflow %v shows %q of the sensitive value:\n%s", args, leak, out)
			}
			if n := strings.Count(out, "withheld because the value is sensitive"); n != 17 {
				t.Errorf("benchflow %v: %d withheld details, want 17 (16 locals and formatdate):\n%s", args, n, out)
			}
			for _, want := range []string{"p.hcl:9,8", `"jsondecode"`, "p.hcl:25,", `"formatdate"`} {
				if !strings.Contains(out, want) && !strings.Contains(args[1], "--json") {
					t.Errorf("benchflow %v: no %s in:\n%s", args, want, out)
				}
			}
		}
	}
}

// TestSensitiveRunErrorWithheld: a step whose duration is built from a
// sensitive value and a service's port is checked only when the trial
// runs (the port is known then); the failed trial's error, printed and in
// manifest.json, withholds its detail.
func TestSensitiveRunErrorWithheld(t *testing.T) {
	const secret = "ZQXJWK"
	dir := t.TempDir()
	text := `
pipeline "p" {}
variable "tok" {
  type      = string
  sensitive = true
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "10"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 1
  duration = "${substr(var.tok, 1, 2)}${service.web.port}s"
}
`
	file := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runWith(t, dir, "apply", file, "--out", filepath.Join(dir, "results"), "--var", "tok="+secret)
	if err == nil {
		t.Fatalf("apply succeeded:\n%s", out)
	}
	run, err := filepath.EvalSymlinks(filepath.Join(dir, "results", "latest"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := readManifest(t, run)
	if len(m.Trials) != 1 {
		t.Fatalf("want one trial: %+v", m.Trials)
	}
	// What reports the trial's error: its record and the lines printed.
	all := m.Trials[0].Error
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "load.main") || strings.Contains(line, "duration") {
			all += "\n" + line
		}
	}
	if !strings.Contains(all, "Invalid duration") || !strings.Contains(all, "withheld because the value is sensitive") {
		t.Errorf("the trial's error is not the withheld duration:\n%s", all)
	}
	if l := leakedLetters(secret, text+file, all); len(l) > 0 {
		t.Errorf("the run shows %q of the sensitive value:\n%s", l, all)
	}
}
