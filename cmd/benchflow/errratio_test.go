package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLoadWithMostlyErrorsFailsTrial: a load step against a server that
// answers 9 requests in 10 with a 500 fails its trial (default
// max_error_ratio 50%) with the counts in the reason; the same load with
// max_error_ratio = 0.95 is ok. The failed trial is "failed" in the
// manifest and in trials.parquet, left out of the report's statistics, and
// the run exits 1.
func TestLoadWithMostlyErrorsFailsTrial(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 != 0 {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()

	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := `
pipeline "errors" { order = "sequential" }
variable "url" { type = string }
matrix { limit = ["default", "lenient"] }
step "load" "main" {
  target          = var.url
  requests        = 400
  connections     = 2
  threads         = 1
  max_error_ratio = matrix.limit == "lenient" ? 0.95 : null
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	b, err := exec.Command(bin, "apply", file, "--out", out, "--var", "url="+srv.URL+"/").CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1 (a trial failed)\n%s", err, b)
	}
	reason := regexp.MustCompile(`load "main": 360 errors in 400 requests \(90%\) > max_error_ratio 50%: http 360`)
	if !reason.Match(b) {
		t.Errorf("the console does not give the reason matching %s:\n%s", reason, b)
	}
	latest := filepath.Join(out, "latest")
	m := readManifest(t, latest)
	if m.Status != "failed" || len(m.Trials) != 2 {
		t.Fatalf("manifest: %+v, want failed with 2 trials", m)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`SELECT param_limit, status, errors, requests, coalesce(error, '') FROM read_parquet('%s') WHERE step = 'main' ORDER BY param_limit`,
		filepath.Join(latest, "trials.parquet")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var limit, status, msg string
		var errs, reqs int64
		if err := rows.Scan(&limit, &status, &errs, &reqs, &msg); err != nil {
			t.Fatal(err)
		}
		if errs != 360 || reqs != 400 {
			t.Errorf("%s: %d errors in %d requests, want 360 in 400", limit, errs, reqs)
		}
		got[limit] = status
		if limit == "default" && !reason.MatchString(msg) {
			t.Errorf("trials.parquet error of the failed trial: %q", msg)
		}
	}
	if got["default"] != "failed" || got["lenient"] != "ok" {
		t.Errorf("trials.parquet status by max_error_ratio: %v, want default failed and lenient ok", got)
	}

	rep, err := exec.Command(bin, "report", latest).CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, rep)
	}
	t.Logf("report:\n%s", rep)
	for _, want := range []string{"status failed", "1/2 trials ok", "limit=default: 1 repetition(s) did not succeed"} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("the report lacks %q:\n%s", want, rep)
		}
	}
}

// TestMaxErrorRatioValidated: out-of-range values and the attribute on a
// warm step are located errors of validate.
func TestMaxErrorRatioValidated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.hcl")
	src := `pipeline "bad" {}
step "warm" "w" {
  target          = "http://127.0.0.1:1/"
  max_error_ratio = 0.2
}
step "load" "main" {
  target          = "http://127.0.0.1:1/"
  max_error_ratio = 1.5
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command(bin, "validate", file).CombinedOutput()
	if err == nil {
		t.Fatalf("validate accepted max_error_ratio = 1.5:\n%s", b)
	}
	for _, want := range []string{
		"bad.hcl:4,21: Unsupported max_error_ratio",
		"bad.hcl:8,21: Invalid max_error_ratio",
		"not 1.5",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("validate output lacks %q:\n%s", want, b)
		}
	}
}
