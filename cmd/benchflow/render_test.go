package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// renderPipeline is a local-provider pipeline with a templated file, an
// inline file and a copied one, whose service serves a few requests.
const renderPipeline = `
pipeline "render-local" {}
matrix {
  greeting = ["hello", "bonjour"]
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "10"]
  env     = { GREETING = matrix.greeting }
  port "http" {}
  health { http = "/" }
  file "site.conf" {
    template = file("site.conf.tmpl")
    vars     = { greeting = matrix.greeting }
  }
  file "motd" {
    content = "served by trial ${trial.id}\n"
    mode    = "0640"
  }
  file "logo.bin" {
    source = "logo.bin"
  }
}
step "load" "main" {
  target   = service.web.url
  requests = 10
}
`

func writeRenderPipeline(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"p.hcl":          renderPipeline,
		"site.conf.tmpl": "greeting ${greeting} in trial ${trial.id}\nlisten ${self.port.http}\n",
		"logo.bin":       "\x89PNG not really\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "p.hcl")
}

// TestRenderLocal: render prints, for a service of the local provider,
// the exact command with the trial's values, its environment and ports,
// and every rendered file's content; a copied file by its size and
// source.
func TestRenderLocal(t *testing.T) {
	file := writeRenderPipeline(t)
	cmd := exec.Command(bin, "render", file, "--trial", "c02-r1")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("render: %v\n%s%s", err, o.String(), e.String())
	}
	out := o.String()
	for _, want := range []string{
		`# service "web", provider "local" (local), trial c02-r1 greeting=bonjour`,
		"command   " + bin + " serve --addr 127.0.0.1:0 --size 10\n",
		"env       GREETING=bonjour\n",
		"port      http: host auto (a free loopback port when provisioned); self.port.http is that port (0 here)\n",
		"health    http GET / on port http, within 30s, every 100ms\n",
		"# file \"site.conf\" (template, mode 0644): ${self.dir}/site.conf\ngreeting bonjour in trial c02-r1\nlisten 0\n",
		"# file \"motd\" (content, mode 0640): ${self.dir}/motd\nserved by trial c02-r1\n",
		"# file \"logo.bin\" (source, mode 0644): ${self.dir}/logo.bin\n# 16 bytes copied from logo.bin\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cannot render") || e.Len() > 0 {
		t.Errorf("stderr: %s", e.String())
	}
}

// TestRenderedFilesKeptInLogs: after apply, each trial's log folder holds
// the files the pipeline rendered for its services, as the service read
// them (logs/<trial>/files/<service>/<name>), while the service folder
// itself is gone; a file copied from source is not copied again.
func TestRenderedFilesKeptInLogs(t *testing.T) {
	file := writeRenderPipeline(t)
	tmp := t.TempDir()
	out := filepath.Join(t.TempDir(), "results")
	cmd := exec.Command(bin, "apply", file, "--out", out, "-q")
	cmd.Env = append(os.Environ(), "BENCHFLOW_TMPDIR="+tmp)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	run, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range readManifest(t, run).Trials {
		if tr.Status != "ok" {
			t.Fatalf("trial %s: %s", tr.TrialID, tr.Status)
		}
		dir := filepath.Join(run, "logs", tr.TrialID, "files", "web")
		greeting := map[string]string{"c01-r1": "hello", "c02-r1": "bonjour"}[tr.TrialID]
		site, err := os.ReadFile(filepath.Join(dir, "site.conf"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "greeting " + greeting + " in trial " + tr.TrialID + "\nlisten "; !strings.HasPrefix(string(site), want) || strings.HasSuffix(string(site), "listen 0\n") {
			t.Errorf("%s/site.conf = %q, want %q and the port the service got", dir, site, want)
		}
		motd := filepath.Join(dir, "motd")
		if b, err := os.ReadFile(motd); err != nil || string(b) != "served by trial "+tr.TrialID+"\n" {
			t.Errorf("%s = %q (%v)", motd, b, err)
		}
		if fi, err := os.Stat(motd); err == nil && fi.Mode().Perm()&^0o640 != 0 {
			t.Errorf("%s has mode %v, want at most the file block's 0640", motd, fi.Mode().Perm())
		}
		if _, err := os.Stat(filepath.Join(dir, "logo.bin")); !os.IsNotExist(err) {
			t.Errorf("logo.bin (a source file, in the run's sources/) was copied into the logs: %v", err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "benchflow-*"))
	if len(left) > 0 {
		t.Errorf("service folders left after teardown: %v", left)
	}
}
