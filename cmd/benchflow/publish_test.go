package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyStudy is a pipeline that reads a template (sources/) and has two
// cells of two repetitions, loads of a few hundred milliseconds.
const tinyStudy = `
pipeline "tiny" {
  description = "benchflow serve, two response sizes"
  repetitions = 2
}
variable "duration" { default = "400ms" }
matrix {
  size = ["6", "64"]
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", matrix.size]
  port "http" {}
  health { http = "/" }
  file "note.txt" {
    template = file("templates/note.tmpl")
    vars     = { size = matrix.size }
  }
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 2
  threads     = 1
  duration    = var.duration
}
`

// applyTiny writes tinyStudy into dir, applies it and returns the run
// folder.
func applyTiny(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"study.hcl": tinyStudy, "templates/note.tmpl": "size ${size}\n"}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, append([]string{"apply", "study.hcl", "--out", "results", "-q"}, extra...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", "2*"))
	if len(runs) != 1 {
		t.Fatalf("want one run directory, got %v", runs)
	}
	return runs[0]
}

func runBin(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// TestPublishBundle: publish writes a bundle with the pipeline, the file
// it read, the variables, the report, REPRODUCE.md and SHA256SUMS that
// sha256sum accepts; moved to another folder it still reports and its
// tables read in DuckDB; --archive writes one tar.gz; a second publish
// into the same folder is refused.
func TestPublishBundle(t *testing.T) {
	dir := t.TempDir()
	run := applyTiny(t, dir)
	if b, err := os.ReadFile(filepath.Join(run, "sources", "templates", "note.tmpl")); err != nil || string(b) != "size ${size}\n" {
		t.Fatalf("the run did not keep the template it read: %q, %v", b, err)
	}
	out, err := runBin(t, dir, "publish", "results/latest", "pub/tiny", "--archive")
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	b := filepath.Join(dir, "pub", "tiny")
	for _, f := range []string{"manifest.json", "pipeline.hcl", "sources/templates/note.tmpl", "variables.json",
		"trials.parquet", "latency.parquet", "report.md", "report.html", "REPRODUCE.md", "SHA256SUMS"} {
		if _, err := os.Stat(filepath.Join(b, f)); err != nil {
			t.Errorf("bundle lacks %s: %v", f, err)
		}
	}
	if v, _ := os.ReadFile(filepath.Join(b, "variables.json")); !strings.Contains(string(v), `"duration": "400ms"`) {
		t.Errorf("variables.json = %s, want the duration", v)
	}
	repro, _ := os.ReadFile(filepath.Join(b, "REPRODUCE.md"))
	for _, want := range []string{"benchflow reproduce tiny", "sha256sum -c SHA256SUMS", "--var duration=400ms", "trials.parquet"} {
		if !strings.Contains(string(repro), want) {
			t.Errorf("REPRODUCE.md lacks %q:\n%s", want, repro)
		}
	}
	page, _ := os.ReadFile(filepath.Join(b, "report.html"))
	for _, want := range []string{"<h2>Environment</h2>", "benchflow reproduce tiny", `data-label="req/s"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		c := exec.Command("sha256sum", "-c", "--strict", "SHA256SUMS")
		c.Dir = b
		if o, err := c.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, o)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pub", "tiny.tar.gz")); err != nil {
		t.Errorf("--archive: %v", err)
	}
	if out, err := runBin(t, dir, "publish", "results/latest", "pub/tiny"); err == nil || !strings.Contains(out, "not empty") {
		t.Errorf("publishing over a bundle without --force: err %v\n%s", err, out)
	}

	// Moved elsewhere (the run folder gone), it reads like a run folder.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(b, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "results")); err != nil {
		t.Fatal(err)
	}
	rep, err := runBin(t, dir, "report", moved, "--format", "markdown")
	if err != nil {
		t.Fatalf("report on the moved bundle: %v\n%s", err, rep)
	}
	md, _ := os.ReadFile(filepath.Join(moved, "report.md"))
	if rep != string(md) {
		t.Errorf("report of the moved bundle differs from its report.md:\n%s\nvs\n%s", rep, md)
	}
	if out, err := runBin(t, dir, "compare", moved, moved); err != nil || !strings.Contains(out, "size=64") {
		t.Errorf("compare on the bundle: %v\n%s", err, out)
	}
	if n := duckCount(t, filepath.Join(moved, "trials.parquet")); n != 4 {
		t.Errorf("DuckDB reads %d rows of the bundle's trials.parquet, want 4", n)
	}
	if n := duckCount(t, filepath.Join(moved, "latency.parquet")); n == 0 {
		t.Errorf("DuckDB reads no row of the bundle's latency.parquet")
	}
}
