package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSensitiveValuesNeverLeak runs validate, plan, plan --json and apply
// on a pipeline whose sensitive variable reaches a service's environment,
// a rendered file, a request header and a URL, with a check step that
// fails quoting that URL. The value must appear in no output and no file
// of the run (results folder, service folder), except the rendered file
// that needs it, which must be 0600 in a 0700 folder.
func TestSensitiveValuesNeverLeak(t *testing.T) {
	dir := t.TempDir()
	secret := fmt.Sprintf("Zq9tok%08x", rand.Uint32())
	tmp := filepath.Join(dir, "tmp")
	snap := filepath.Join(dir, "snapshot")
	for _, d := range []string{tmp, snap} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := `
pipeline "secrets" {}
variable "token" {
  type      = string
  sensitive = true
}
variable "snapshot" { type = string }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "10"]
  env     = { TOKEN = var.token }
  port "http" {}
  health { http = "/" }
  file "secret.conf" {
    content = "token = ${var.token}\n"
  }
  file "public.conf" {
    content = "nothing to hide\n"
  }
}
step "check" "token" {
  url           = "${service.web.url}/api?token=${var.token}"
  headers       = { "X-Token" = var.token }
  body_contains = "never there"
}
step "exec" "snapshot" {
  command = ["sh", "-c", "cp -a \"$BENCHFLOW_TMPDIR\"/benchflow-* \"${var.snapshot}/\""]
}
step "load" "main" {
  target   = "${service.web.url}/?token=${var.token}"
  requests = 10
  headers  = { Authorization = "Bearer ${var.token}" }
}
`
	file := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	vars := []string{"--var", "token=" + secret, "--var", "snapshot=" + snap}
	var printed bytes.Buffer
	runCmd := func(wantOK bool, args ...string) {
		cmd := exec.Command(bin, append(args, vars...)...)
		cmd.Env = append(os.Environ(), "BENCHFLOW_TMPDIR="+tmp)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if (err == nil) != wantOK {
			t.Fatalf("benchflow %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, o.String(), e.String())
		}
		for name, b := range map[string][]byte{"stdout": o.Bytes(), "stderr": e.Bytes()} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("benchflow %v prints the sensitive value on %s:\n%s", args, name, b)
			}
		}
		printed.Write(o.Bytes())
		printed.Write(e.Bytes())
	}
	runCmd(true, "validate", file)
	runCmd(true, "plan", file)
	runCmd(true, "plan", "--json", file)
	runCmd(true, "render", file)
	runCmd(false, "apply", file, "--out", out) // the check step fails
	if !strings.Contains(printed.String(), "(sensitive)") {
		t.Errorf("no output shows (sensitive) where the value was:\n%s", printed.String())
	}

	run, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, run)
	if len(m.Trials) != 1 || m.Trials[0].Status != "failed" {
		t.Fatalf("want one failed trial, got %+v", m.Trials)
	}
	// Every file of the run and of the service folder.
	needed := 0
	for _, root := range []string{out, snap} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !bytes.Contains(b, []byte(secret)) {
				return nil
			}
			if root == snap && d.Name() == "secret.conf" {
				needed++
				fi, _ := os.Stat(p)
				di, _ := os.Stat(filepath.Dir(p))
				if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
					t.Errorf("%s holds the value with mode %v in a folder of mode %v, want 0600 in 0700", p, fi.Mode().Perm(), di.Mode().Perm())
				}
				return nil
			}
			t.Errorf("%s contains the sensitive value", p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if needed != 1 {
		t.Errorf("the service folder snapshot has %d secret.conf holding the value, want 1 (did the exec step run?)", needed)
	}
	// The trial keeps its rendered files in its logs, redacted like every
	// log, and its owner's only.
	kept := filepath.Join(run, "logs", m.Trials[0].TrialID, "files", "web", "secret.conf")
	if b, err := os.ReadFile(kept); err != nil || string(b) != "token = (sensitive)\n" {
		t.Errorf("%s = %q (%v), want the rendered file redacted", kept, b, err)
	}
	if fi, err := os.Stat(kept); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", kept, fi.Mode().Perm())
	}
	// The results are the owner's only.
	if fi, _ := os.Stat(run); fi.Mode().Perm() != 0o700 {
		t.Errorf("run folder mode %v, want 0700", fi.Mode().Perm())
	}
	for _, name := range []string{"manifest.json", "trials.parquet", "pipeline.hcl"} {
		if fi, err := os.Stat(filepath.Join(run, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", name, fi.Mode().Perm(), err)
		}
	}
	// The error column says where the value was.
	db, _ := sql.Open("duckdb", "")
	defer db.Close()
	var msg string
	q := fmt.Sprintf(`SELECT string_agg(error, ' | ') FROM read_parquet('%s')`, filepath.Join(run, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(msg, secret) || !strings.Contains(msg, "token=(sensitive)") {
		t.Errorf("trials.parquet error column: %q", msg)
	}
}

// TestSensitiveDerivedValuesNeverLeak: what a pipeline computes from a
// sensitive value — upper(), lower(), strrev(), substr(), the characters
// split apart and joined — is as secret as the value. None of its forms
// may appear in the output of validate, plan, plan --json and apply, in
// the run's files or in the service folder; every file of the run and of
// the service folder is private; a malformed sensitive --var is not
// echoed. The Starlark front end gets the same.
func TestSensitiveDerivedValuesNeverLeak(t *testing.T) {
	dir := t.TempDir()
	secret := fmt.Sprintf("Zq9Tok%08xMw", rand.Uint32())
	rev := []rune(secret)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	forms := map[string]string{
		"value": secret, "upper": strings.ToUpper(secret), "lower": strings.ToLower(secret),
		"reversed": string(rev), "substring": secret[2:10],
		"split": strings.Join(strings.Split(secret, ""), " "),
	}
	tmp := filepath.Join(dir, "tmp")
	snap := filepath.Join(dir, "snapshot")
	for _, d := range []string{tmp, snap} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := `
pipeline "derived" {}
variable "token" {
  type      = string
  sensitive = true
}
variable "pin" {
  type      = number
  sensitive = true
  default   = 4242
}
variable "snapshot" { type = string }
locals {
  shout = upper(var.token)
  chars = split("", var.token)
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "10"]
  port "http" {}
  health { http = "/" }
  file "derived.conf" {
    content = lower(var.token)
  }
}
step "exec" "echo" {
  command = concat(["echo", local.shout, strrev(var.token), substr(var.token, 2, 8)], local.chars)
}
step "exec" "snapshot" {
  command = ["sh", "-c", "cp -a \"$BENCHFLOW_TMPDIR\"/benchflow-* \"${var.snapshot}/\""]
}
step "check" "token" {
  url           = "${service.web.url}/api?k=${strrev(var.token)}"
  body_contains = "never there"
}
`
	file := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	star := filepath.Join(dir, "p.star")
	starSrc := `pipeline("derived")
variable("token", type = "string", sensitive = True)
step.exec("echo", command = ["echo", fn.upper(var.token), fn.strrev(var.token), fn.join(" ", fn.split("", var.token))])
`
	if err := os.WriteFile(star, []byte(starSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	vars := []string{"--var", "token=" + secret, "--var", "snapshot=" + snap}
	leaks := func(what string, b []byte) {
		t.Helper()
		for name, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				t.Errorf("%s holds the sensitive value (%s form %q)", what, name, f)
			}
		}
	}
	runCmd := func(wantOK bool, vars []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, vars...)...)
		cmd.Env = append(os.Environ(), "BENCHFLOW_TMPDIR="+tmp)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if (err == nil) != wantOK {
			t.Fatalf("benchflow %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, o.String(), e.String())
		}
		leaks(fmt.Sprintf("the output of benchflow %v", args), append(o.Bytes(), e.Bytes()...))
		return o.String() + e.String()
	}
	runCmd(true, vars, "validate", file)
	runCmd(true, vars, "plan", file)
	if o := runCmd(true, vars, "plan", "--json", file); !strings.Contains(o, "(sensitive)") {
		t.Errorf("plan --json shows no (sensitive):\n%s", o)
	}
	runCmd(true, vars[:2], "plan", "--json", star)
	runCmd(false, vars, "apply", file, "--out", out) // the check step fails
	// A malformed value is not echoed in the error.
	if o := runCmd(false, append([]string{"--var", "pin=notanumber-" + secret}, vars...), "validate", file); !strings.Contains(o, "pin") {
		t.Errorf("the error does not name the variable:\n%s", o)
	}

	run, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	needed := 0
	for _, root := range []string{run, snap} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Type()&fs.ModeSymlink != 0 {
				return err
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != root && fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("folder %s has mode %v, want 0700", p, fi.Mode().Perm())
				}
				return nil
			}
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("file %s has mode %v, want 0600", p, fi.Mode().Perm())
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if d.Name() == "derived.conf" && root == run {
				// The copy the trial keeps in its logs is redacted.
				if string(b) != "(sensitive)" {
					t.Errorf("%s = %q, want the rendered file redacted", p, b)
				}
			}
			if d.Name() == "derived.conf" && root == snap {
				needed++
				if string(b) != forms["lower"] {
					t.Errorf("%s = %q, want the lowered value", p, b)
				}
				return nil
			}
			leaks(p, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if needed != 1 {
		t.Errorf("the service folder snapshot has %d derived.conf, want 1 (did the exec step run?)", needed)
	}
}
