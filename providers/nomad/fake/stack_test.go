package fake_test

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers/nomad/fake"
)

// startJob registers a two-allocation job with a Consul service and an
// APISIX route to it, and returns the direct and gateway URLs.
func startJob(tb testing.TB, st *fake.Stack) (direct, gateway string) {
	tb.Helper()
	get := func(url string, v any) {
		resp, err := http.Get(url)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if v != nil {
			decodeTB(tb, string(b), v)
		}
	}
	body := strings.Replace(strings.Replace(jobJSON, "%s", "raw_exec", 1), "%d", "100", 1)
	req, _ := http.NewRequest("PUT", st.Nomad.URL()+"/v1/jobs", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	var allocs []struct{ ID, ClientStatus string }
	eventually(tb, "a running allocation", func() bool {
		get(st.Nomad.URL()+"/v1/job/hello-world/allocations", &allocs)
		return len(allocs) > 0 && allocs[0].ClientStatus == "running"
	})
	var alloc struct {
		AllocatedResources struct {
			Shared struct{ Ports []struct{ Value int } }
		}
	}
	get(st.Nomad.URL()+"/v1/allocation/"+allocs[0].ID, &alloc)
	direct = "http://127.0.0.1:" + strconv.Itoa(alloc.AllocatedResources.Shared.Ports[0].Value) + "/"

	admin := st.APISIX.AdminURL() + "/apisix/admin/"
	for _, put := range [][2]string{
		{"upstreams/hw", `{"type":"roundrobin","service_name":"hello-world","discovery_type":"consul"}`},
		{"routes/hw", `{"uri":"/*","upstream_id":"hw"}`},
	} {
		req, _ := http.NewRequest("PUT", admin+put[0], strings.NewReader(put[1]))
		req.Header.Set("X-API-KEY", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			tb.Fatalf("PUT %s: %d", put[0], resp.StatusCode)
		}
	}
	// Wait until both instances pass their checks (the gateway then
	// answers from either).
	for len(st.Consul.Passing("hello-world")) < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	return direct, st.APISIX.GatewayURL() + "/"
}

func decodeTB(tb testing.TB, s string, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		tb.Fatalf("decoding %q: %v", s, err)
	}
}

// TestStackCloseLeavesNoGoroutines: after Close, every server, task and
// check goroutine of the fakes is gone.
func TestStackCloseLeavesNoGoroutines(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	base := runtime.NumGoroutine()
	st := fake.NewStack("k")
	_, gw := startJob(t, st)
	resp, err := http.Get(gw)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st.Close()
	http.DefaultClient.CloseIdleConnections()
	// Goroutines end asynchronously after their connections close: poll
	// (this bounds the wait; it asserts nothing about speed).
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// BenchmarkGatewayHop measures one request direct to an allocation and
// through the fake gateway (Consul discovery, round-robin, reverse proxy).
func BenchmarkGatewayHop(b *testing.B) {
	st := fake.NewStack("k")
	defer st.Close()
	direct, gw := startJob(b, st)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer hc.CloseIdleConnections()
	for _, c := range []struct{ name, url string }{{"direct", direct}, {"gateway", gw}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := hc.Get(c.url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
