package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/benchflow/benchflow/engine/load"
)

// runLoad runs `benchflow load ARGS…` and returns stdout, stderr and the
// exit code.
func runLoad(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"load"}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "goroutine ") || strings.Contains(stderr.String(), "panic:") {
		t.Fatalf("benchflow load %v crashed:\n%s", args, stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

func helloServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "hello\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestLoadTextOutput(t *testing.T) {
	srv, hits := helloServer(t)
	out, errOut, code := runLoad(t, "-c", "4", "-t", "1", "-n", "500", "--latency", srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"Requests/sec:", "Transfer/sec:", "     50%", "     75%", "     90%", "     99%", "500 requests in", "1 threads and 4 connections"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if hits.Load() != 500 {
		t.Errorf("server saw %d requests, want 500", hits.Load())
	}
}

func TestLoadJSONOutput(t *testing.T) {
	srv, _ := helloServer(t)
	out, errOut, code := runLoad(t, "--json", "-c", "2", "-n", "200", "-R", "2000", srv.URL+"/@3", srv.URL+"/missing@1")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var j struct {
		Requests  *int64             `json:"requests"`
		Errors    *int64             `json:"errors"`
		DurationS *float64           `json:"duration_s"`
		RPS       *float64           `json:"rps"`
		Bytes     *int64             `json:"bytes"`
		Latency   map[string]float64 `json:"latency_us"`
		Uncorr    map[string]float64 `json:"uncorrected_latency_us"`
		Status    map[string]int64   `json:"status"`
		ErrorsBy  map[string]int64   `json:"errors_by"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	if j.Requests == nil || *j.Requests != 200 || j.Errors == nil || j.DurationS == nil || j.RPS == nil || j.Bytes == nil || *j.Bytes == 0 {
		t.Fatalf("missing or wrong totals: %s", out)
	}
	for _, k := range []string{"p50", "p90", "p99", "p999", "max", "mean"} {
		if _, ok := j.Latency[k]; !ok {
			t.Errorf("latency_us lacks %q", k)
		}
	}
	if j.Uncorr == nil {
		t.Error("open loop (-R) output lacks uncorrected_latency_us")
	}
	if j.Status["200"]+j.Status["404"] != 200 || j.Status["404"] == 0 || j.ErrorsBy["http"] != j.Status["404"] || *j.Errors != j.Status["404"] {
		t.Errorf("status %v errors %v: want 404s from the weighted second URL counted as http errors", j.Status, j.ErrorsBy)
	}
}

// TestLoadEngineFlag: --engine picks the engine and --json reports the
// one that ran.
func TestLoadEngineFlag(t *testing.T) {
	srv, _ := helloServer(t)
	engines := []string{"goroutines"}
	if runtime.GOOS == "linux" {
		engines = append(engines, "epoll")
		if load.UringAvailable() == nil {
			engines = append(engines, "uring")
		}
	}
	for _, e := range engines {
		out, errOut, code := runLoad(t, "--json", "--engine", e, "-c", "2", "-n", "50", srv.URL+"/")
		if code != 0 {
			t.Fatalf("--engine %s: exit %d\n%s%s", e, code, out, errOut)
		}
		var j struct {
			Requests int64  `json:"requests"`
			Engine   string `json:"engine"`
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("--engine %s: %v\n%s", e, err, out)
		}
		if j.Engine != e || j.Requests != 50 {
			t.Errorf("--engine %s: JSON engine %q, requests %d", e, j.Engine, j.Requests)
		}
	}
}

func TestLoadAllRequestsFail(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out, errOut, code := runLoad(t, "-c", "2", "-n", "20", "http://"+addr+"/")
	if code == 0 {
		t.Fatalf("exit 0 although every request failed:\n%s", out)
	}
	// Every first connect refused: the load stops at once, before the
	// 20 requests (TestLoadWhatWrkUsersType).
	m := regexp.MustCompile(`all (\d+) requests failed: connect (\d+) \(.*refused\); stopped at once`).FindStringSubmatch(errOut)
	if m == nil || m[1] != m[2] {
		t.Fatalf("stderr does not say what happened:\n%s", errOut)
	}
	if !strings.Contains(out, "Socket errors: connect "+m[1]+",") {
		t.Errorf("summary lacks the socket errors:\n%s", out)
	}
}

func TestLoadAllResponsesAreErrors(t *testing.T) {
	srv, _ := helloServer(t)
	_, errOut, code := runLoad(t, "-c", "1", "-n", "10", srv.URL+"/missing")
	if code == 0 || !strings.Contains(errOut, "all 10 responses had status >= 400") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestLoadBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "at least one URL"},
		{[]string{"-c", "0", "http://127.0.0.1:1/"}, "-c/--connections 0"},
		{[]string{"-d", "ten", "http://127.0.0.1:1/"}, "-d/--duration"},
		{[]string{"--timeout", "x", "http://127.0.0.1:1/"}, "--timeout"},
		{[]string{"-H", "nocolon", "http://127.0.0.1:1/"}, "-H \"nocolon\""},
		{[]string{"ftp://127.0.0.1/"}, "unsupported scheme"},
		{[]string{"http://127.0.0.1:1/@x"}, "weight"},
		{[]string{"--body", "a", "--body-file", "b", "http://127.0.0.1:1/"}, "mutually exclusive"},
		{[]string{"--body-file", "/nonexistent/file", "http://127.0.0.1:1/"}, "--body-file"},
		{[]string{"-R", "-5", "http://127.0.0.1:1/"}, "-R/--rate"},
		{[]string{"--busy-poll", "soon", "http://127.0.0.1:1/"}, "--busy-poll"},
		{[]string{"--busy-poll", "1s", "http://127.0.0.1:1/"}, "--busy-poll 1s: at most 10ms"},
		{[]string{"--nap", "soon", "--h2", "http://127.0.0.1:1/"}, "--nap"},
		{[]string{"--nap", "20us", "http://127.0.0.1:1/"}, `--nap 20µs: naps need protocol "h2"`},
		{[]string{"--nap", "20us", "--h2", "http://127.0.0.1:1/"}, "--nap 20µs: naps need streams of 2 or more"},
		{[]string{"--nap", "20us", "--h2", "--streams", "4", "-R", "10", "http://127.0.0.1:1/"}, "--nap 20µs: naps are for closed loop"},
		// The limits load and warm steps have (load.Options.Validate).
		{[]string{"-c", "2000000", "http://127.0.0.1:1/"}, "-c/--connections 2000000: must be at most 1000000"},
		{[]string{"-c", "5000", "-t", "5000", "http://127.0.0.1:1/"}, "-t/--threads 5000: must be at most 4096"},
		{[]string{"--engine", "fastest", "http://127.0.0.1:1/"}, `--engine fastest: want auto, uring, epoll or goroutines`},
	}
	for _, tc := range cases {
		out, errOut, code := runLoad(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("load %v: exit %d, stderr %q, want it to mention %q (stdout %q)", tc.args, code, errOut, tc.want, out)
		}
	}
}

func TestLoadHelpTeaches(t *testing.T) {
	out, _, code := runLoad(t, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"Examples:", "-R", "--close", "@", "coordinated omission", "--latency"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestLoadOutParquet(t *testing.T) {
	srv, _ := helloServer(t)
	path := filepath.Join(t.TempDir(), "r.parquet")
	out, errOut, code := runLoad(t, "-c", "2", "-n", "100", "--out", path, srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("--out did not write %s: %v", path, err)
	}
	if n := duckCount(t, path); n != 1 {
		t.Errorf("%s has %d rows, want 1", path, n)
	}
}
