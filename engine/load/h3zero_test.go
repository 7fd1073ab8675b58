package load

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/serve"
)

// startServeH3 runs benchflow's own server with HTTP/3 (serve.Config TLS
// and H3) on a free loopback port and returns its https:// base URL.
func startServeH3(t *testing.T, cfg serve.Config) string {
	t.Helper()
	cfg.TLS, cfg.H3, cfg.Addr = true, true, "127.0.0.1:0"
	ready := make(chan net.Addr, 1)
	cfg.Ready = func(a net.Addr) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.ListenAndServe(ctx, cfg) }()
	select {
	case a := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		return "https://" + a.String()
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	return ""
}

// TestH3CloseZeroRTT: with a new QUIC connection per request against
// `serve --h3`, no connection uses 0-RTT by default, and with H3ZeroRTT
// most do (every connection after the first of each slot can resume a
// session); the counts reach the summary and the JSON.
func TestH3CloseZeroRTT(t *testing.T) {
	url := startServeH3(t, serve.Config{})
	run := func(zero bool) *Result {
		t.Helper()
		res, err := Run(context.Background(), Options{
			Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Close: true, H3ZeroRTT: zero,
			Connections: 2, Requests: 40, Timeout: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 40 || res.Errors != 0 {
			t.Fatalf("0-RTT %v: requests %d, errors %d (%s), want 40 and 0", zero, res.Requests, res.Errors, res.ErrorSummary())
		}
		if n := res.Connect.TotalCount(); n != 40 {
			t.Errorf("0-RTT %v: %d connections for 40 requests with close, want one each", zero, n)
		}
		return res
	}
	off := run(false)
	if off.Used0RTT != 0 || off.H3ZeroRTT {
		t.Errorf("without H3ZeroRTT: %d connections used 0-RTT (asked: %v), want none", off.Used0RTT, off.H3ZeroRTT)
	}
	on := run(true)
	t.Logf("0-RTT on: %d of %d connections used it; connect p50 %d µs (off: %d µs); latency p50 %d µs (off: %d µs)",
		on.Used0RTT, on.Connect.TotalCount(), on.Connect.ValueAtQuantile(50), off.Connect.ValueAtQuantile(50),
		on.Latency.ValueAtQuantile(50), off.Latency.ValueAtQuantile(50))
	if on.Used0RTT < 30 || on.Used0RTT >= 40 || !on.H3ZeroRTT {
		t.Errorf("with H3ZeroRTT: %d of 40 connections used 0-RTT, want most but not the first (of each slot)", on.Used0RTT)
	}
	var b strings.Builder
	if err := WriteText(&b, on, false); err != nil {
		t.Fatal(err)
	}
	if want := "0-RTT: " + itoa(on.Used0RTT) + " of 40 connections"; !strings.Contains(b.String(), want) {
		t.Errorf("summary does not say %q:\n%s", want, b.String())
	}
	for _, c := range []struct {
		res  *Result
		want int64
	}{{off, 0}, {on, on.Used0RTT}} {
		raw, _ := json.Marshal(measure.ToJSON(c.res))
		var j struct {
			Used *int64 `json:"used_0rtt"`
		}
		if err := json.Unmarshal(raw, &j); err != nil || j.Used == nil || *j.Used != c.want {
			t.Errorf("JSON used_0rtt = %v (%v), want %d: %s", j.Used, err, c.want, raw)
		}
	}
}

// TestH3CloseDelay: with a new connection per request, the latency holds
// the handshake as well as the server's 20 ms: every request's latency is
// at least the delay, and its connect time was recorded.
func TestH3CloseDelay(t *testing.T) {
	url := startServeH3(t, serve.Config{Delay: 20 * time.Millisecond})
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Close: true, Connections: 1, Requests: 5, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 5 || res.Errors != 0 {
		t.Fatalf("requests %d, errors %d (%s), want 5 and 0", res.Requests, res.Errors, res.ErrorSummary())
	}
	if min := res.Latency.Min(); min < 20000 {
		t.Errorf("smallest latency %d µs, want at least the 20 ms delay", min)
	}
	if res.Connect.TotalCount() != 5 || res.Connect.Min() <= 0 {
		t.Errorf("connect times: %d recorded, min %d µs; want 5 above 0", res.Connect.TotalCount(), res.Connect.Min())
	}
}

// TestH3ZeroRTTValidation: 0-RTT is refused without protocol h3, and a
// connection per request cannot carry several streams.
func TestH3ZeroRTTValidation(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Targets: []Target{{URL: "https://127.0.0.1:1/"}}, H3ZeroRTT: true}, "h3_0rtt"},
		{Options{Targets: []Target{{URL: "https://127.0.0.1:1/"}}, Protocol: ProtoH2, H3ZeroRTT: true}, "h3_0rtt"},
		{Options{Targets: []Target{{URL: "https://127.0.0.1:1/"}}, Protocol: ProtoH3, Close: true, Streams: 4}, "one request stream"},
	} {
		err := Validate(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", c.o, err, c.want)
		}
	}
	if err := Validate(Options{Targets: []Target{{URL: "https://127.0.0.1:1/"}}, Protocol: ProtoH3, Close: true, H3ZeroRTT: true}); err != nil {
		t.Errorf("h3 with close and 0-RTT: %v, want it accepted", err)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
