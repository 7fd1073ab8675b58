package main

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results/resultstest"
)

// TestAgentsRefuseOthers runs pipelines/agents-local.hcl and, while its
// load step's agents run, talks to them from this process, which does not
// hold their token: every endpoint answers 401 — a start aimed at a Unix
// socket too — and the run still succeeds with the agents' merged
// results. The token (read from the agent's token file, as only its owner
// can) appears nowhere in the run's folder or output, nor on the agents'
// command lines.
func TestAgentsRefuseOthers(t *testing.T) {
	out := t.TempDir()
	var output bytes.Buffer
	cmd := exec.Command(bin, "apply", agentsLocalLenient(t), "--var", "duration=8s", "--out", out)
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	// The load step's agents, from their logs: address and pid.
	type agentProc struct {
		addr string
		pid  string
	}
	var agents []agentProc
	listening := regexp.MustCompile(`agent listening on (\S+)`)
	pidRe := regexp.MustCompile(`listening on \S+ \(pid (\d+)\)`)
	deadline := time.Now().Add(2 * time.Minute)
	for len(agents) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no agents of step main within 2 minutes:\n%s", output.String())
		}
		select {
		case err := <-done:
			t.Fatalf("apply ended before its agents were seen: %v\n%s", err, output.String())
		case <-time.After(50 * time.Millisecond):
		}
		agents = agents[:0]
		_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "agent-main-") || !strings.HasSuffix(d.Name(), ".stdout.log") {
				return nil
			}
			so, _ := os.ReadFile(p)
			se, _ := os.ReadFile(strings.TrimSuffix(p, ".stdout.log") + ".stderr.log")
			a, pm := listening.FindSubmatch(so), pidRe.FindSubmatch(se)
			if a != nil && pm != nil {
				agents = append(agents, agentProc{string(a[1]), string(pm[1])})
			}
			return nil
		})
	}
	var token string
	for _, a := range agents {
		env, err := os.ReadFile("/proc/" + a.pid + "/environ")
		if err != nil {
			t.Fatalf("agent pid %s: %v", a.pid, err)
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if p, ok := strings.CutPrefix(kv, "BENCHFLOW_AGENT_TOKEN_FILE="); ok {
				b, _ := os.ReadFile(p)
				token = strings.TrimSpace(string(b))
			}
		}
		if cl, _ := os.ReadFile("/proc/" + a.pid + "/cmdline"); token == "" || strings.Contains(string(cl), token) {
			t.Fatalf("agent pid %s: token %q not from its file, or on its command line %q", a.pid, token, cl)
		}
		for _, e := range []struct{ method, path, body string }{
			{"GET", "/v1/hello", ""}, {"GET", "/v1/clock", ""}, {"GET", "/v1/progress", ""}, {"GET", "/v1/result", ""},
			{"POST", "/v1/start", `{"options":{"targets":[{"url":"unix:/var/run/docker.sock:/containers/x/stop","method":"POST"}],"requests":1}}`},
			{"POST", "/v1/stop", "{}"},
		} {
			req, _ := http.NewRequest(e.method, "http://"+a.addr+e.path, strings.NewReader(e.body))
			for _, auth := range []string{"", "Bearer not-the-token-of-this-run"} {
				req.Header.Del("Authorization")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				req.Body = io.NopCloser(strings.NewReader(e.body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s on agent pid %s: %v", e.method, e.path, a.pid, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s %s (authorization %q) on agent pid %s: %d %s, want 401", e.method, e.path, auth, a.pid, resp.StatusCode, b)
				}
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("apply: %v\n%s", err, output.String())
	}
	run := filepath.Join(out, "latest")
	if m := readManifest(t, run); m.Status != "ok" {
		t.Fatalf("run status %q\n%s", m.Status, output.String())
	}
	resultstest.CheckAgentMerge(t, run, "main", 2)
	if strings.Contains(output.String(), token) {
		t.Errorf("the agents' token is in apply's output")
	}
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
				t.Errorf("the agents' token is in %s", p)
			}
		}
		return nil
	})
}
