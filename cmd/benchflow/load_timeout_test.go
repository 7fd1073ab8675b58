package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/load"
)

// TestLoadLateResponsesAreTimeouts: against `benchflow serve --delay
// 5ms`, `benchflow load --timeout 3ms --json` counts no request ok and
// every failure a timeout, on every engine, in closed and open loop,
// keep-alive and --close, HTTP/1.1 and HTTP/2 (the engines used to count
// responses that arrived after the timeout, e.g. 42–89 ok on epoll). The
// server's delay bounds every latency from below, so this holds on any
// machine.
func TestLoadLateResponsesAreTimeouts(t *testing.T) {
	addr := startServeBin(t, "--delay", "5ms")
	engines := []string{"goroutines"}
	if runtime.GOOS == "linux" {
		engines = append(engines, "epoll")
		if err := load.UringAvailable(); err == nil {
			engines = append(engines, "uring")
		} else {
			t.Logf("not testing the uring engine: io_uring cannot run here: %v", err)
		}
	}
	type run struct {
		name, engine string
		args         []string
	}
	var runs []run
	for _, e := range engines {
		for _, mode := range []struct {
			name string
			args []string
		}{{"closed", nil}, {"closed-close", []string{"--close"}}, {"open", []string{"-R", "400"}}, {"open-close", []string{"-R", "400", "--close"}}} {
			runs = append(runs, run{e + "/" + mode.name, e, append([]string{"--engine", e}, mode.args...)})
		}
	}
	runs = append(runs, run{"h2c/closed", "goroutines", []string{"--h2"}}, run{"h2c/open", "goroutines", []string{"--h2", "-R", "400"}})
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			args := append([]string{"--json", "-c", "2", "-d", "500ms", "--timeout", "3ms"}, r.args...)
			out, errOut, code := runLoad(t, append(args, "http://"+addr+"/")...)
			var j struct {
				Requests int64            `json:"requests"`
				Errors   int64            `json:"errors"`
				ErrorsBy map[string]int64 `json:"errors_by"`
				Engine   string           `json:"engine"`
				Latency  struct {
					Count int64 `json:"count"`
				} `json:"latency_us"`
			}
			if err := json.Unmarshal([]byte(out), &j); err != nil {
				t.Fatalf("benchflow load %s: exit %d, output is not JSON (%v):\n%s%s", strings.Join(args, " "), code, err, out, errOut)
			}
			if j.Requests != 0 || j.Latency.Count != 0 {
				t.Errorf("%d requests ok (%d latencies) with every response later than the timeout; want 0:\n%s", j.Requests, j.Latency.Count, out)
			}
			if j.ErrorsBy["timeout"] == 0 || j.ErrorsBy["timeout"] != j.Errors {
				t.Errorf("errors %d, by class %v: want every one a timeout, and some", j.Errors, j.ErrorsBy)
			}
			if code != 1 || !strings.Contains(errOut, "all ") || !strings.Contains(errOut, "timeout") {
				t.Errorf("exit %d, stderr %q: want 1 and 'all N requests failed: timeout …'", code, errOut)
			}
			if j.Engine != r.engine {
				t.Errorf("engine %q ran, want %q", j.Engine, r.engine)
			}
		})
	}
}
