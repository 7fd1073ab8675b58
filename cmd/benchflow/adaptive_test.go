package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// delayServer answers every request after delay(k), where k counts the
// connections opened so far divided by conns: with keep-alive each trial
// opens exactly conns connections, so k is the trial number and the delay
// is a deterministic function of it — no clock, no randomness.
func delayServer(t *testing.T, conns int64, delay func(k int64) time.Duration) string {
	t.Helper()
	var opened atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(delay((opened.Load() - 1) / conns))
			w.Write([]byte("ok"))
		}),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				opened.Add(1)
			}
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// TestAdaptiveRepetitions: with repetitions = { min = 3, max = 6,
// precision = "20%" }, a cell whose server alternates between 10 ms and
// 30 ms per trial gets more repetitions than a cell whose server always
// takes 10 ms, and the manifest says why the run stopped.
func TestAdaptiveRepetitions(t *testing.T) {
	quiet := delayServer(t, 4, func(int64) time.Duration { return 10 * time.Millisecond })
	noisy := delayServer(t, 4, func(k int64) time.Duration { return time.Duration(10+20*(k%2)) * time.Millisecond })
	dir := t.TempDir()
	pipe := filepath.Join(dir, "adaptive.hcl")
	os.WriteFile(pipe, []byte(`pipeline "adaptive" {
  repetitions = { min = 3, max = 6, precision = "20%" }
}
variable "quiet" {}
variable "noisy" {}
matrix {
  server = ["quiet", "noisy"]
}
step "load" "main" {
  target      = matrix.server == "quiet" ? var.quiet : var.noisy
  connections = 4
  threads     = 1
  requests    = 200
  duration    = "30s"
}
`), 0o644)
	vars := []string{"--var", "quiet=" + quiet, "--var", "noisy=" + noisy}
	plan, err := exec.Command(bin, append([]string{"plan", pipe}, vars...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(plan), "adaptive repetitions: 3 to 6 per cell") || !strings.Contains(string(plan), "estimated duration: ") {
		t.Errorf("plan (%v) does not show the bounds and an estimate:\n%s", err, plan)
	}
	out := filepath.Join(dir, "results")
	if b, err := exec.Command(bin, append([]string{"apply", pipe, "--out", out}, vars...)...).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, "latest", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Repetitions int `json:"repetitions"`
		Trials      []struct {
			Status string         `json:"status"`
			Params map[string]any `json:"params"`
		} `json:"trials"`
		Adaptive struct {
			Stopped string `json:"stopped"`
			Reason  string `json:"reason"`
			Rounds  int    `json:"rounds"`
			Cells   []struct {
				Params      map[string]any `json:"params"`
				Repetitions int            `json:"repetitions"`
			} `json:"cells"`
		} `json:"adaptive"`
	}
	if rep, err := exec.Command(bin, "report", filepath.Join(out, "latest")).CombinedOutput(); err != nil || !strings.Contains(string(rep), "stopped (max): ") {
		t.Errorf("report (%v) does not say how the adaptive repetitions ended:\n%s", err, rep)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	reps := map[string]int{}
	for _, tr := range m.Trials {
		if tr.Status != "ok" {
			t.Errorf("trial %v: %s", tr.Params, tr.Status)
		}
		reps[tr.Params["server"].(string)]++
	}
	t.Logf("repetitions %v; stopped %q: %s", reps, m.Adaptive.Stopped, m.Adaptive.Reason)
	if reps["noisy"] != 6 || reps["quiet"] >= reps["noisy"] || reps["quiet"] < 3 {
		t.Errorf("repetitions %v: want the noisy cell at max (6) and the quiet one fewer", reps)
	}
	if m.Adaptive.Stopped != "max" || !strings.Contains(m.Adaptive.Reason, "server=noisy") || m.Adaptive.Rounds != 6 || m.Repetitions != 6 {
		t.Errorf("manifest adaptive: stopped %q (%s), rounds %d, repetitions %d", m.Adaptive.Stopped, m.Adaptive.Reason, m.Adaptive.Rounds, m.Repetitions)
	}
	for _, c := range m.Adaptive.Cells {
		if c.Repetitions != reps[c.Params["server"].(string)] {
			t.Errorf("manifest cell %v: %d repetitions, trials say %d", c.Params, c.Repetitions, reps[c.Params["server"].(string)])
		}
	}
}
