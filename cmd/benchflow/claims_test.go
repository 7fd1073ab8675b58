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

// claimsPipeline has one claim that holds, one that fails and one that is
// inconclusive, each by a margin no busy machine erases:
//   - 64 B responses are served far more often than 16 MiB ones (a ratio
//     of a hundred or more; the claim asks for more than 2);
//   - the opposite claim fails by as much;
//   - "twin" serves 64 B in odd rounds and 16 MiB in even rounds, so its
//     per-round ratio to "small" is about 1 in three rounds and a hundred
//     times lower in the other two: the paired interval spans far on both
//     sides of 1 whatever the noise, and "ratio < 1" is inconclusive.
//
// Five repetitions, not three: on a machine with a load average of 20
// (other builds and tests) single repetitions varied by 10× and three
// gave a t interval (t = 4.3) too wide for the first claim.
//
// Two more go through the collect step's columns: cpu_total_pct is 100 ×
// the CPUs in every repetition (a zero-width interval: holds), and the
// verdict of "small", whatever this machine makes of it, is judged.
const claimsPipeline = `
pipeline "claims" {
  repetitions = 5
}
matrix { variant = ["small", "big", "twin"] }
locals {
  size = matrix.variant == "big" || (matrix.variant == "twin" && trial.repetition % 2 == 0) ? "16MiB" : "64"
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", local.size]
  port "http" {}
  health { http = "/" }
}
step "warm" "web" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = "200ms"
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = "500ms"
}
step "collect" "cpu" {
  during      = step.load.main
  interval    = "100ms"
  quiet_check = "0s"
}
claim "small-beats-big" {
  description = "64 B responses are served more than twice as often as 16 MiB ones"
  metric      = "rps"
  cell        = { variant = "small" }
  versus      = { variant = "big" }
  ratio       = "> 2"
}
claim "big-beats-small" {
  metric = "rps"
  cell   = { variant = "big" }
  versus = { variant = "small" }
  ratio  = "> 2"
}
claim "twin-is-slower" {
  metric = "rps"
  cell   = { variant = "twin" }
  versus = { variant = "small" }
  ratio  = "< 1"
}
claim "machine-counted" {
  metric = "cpu_total_pct"
  cell   = { variant = "small" }
  value  = ">= 100%"
}
claim "small-limited-by" {
  cell    = { variant = "small" }
  verdict = "server-bound"
}
`

// TestClaimsEndToEnd applies the pipeline with the real binary and reads
// the claims back through every report format, claims.parquet (DuckDB)
// and --fail-on-claims.
func TestClaimsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "claims.hcl")
	if err := os.WriteFile(file, []byte(claimsPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := exec.Command(bin, "plan", file).CombinedOutput()
	if err != nil || !strings.Contains(string(plan), "twin-is-slower") || !strings.Contains(string(plan), "rps of variant=small / variant=big > 2") {
		t.Fatalf("plan does not list the claims (%v):\n%s", err, plan)
	}
	out := filepath.Join(dir, "results")
	b, err := exec.Command(bin, "apply", file, "--out", out).CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	applyOut := string(b)
	run := filepath.Join(out, "latest")
	want := map[string]string{"small-beats-big": "holds", "big-beats-small": "fails", "twin-is-slower": "inconclusive", "machine-counted": "holds"}
	verdict := "" // small-limited-by: any outcome, with its evidence

	// claims.parquet, read by an independent reader.
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`SELECT claim, outcome, estimate, ci_low, ci_high, more_repetitions, detail FROM read_parquet('%s')`, filepath.Join(run, "claims.parquet")))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var name, outcome, detail string
		var est, lo, hi float64
		var more int64
		if err := rows.Scan(&name, &outcome, &est, &lo, &hi, &more, &detail); err != nil {
			t.Fatal(err)
		}
		n++
		if name == "small-limited-by" {
			verdict = outcome
			if !strings.Contains(detail, "repetitions") && !strings.Contains(detail, "no repetition has a verdict") {
				t.Errorf("verdict claim: detail %q", detail)
			}
			continue
		}
		if outcome != want[name] {
			t.Errorf("claims.parquet: %s %s (%s), want %s", name, outcome, detail, want[name])
		}
		if !(lo <= est && est <= hi) && name != "small-limited-by" {
			t.Errorf("claims.parquet: %s estimate %v outside [%v, %v]", name, est, lo, hi)
		}
		if name == "twin-is-slower" && (more <= 0 || !strings.Contains(detail, "straddles")) {
			t.Errorf("inconclusive claim: more_repetitions %d, detail %q", more, detail)
		}
	}
	rows.Close()
	if n != 5 {
		t.Fatalf("claims.parquet has %d rows, want 5", n)
	}
	want["small-limited-by"] = verdict
	// The summaries count the verdict claim with whatever outcome this
	// machine gave it (a quiet machine may find the 2-connection load not
	// CPU-bound, and the claim then fails).
	counts := map[string]int{"holds": 2, "fails": 1, "inconclusive": 1}
	counts[verdict]++
	summary := func(out string) bool {
		if !strings.Contains(out, "claims: ") {
			return false
		}
		for o, k := range counts {
			if k > 0 && !strings.Contains(out, fmt.Sprintf("%d %s", k, o)) {
				return false
			}
		}
		return true
	}
	if !summary(applyOut) {
		t.Fatalf("apply does not sum the claims up (want %v):\n%s", counts, applyOut)
	}

	report := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"report", run}, args...)...)
		b, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(b), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), 0
	}
	text, code := report()
	if code != 0 || !summary(text) {
		t.Errorf("report (exit %d) lacks the claims:\n%s", code, text)
	}
	for name, o := range want {
		if !strings.Contains(text, name+" ("+o+"):") {
			t.Errorf("text report: no line %q", name+" ("+o+"):")
		}
	}
	md, _ := report("--format", "markdown")
	for name, o := range want {
		if !strings.Contains(md, "| "+name+" | "+o+" |") {
			t.Errorf("markdown report: no row for %s %s:\n%s", name, o, md)
		}
	}
	csvOut, _ := report("--format", "csv")
	recs, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil {
		t.Fatalf("csv report: %v\n%s", err, csvOut)
	}
	last := len(recs[0]) - 1
	if recs[0][last] != "claims" || !strings.Contains(recs[1][last], "small-beats-big=holds") {
		t.Errorf("csv report: claims column %q = %q", recs[0][last], recs[1][last])
	}
	js, _ := report("--format", "json")
	var doc struct {
		Claims []struct {
			Name    string   `json:"name"`
			Outcome string   `json:"outcome"`
			Low     *float64 `json:"ci_low"`
		} `json:"claims"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("json report: %v", err)
	}
	if len(doc.Claims) != 5 {
		t.Fatalf("json report: %d claims", len(doc.Claims))
	}
	for _, c := range doc.Claims {
		if c.Outcome != want[c.Name] || (c.Low == nil && c.Name != "small-limited-by") {
			t.Errorf("json report: %s %s (ci_low %v)", c.Name, c.Outcome, c.Low)
		}
	}
	page := filepath.Join(dir, "report.html")
	if _, code := report("--html", page); code != 0 {
		t.Fatalf("report --html exits %d", code)
	}
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(h), `id="chart-rps"`), strings.Index(string(h), `data-chart="rps"`); i < 0 || j < i || !strings.Contains(string(h), `id="claim-twin-is-slower"`) {
		t.Errorf("HTML: the claims are not next to the req/s chart (chart at %d, claims at %d)", i, j)
	}

	msg, code := report("--fail-on-claims")
	failing := "1 claim(s) fail: big-beats-small"
	if verdict == "fails" {
		failing = "2 claim(s) fail: big-beats-small, small-limited-by"
	}
	if code != 3 || !strings.Contains(msg, failing) {
		t.Errorf("report --fail-on-claims exits %d, want 3 naming the claim:\n%s", code, msg)
	}

	// Without claims.parquet the report recomputes the same outcomes.
	if err := os.Remove(filepath.Join(run, "claims.parquet")); err != nil {
		t.Fatal(err)
	}
	again, _ := report("--format", "json")
	claimsOf := func(js string) string {
		var doc struct {
			Claims json.RawMessage `json:"claims"`
		}
		if err := json.Unmarshal([]byte(js), &doc); err != nil {
			t.Fatal(err)
		}
		return string(doc.Claims)
	}
	if a, b := claimsOf(again), claimsOf(js); a != b {
		t.Errorf("the claims without claims.parquet differ:\n%s\nvs\n%s", a, b)
	}
}

// TestClaimErrorsLocated: validate points at the claim's attribute.
func TestClaimErrorsLocated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.hcl")
	src := strings.Replace(claimsPipeline, `cell   = { variant = "twin" }`, `cell   = { variant = "triplet" }`, 1)
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
		if strings.Contains(l, "triplet") {
			line = i + 1
		}
	}
	if want := fmt.Sprintf("bad.hcl:%d,", line); !strings.Contains(string(b), want) || !strings.Contains(string(b), "No cell matches the claim") {
		t.Errorf("validate output lacks %q and the summary:\n%s", want, b)
	}
}
