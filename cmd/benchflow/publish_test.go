package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tinyStudy is a pipeline that reads a template (sources/) and has two
// cells of three repetitions (claims need 3 for an interval), loads of a few hundred milliseconds.
const tinyStudy = `
pipeline "tiny" {
  description = "benchflow serve, two response sizes"
  repetitions = 3
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
claim "serves" {
  description = "it answers at all"
  metric      = "requests"
  value       = "> 1"
}
claim "impossible" {
  description = "fails on any machine"
  metric      = "rps"
  value       = "< 0.001"
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
	for _, want := range []string{"benchflow reproduce tiny", "sha256sum -c SHA256SUMS", "--var duration=400ms", "trials.parquet",
		"## The load it was measured under", "| load average before the first trial |"} {
		if !strings.Contains(string(repro), want) {
			t.Errorf("REPRODUCE.md lacks %q:\n%s", want, repro)
		}
	}
	page, _ := os.ReadFile(filepath.Join(b, "report.html"))
	for _, want := range []string{"<h2>Claims</h2>", "impossible", "<h2>Environment</h2>", "benchflow reproduce tiny", `data-label="req/s"`, "machine load"} {
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
	if n := duckCount(t, filepath.Join(moved, "claims.parquet")); n != 2 {
		t.Errorf("DuckDB reads %d rows of the bundle's claims.parquet, want 2", n)
	}
	if n := duckCount(t, filepath.Join(moved, "trials.parquet")); n != 6 {
		t.Errorf("DuckDB reads %d rows of the bundle's trials.parquet, want 6", n)
	}
	if n := duckCount(t, filepath.Join(moved, "latency.parquet")); n == 0 {
		t.Errorf("DuckDB reads no row of the bundle's latency.parquet")
	}
}

// TestReproduceBundle: a bundle moved to another folder reproduces: the
// verdict lists every cell with compare's rule and the environment field
// that differs (here a CPU model edited into the bundle, its checksum
// updated); the new run is a run folder publish bundles, with the
// verdict in it. One byte changed in the bundle is named before anything
// runs.
func TestReproduceBundle(t *testing.T) {
	dir := t.TempDir()
	applyTiny(t, dir)
	if out, err := runBin(t, dir, "publish", "results/latest", "pub/tiny"); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	moved := filepath.Join(t.TempDir(), "tiny")
	if err := os.Rename(filepath.Join(dir, "pub", "tiny"), moved); err != nil {
		t.Fatal(err)
	}
	// The bundle says it ran on another CPU; its checksum line follows.
	mf := filepath.Join(moved, "manifest.json")
	b, _ := os.ReadFile(mf)
	edited := regexp.MustCompile(`"cpu_model": "[^"]*"`).ReplaceAll(b, []byte(`"cpu_model": "Imaginary CPU 9000"`))
	if bytes.Equal(edited, b) {
		t.Fatal("manifest.json has no cpu_model")
	}
	// ... and on a machine far busier than any here (load average 240).
	busy := regexp.MustCompile(`"load_average": \[[^\]]*\]`).ReplaceAll(edited, []byte(`"load_average": [240, 200, 100]`))
	if bytes.Equal(busy, edited) {
		t.Fatal("manifest.json has no load_average")
	}
	edited = busy
	os.WriteFile(mf, edited, 0o644)
	sums, _ := os.ReadFile(filepath.Join(moved, "SHA256SUMS"))
	sum := sha256.Sum256(edited)
	sums = regexp.MustCompile(`(?m)^[0-9a-f]{64}  manifest\.json$`).ReplaceAll(sums, []byte(hex.EncodeToString(sum[:])+"  manifest.json"))
	os.WriteFile(filepath.Join(moved, "SHA256SUMS"), sums, 0o644)

	// --exit-on claims (the default): the claim that fails makes it exit 3.
	out, err := runBin(t, dir, "reproduce", moved, "--yes", "--var", "duration=300ms", "--out", "again", "-q")
	if code := exitCode(err); code != 3 || !strings.Contains(out, "1 claim(s) fail here") {
		t.Fatalf("reproduce: exit %d, want 3 (a claim fails)\n%s", code, out)
	}
	claims := regexp.MustCompile(`(?m)^\s+(serves|impossible)\s+(\S+)\s+(\S+)`).FindAllStringSubmatch(out, -1)
	if len(claims) != 2 || claims[0][1] != "serves" || claims[0][2] != "holds" || claims[0][3] != "holds" ||
		claims[1][1] != "impossible" || claims[1][2] != "fails" || claims[1][3] != "fails" {
		t.Errorf("claims in the verdict %v, want serves holds/holds and impossible fails/fails:\n%s", claims, out)
	}
	for _, want := range []string{"size=6", "size=64", "reproduced", "cpu_model", "Imaginary CPU 9000", "summary: ",
		"machine load (bundle → here)", "240.00 / 200.00 / 100.00 (1 / 5 / 15 min)", "machine load (bundle busy: load average before the first trial 240.00 ≥",
		"what differs (bundle → here), likeliest cause first", "variable duration"} {
		if !strings.Contains(out, want) {
			t.Errorf("verdict lacks %q:\n%s", want, out)
		}
	}
	// -q with --yes prints only the verdict: not the plan consent was
	// given to, nor the run's closing summary.
	for _, not := range []string{"files match SHA256SUMS", "results: "} {
		if strings.Contains(out, not) {
			t.Errorf("reproduce -q --yes printed %q:\n%s", not, out)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "again", "2*"))
	if len(runs) != 1 {
		t.Fatalf("want the new run in again/, got %v", runs)
	}
	var m struct {
		Pipeline struct {
			Variables map[string]any `json:"variables"`
		} `json:"pipeline"`
		Repetitions int `json:"repetitions"`
	}
	mb, _ := os.ReadFile(filepath.Join(runs[0], "manifest.json"))
	json.Unmarshal(mb, &m)
	if m.Pipeline.Variables["duration"] != "300ms" || m.Repetitions != 3 {
		t.Errorf("new run: variables %v, repetitions %d; want duration=300ms from --var and the bundle's 3 repetitions", m.Pipeline.Variables, m.Repetitions)
	}
	if out, err := runBin(t, dir, "publish", runs[0], "pub/again"); err != nil {
		t.Fatalf("publishing the reproduction: %v\n%s", err, out)
	}
	if v, err := os.ReadFile(filepath.Join(dir, "pub", "again", "reproduction.md")); err != nil || !strings.Contains(string(v), "Imaginary CPU 9000") {
		t.Errorf("the reproduction's bundle lacks its verdict: %v\n%s", err, v)
	}

	// One byte changed: named, and nothing runs.
	tp := filepath.Join(moved, "trials.parquet")
	data, _ := os.ReadFile(tp)
	data[len(data)/2] ^= 1
	os.WriteFile(tp, data, 0o644)
	out, err = runBin(t, dir, "reproduce", moved, "--yes", "--out", "third", "-q")
	if code := exitCode(err); code != 1 || !strings.Contains(out, "trials.parquet changed") {
		t.Errorf("a changed byte: exit %d, output:\n%s\nwant exit 1 naming trials.parquet", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "third")); err == nil {
		t.Error("reproduce ran although the bundle does not match its checksums")
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
