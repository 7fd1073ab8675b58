package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoadMetricsAddr: --metrics-addr 127.0.0.1:0 prints the address the
// kernel picked; a scrape during the load reads Prometheus text with the
// load's counters, never above the totals the load then prints; an
// address in use is refused before any load.
func TestLoadMetricsAddr(t *testing.T) {
	srv, _ := helloServer(t)
	cmd := exec.Command(bin, "load", "--json", "--metrics-addr", "127.0.0.1:0", "-c", "2", "-t", "1", "-R", "200", "-d", "2s", srv.URL+"/")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var url string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "metrics: "); ok {
			url = u
			break
		}
	}
	if url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("no metrics: line on stderr")
	}
	resp, err := http.Get(url)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("load: %v\n%s", err, stdout.String())
	}
	text := string(body)
	for _, want := range []string{"# TYPE benchflow_load_requests_total counter", "# TYPE benchflow_load_latency_seconds histogram",
		`benchflow_load_errors_total{kind="timeout",run="",step="load",trial=""}`, "benchflow_load_loader_cpu_seconds_total", "benchflow_load_schedule_lag_max_seconds"} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q:\n%s", want, text)
		}
	}
	var live float64 = -1
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, `benchflow_load_requests_total{run="",step="load",trial=""} `); ok {
			live, _ = strconv.ParseFloat(v, 64)
		}
	}
	var j struct {
		Requests int64 `json:"requests"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &j); err != nil {
		t.Fatal(err)
	}
	if live < 0 || live > float64(j.Requests) {
		t.Errorf("live requests %g, final %d", live, j.Requests)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, errOut, code := runLoad(t, "-n", "10", "--metrics-addr", ln.Addr().String(), srv.URL+"/")
	if code != 1 || !strings.Contains(errOut, "--metrics-addr "+ln.Addr().String()) {
		t.Errorf("address in use: exit %d\n%s", code, errOut)
	}
}

// TestApplyMetricsAddr: apply --metrics-addr serves each load of the run
// under its run, trial and step labels while it runs.
func TestApplyMetricsAddr(t *testing.T) {
	srv, _ := helloServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := fmt.Sprintf("pipeline \"p\" {}\nstep \"load\" \"main\" {\n  target = \"%s/\"\n  connections = 1\n  threads = 1\n  rate = 100\n  duration = \"3s\"\n}\n", srv.URL)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "apply", file, "--out", filepath.Join(dir, "out"), "--metrics-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var url string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "metrics: "); ok {
			url = u
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	if url == "" {
		t.Fatal("no metrics: line on stderr")
	}
	exited := make(chan struct{})
	go func() { cmd.Process.Wait(); close(exited) }()
	// Scrape until the trial's load shows (the run provisions first), or
	// the run ends.
	for {
		select {
		case <-exited:
			t.Fatal("the run ended before a scrape saw its load")
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		i := strings.Index(string(b), "benchflow_load_requests_total{run=\"")
		if i < 0 {
			time.Sleep(50 * time.Millisecond) // pacing the scrapes, not an assertion
			continue
		}
		{
			line := string(b)[i:]
			line = line[:strings.IndexByte(line, '\n')]
			if !strings.Contains(line, `step="main"`) || !strings.Contains(line, `trial="`) || strings.Contains(line, `run=""`) {
				t.Errorf("labels of %q: want the run, the trial and the step main (trials' step column)", line)
			}
			return
		}
	}
}
