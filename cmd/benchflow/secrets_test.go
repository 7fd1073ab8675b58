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
