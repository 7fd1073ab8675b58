package main

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// metricRatioPipeline has claims that divide two metrics of the same
// trials. bytes / requests is the size of a response (64 B of body, and
// headers when counted): per trial the same whatever the machine's load,
// so "at least 60" holds and "below 32" fails by a margin no noise
// erases. p99.99 (from the latency histograms) over p50 is at least 1 in
// every trial, so "below 0.5" can never hold.
const metricRatioPipeline = `
pipeline "metric-ratio" {
  repetitions = 3
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "64"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = "300ms"
}
claim "response-size" {
  description   = "every response carries its 64 B body"
  metric        = "bytes"
  versus_metric = "requests"
  ratio         = ">= 60"
}
claim "response-tiny" {
  metric        = "bytes"
  versus_metric = "requests"
  ratio         = "< 32"
}
claim "tail-below-median" {
  metric        = "latency_p9999_us"
  versus_metric = "latency_p50_us"
  ratio         = "< 0.5"
}
`

// TestMetricRatioClaimEndToEnd applies a pipeline with claims on the
// ratio of two metrics of one cell with the real binary: plan lists
// them, one holds and one fails in claims.parquet (DuckDB) and every
// report format.
func TestMetricRatioClaimEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ratio.hcl")
	if err := os.WriteFile(file, []byte(metricRatioPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := exec.Command(bin, "plan", file).CombinedOutput()
	if err != nil || !strings.Contains(string(plan), "bytes / requests of every cell >= 60 (per trial; 1 cell, step main)") {
		t.Fatalf("plan does not list the claim (%v):\n%s", err, plan)
	}
	out := filepath.Join(dir, "results")
	b, err := exec.Command(bin, "apply", file, "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	run := filepath.Join(out, "latest")
	want := map[string]string{"response-size": "holds", "response-tiny": "fails"}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`SELECT claim, kind, metric, versus_metric, versus, outcome, estimate, ci_method, detail FROM read_parquet('%s')`, filepath.Join(run, "claims.parquet")))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var name, kind, metric, vmetric, versus, outcome, method, detail string
		var est float64
		if err := rows.Scan(&name, &kind, &metric, &vmetric, &versus, &outcome, &est, &method, &detail); err != nil {
			t.Fatal(err)
		}
		n++
		if kind != "ratio" || versus != "" || (vmetric != "requests" && vmetric != "latency_p50_us") {
			t.Errorf("claims.parquet: %s kind %q versus %q versus_metric %q", name, kind, versus, vmetric)
		}
		if name == "tail-below-median" {
			if outcome == "holds" || est < 1 {
				t.Errorf("p99.99 / p50: %s with estimate %v (%s); every trial's ratio is at least 1", outcome, est, detail)
			}
			continue
		}
		if outcome != want[name] || est < 60 || method != "paired log-t" {
			t.Errorf("claims.parquet: %s %s, estimate %v, %s (%s); want %s, at least 60, paired log-t", name, outcome, est, method, detail, want[name])
		}
	}
	rows.Close()
	if n != 3 {
		t.Fatalf("claims.parquet has %d rows, want 3", n)
	}

	report := func(args ...string) string {
		b, err := exec.Command(bin, append([]string{"report", run}, args...)...).CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return string(b)
	}
	text := report()
	for name, o := range want {
		if !strings.Contains(text, name+" ("+o+"):") || !strings.Contains(text, "bytes / requests every cell") {
			t.Errorf("text report: no line %q or no subject:\n%s", name+" ("+o+"):", text)
		}
	}
	md := report("--format", "markdown")
	for name, o := range want {
		if !strings.Contains(md, "| "+name+" | "+o+" | bytes / requests every cell |") {
			t.Errorf("markdown report: no row for %s %s:\n%s", name, o, md)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(report("--format", "csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if last := len(recs[0]) - 1; recs[0][last] != "claims" || !strings.Contains(recs[1][last], "response-size=holds;response-tiny=fails") {
		t.Errorf("csv report: claims column %q = %q", recs[0][last], recs[1][last])
	}
	var doc struct {
		Claims []struct {
			Name         string `json:"name"`
			Outcome      string `json:"outcome"`
			VersusMetric string `json:"versus_metric"`
		} `json:"claims"`
	}
	if err := json.Unmarshal([]byte(report("--format", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Claims {
		if w, ok := want[c.Name]; ok && (c.Outcome != w || c.VersusMetric != "requests") {
			t.Errorf("json report: %s %s versus_metric %q", c.Name, c.Outcome, c.VersusMetric)
		}
	}
	page := filepath.Join(dir, "report.html")
	report("--html", page)
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), `id="claim-response-size"`) || !strings.Contains(string(h), "bytes / requests every cell") {
		t.Errorf("HTML lacks the claim and its two metrics")
	}
	if msg := report("--fail-on-claims"); !strings.Contains(msg, "response-tiny") {
		t.Errorf("report --fail-on-claims does not name the failing claim:\n%s", msg)
	}
}

// TestMetricRatioClaimErrorsLocated: validate points at versus_metric.
func TestMetricRatioClaimErrorsLocated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.hcl")
	src := strings.Replace(metricRatioPipeline, `versus_metric = "latency_p50_us"`, `versus_metric = "latency_p5_us"`, 1)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(bin, "validate", file).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("validate: %v, want exit 1\n%s", err, b)
	}
	line := 0
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "latency_p5_us") {
			line = i + 1
		}
	}
	if want := fmt.Sprintf("bad.hcl:%d,19: Unknown claim metric", line); !strings.Contains(string(b), want) || !strings.Contains(string(b), `Did you mean "latency_p50_us"?`) {
		t.Errorf("validate output lacks %q:\n%s", want, b)
	}
}
