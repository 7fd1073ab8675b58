package loadmetrics

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/load"
)

// startPrometheus runs Debian's prometheus (package prometheus) scraping
// target every 200 ms, its web API on a port the kernel picks
// (--web.listen-address=127.0.0.1:0; the port is read back from its
// "Listening on" log line), its storage in a temporary folder; it is
// killed when the test ends. Without prometheus the test skips, except
// under CI=true (.ci/run installs it).
func startPrometheus(t *testing.T, target string) (api string) {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		msg := "prometheus not found: install Debian's prometheus package (apt-get install prometheus) to run the test against a real Prometheus"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: .ci/run installs it)")
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 200ms
scrape_configs:
  - job_name: benchflow
    static_configs:
      - targets: [%q]
`, target)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0", "--log.level=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	addr := make(chan string, 1)
	var logMu sync.Mutex
	var logTail strings.Builder
	logText := func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return logTail.String()
	}
	go func() {
		defer close(addr)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent {
				logMu.Lock()
				if logTail.Len() < 64<<10 {
					logTail.WriteString(line + "\n")
				}
				logMu.Unlock()
				if strings.Contains(line, `msg="Listening on"`) {
					if _, a, ok := strings.Cut(line, "address="); ok {
						addr <- strings.Fields(a)[0]
						sent = true
					}
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { cmd.Wait(); close(exited) }()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("prometheus exited before it listened:\n%s", logText())
		}
		api = "http://" + a
		// It answers 503 until its storage is ready.
		waitFor(t, "ready prometheus", func() bool {
			resp, err := http.Get(api + "/-/ready")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		return api
	case <-time.After(60 * time.Second):
		t.Fatalf("prometheus did not listen within a minute:\n%s", logText())
	}
	return ""
}

// promSamples returns the samples Prometheus stored of a series over the
// last minute: [unix seconds, value] pairs, oldest first.
func promSamples(t *testing.T, api, series string) [][2]float64 {
	t.Helper()
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(series+"[1m]"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Values [][2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s %s", series, err, r.Status, r.Error)
	}
	if len(r.Data.Result) > 1 {
		t.Fatalf("query %s: %d series, want one", series, len(r.Data.Result))
	}
	var out [][2]float64
	for _, res := range r.Data.Result {
		for _, v := range res.Values {
			ts, _ := v[0].(float64)
			s, _ := v[1].(string)
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("query %s: value %v", series, v[1])
			}
			out = append(out, [2]float64{ts, f})
		}
	}
	return out
}

// TestRealPrometheusScrapesALoad: a real Prometheus scrapes the metrics
// endpoint while a bounded load runs and after it; once it has stored a
// scrape taken after the load ended, the series it stored equal the
// load's own totals — requests, errors by kind, the latency count — and
// the requests series never decreased along the run.
func TestRealPrometheusScrapesALoad(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	m, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	api := startPrometheus(t, m.Addr())
	lab := `{job="benchflow",run="r1",step="main",trial="c01-r1"}`
	// Prometheus is up; wait for its first scrape of the endpoint (up is
	// 1) so the load is scraped from its start.
	waitFor(t, "prometheus's first scrape", func() bool { return len(promSamples(t, api, `up{job="benchflow"}`)) > 0 })
	res, err := load.Run(context.Background(), load.Options{
		Targets:     []load.Target{{URL: srv.URL + "/", Weight: 3}, {URL: srv.URL + "/missing", Weight: 1}},
		Connections: 2, Threads: 1, Requests: 3000, Rate: 1500,
		OnStart: func(o *load.Observer) { m.Watch(o, Labels{Run: "r1", Trial: "c01-r1", Step: "main"}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	end := float64(time.Now().UnixMilli()) / 1000
	last := func(series string) float64 {
		s := promSamples(t, api, series)
		if len(s) == 0 || s[len(s)-1][0] <= end {
			return -1
		}
		return s[len(s)-1][1]
	}
	waitFor(t, "a scrape after the load's end", func() bool { return last("benchflow_load_requests_total"+lab) >= 0 })
	if got := last("benchflow_load_requests_total" + lab); got != float64(res.Requests) {
		t.Errorf("requests: Prometheus stored %g, the load counted %d", got, res.Requests)
	}
	for _, k := range load.ErrorClasses {
		s := fmt.Sprintf(`benchflow_load_errors_total{job="benchflow",kind="%s",run="r1",step="main",trial="c01-r1"}`, k)
		if got := last(s); got != float64(res.ErrorsBy[k]) {
			t.Errorf("errors %s: Prometheus stored %g, the load counted %d", k, got, res.ErrorsBy[k])
		}
	}
	if res.ErrorsBy["http"] == 0 {
		t.Error("no http errors: the /missing target did not count")
	}
	if got := last("benchflow_load_latency_seconds_count" + lab); got != float64(res.Latency.TotalCount()) {
		t.Errorf("latency count: Prometheus stored %g, the load recorded %d", got, res.Latency.TotalCount())
	}
	samples := promSamples(t, api, "benchflow_load_requests_total"+lab)
	for i := 1; i < len(samples); i++ {
		if samples[i][1] < samples[i-1][1] {
			t.Errorf("requests went down between scrapes: %v then %v", samples[i-1], samples[i])
		}
	}
}

// waitFor polls cond every 100 ms, failing after a minute (how long a
// busy machine may take to start Prometheus and scrape: not a speed
// assertion, a bound on a hung test).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
