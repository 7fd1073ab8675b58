package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailedTrialsAreRecorded: a service that dies at once and a check that
// does not match each fail their trial with a clear error; the run goes on,
// exits 1, and leaves no service folder behind.
func TestFailedTrialsAreRecorded(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := `
pipeline "failures" { order = "sequential" }
matrix { mode = ["dies", "wrong-size", "ok"] }
service "web" {
  command = matrix.mode == "dies" ? ["sh", "-c", "echo cannot bind: address in use >&2; exit 3"] : [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "10"]
  port "http" {}
  health { http = "/" }
}
step "check" "size" {
  url       = service.web.url
  body_size = matrix.mode == "wrong-size" ? 11 : 10
}
step "load" "main" {
  target   = service.web.url
  requests = 200
  connections = 2
  threads = 1
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	b, err := exec.Command(bin, "apply", file, "--out", out).CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, "latest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Status string `json:"status"`
		Trials []struct {
			TrialID, Status, Error string
		} `json:"trials"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != "failed" || len(m.Trials) != 3 {
		t.Fatalf("manifest: %+v", m)
	}
	if tr := m.Trials[0]; tr.Status != "failed" || !strings.Contains(tr.Error, "cannot bind: address in use") || !strings.Contains(tr.Error, "3") {
		t.Errorf("dying service: %+v; want its stderr and exit status quoted", tr)
	}
	if tr := m.Trials[1]; tr.Status != "failed" || !strings.Contains(tr.Error, "body is 10 bytes, expected 11") {
		t.Errorf("failed check: %+v", tr)
	}
	if tr := m.Trials[2]; tr.Status != "ok" {
		t.Errorf("the run did not go on after failures: %+v", tr)
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchflow-*-c0*-web-*"))
	for _, l := range left {
		if strings.Contains(l, filepath.Base(mustEval(t, filepath.Join(out, "latest")))) {
			t.Errorf("service folder left behind: %s", l)
		}
	}
}

func mustEval(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSameFailureStopsTheRun: a service that fails the same way in every
// trial (its port refused, say) stops the run after the first two trials,
// with one warning that says why and how to run them all; on_failure =
// "all" runs every trial.
func TestSameFailureStopsTheRun(t *testing.T) {
	for _, c := range []struct {
		onFailure string
		ran       int
	}{{"", 2}, {`on_failure = "all"`, 4}} {
		dir := t.TempDir()
		file := filepath.Join(dir, "p.hcl")
		src := `
pipeline "same" {
  repetitions = 4
  ` + c.onFailure + `
}
service "web" {
  command = ["sh", "-c", "echo dial tcp 127.0.0.1:$$: connect: connection refused >&2; exit 3"]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target   = service.web.url
  requests = 10
}
`
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "results")
		b, err := exec.Command(bin, "apply", file, "--out", out).CombinedOutput()
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: exit %v, want 1\n%s", c.onFailure, err, b)
		}
		raw, err := os.ReadFile(filepath.Join(out, "latest", "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Trials []struct{ TrialID, Status string } `json:"trials"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, tr := range m.Trials {
			if tr.Status == "failed" {
				failed++
			}
		}
		if failed != c.ran {
			t.Errorf("%q: %d trials failed, want %d\n%s", c.onFailure, failed, c.ran, b)
		}
		stopped := strings.Count(string(b), "the first two trials failed the same way")
		if (c.ran == 2) != (stopped == 1) || stopped > 1 {
			t.Errorf("%q: the stop is said %d times\n%s", c.onFailure, stopped, b)
		}
		if c.ran == 2 && !strings.Contains(string(b), `on_failure = "all"`) {
			t.Errorf("the stop does not say how to run every trial:\n%s", b)
		}
	}
}
