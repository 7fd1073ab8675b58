package loadmetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/load"
)

// scrape fetches the endpoint's text and returns each sample line's value
// by its name and labels as written.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsDuringALoad scrapes the endpoint (bound to 127.0.0.1:0, its
// address read back) while a bounded load runs and after it ended: the
// live totals never exceed the final ones, and the final scrape equals
// the load's own result — requests, errors by kind, the latency count.
func TestMetricsDuringALoad(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		time.Sleep(time.Millisecond)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	m, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	lab := `{run="r1",step="main",trial="c01-r1"}`
	if got := scrape(t, m.Addr()); len(got) != 0 {
		t.Errorf("before any load: %v, want no samples", got)
	}
	live := make(chan map[string]float64, 1)
	res, err := load.Run(context.Background(), load.Options{
		Targets:     []load.Target{{URL: srv.URL + "/", Weight: 3}, {URL: srv.URL + "/missing", Weight: 1}},
		Connections: 2, Threads: 1, Requests: 2000, Rate: 2000,
		OnStart: func(o *load.Observer) {
			m.Watch(o, Labels{Run: "r1", Trial: "c01-r1", Step: "main"})
			go func() { live <- scrape(t, m.Addr()) }()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	during := <-live
	final := scrape(t, m.Addr())
	name := "benchflow_load_requests_total" + lab
	if during[name] > final[name] {
		t.Errorf("live requests %g above the final %g", during[name], final[name])
	}
	if final[name] != float64(res.Requests) {
		t.Errorf("requests: endpoint %g, result %d", final[name], res.Requests)
	}
	for _, k := range load.ErrorClasses {
		key := fmt.Sprintf(`benchflow_load_errors_total{kind="%s",run="r1",step="main",trial="c01-r1"}`, k)
		if v, ok := final[key]; !ok || v != float64(res.ErrorsBy[k]) {
			t.Errorf("errors %s: endpoint %g (present %v), result %d", k, v, ok, res.ErrorsBy[k])
		}
	}
	if res.ErrorsBy["http"] == 0 {
		t.Error("no http errors: the test's /missing target did not count")
	}
	if n := final["benchflow_load_latency_seconds_count"+lab]; n != float64(res.Latency.TotalCount()) {
		t.Errorf("latency count: endpoint %g, result %d", n, res.Latency.TotalCount())
	}
	if inf := final[`benchflow_load_latency_seconds_bucket{run="r1",step="main",trial="c01-r1",le="+Inf"}`]; inf != float64(res.Latency.TotalCount()) {
		t.Errorf("+Inf bucket %g, want %d", inf, res.Latency.TotalCount())
	}
	if c := final["benchflow_load_connections"+lab]; c != 2 {
		t.Errorf("connections %g, want 2", c)
	}
}
