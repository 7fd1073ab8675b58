package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLoadCheckFlag: --check through the real binary: passing checks
// leave the load clean, a failing one makes every response an error of
// class check (exit 1: nothing succeeded) named in the summary, and a bad
// check is refused with the flag before any load.
func TestLoadCheckFlag(t *testing.T) {
	srv, hits := helloServer(t)
	out, errOut, code := runLoad(t, "-c", "2", "-t", "1", "-n", "100", "--check", "status==200", "--check", "body contains hello", "--check", "size==6", "--check", "header content-type ~ ^text/plain", srv.URL+"/")
	if code != 0 || !strings.Contains(out, "100 requests in") || strings.Contains(out, "failing a check") {
		t.Errorf("passing checks: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runLoad(t, "-c", "2", "-t", "1", "-n", "100", "--check", "body contains goodbye", srv.URL+"/")
	if code != 1 || !strings.Contains(out, `Responses failing a check: 100 (first: check "body contains goodbye" failed: not in the 6-byte body)`) {
		t.Errorf("failing check: exit %d\n%s%s", code, out, errOut)
	}
	before := hits.Load()
	_, errOut, code = runLoad(t, "-n", "10", "--check", "status=200", srv.URL+"/")
	if code != 1 || !strings.Contains(errOut, `--check "status=200": no comparison after status`) || hits.Load() != before {
		t.Errorf("bad check: exit %d, %d requests sent\n%s", code, hits.Load()-before, errOut)
	}
	// Over h2c the same checks pass and fail the same.
	h2c := httptest.NewUnstartedServer(srv.Config.Handler)
	h2c.Config.Protocols = new(http.Protocols)
	h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	h2c.Start()
	t.Cleanup(h2c.Close)
	out, errOut, code = runLoad(t, "-c", "2", "-n", "100", "--h2", "--check", "status==200", "--check", "body contains hello", "--check", "size==6", "--check", "header content-type ~ ^text/plain", h2c.URL+"/")
	if code != 0 || !strings.Contains(out, "100 requests in") || strings.Contains(out, "failing a check") {
		t.Errorf("--h2 passing checks: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runLoad(t, "-c", "2", "-n", "100", "--h2", "--check", "size==7", h2c.URL+"/")
	if code != 1 || !strings.Contains(out, `Responses failing a check: 100 (first: check "size==7" failed: a body of 6 bytes)`) {
		t.Errorf("--h2 failing check: exit %d\n%s%s", code, out, errOut)
	}
}

// TestApplyChecks: checks = [...] in a load step, HCL and Starlark alike
// (one declared option): against a server whose every other answer is an
// error page with status 200, the trial's errors_check counts the failing
// responses, and they are its only errors.
func TestApplyChecks(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			fmt.Fprint(w, "oops")
			return
		}
		fmt.Fprint(w, "hello")
	}))
	t.Cleanup(srv.Close)
	srcs := map[string]string{
		"p.hcl": fmt.Sprintf(`pipeline "p" {}
step "load" "main" {
  target          = "%s/"
  connections     = 1
  threads         = 1
  requests        = 40
  checks          = ["status==200", "body contains hello"]
  max_error_ratio = 1
}
`, srv.URL),
		"p.star": fmt.Sprintf(`pipeline("p")
step.load("main", target = "%s/", connections = 1, threads = 1, requests = 40, checks = ["status==200", "body contains hello"], max_error_ratio = 1)
`, srv.URL),
	}
	for name, src := range srcs {
		var requests, errs, checks int64
		file := applyMainStep(t, name, src, "requests, errors, errors_check", &requests, &errs, &checks)
		if requests != 20 || errs != 20 || checks != 20 {
			t.Errorf("%s: requests %d, errors %d, errors_check %d; want 20 each (every other answer fails)", name, requests, errs, checks)
		}
		b, err := validateEdited(t, file, strings.Replace(src, `"body contains hello"`, `"body has hello"`, 1))
		if err == nil || !strings.Contains(string(b), "Invalid checks") || !strings.Contains(string(b), `"body has hello": write body contains TEXT`) {
			t.Errorf("%s: validate of a bad check: %v\n%s", name, err, b)
		}
	}
}

// applyMainStep writes src (a pipeline with a load step "main") as name in
// a new folder, applies it, and scans cols of the main step's row of
// trials.parquet into dest; it returns the file's path.
func applyMainStep(t *testing.T, name, src, cols string, dest ...any) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if b, err := exec.Command(bin, "apply", file, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("%s: apply: %v\n%s", name, err, b)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := fmt.Sprintf(`SELECT %s FROM read_parquet('%s') WHERE step = 'main'`, cols, filepath.Join(out, "latest", "trials.parquet"))
	if err := db.QueryRow(q).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return file
}

// validateEdited writes src over file and runs validate on it.
func validateEdited(t *testing.T, file, src string) ([]byte, error) {
	t.Helper()
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return exec.Command(bin, "validate", file).CombinedOutput()
}
