package load

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// newH3Server serves h on HTTP/3 over QUIC on a loopback UDP port, with
// httptest's self-signed certificate; it returns the https:// base URL.
func newH3Server(t testing.TB, h http.Handler) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.StartTLS()
	cert := ts.TLS.Certificates
	ts.Close()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http3.Server{Handler: h, TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: cert})}
	go srv.Serve(pc)
	t.Cleanup(func() { srv.Close(); pc.Close() })
	return "https://" + pc.LocalAddr().String()
}

// TestH3Load: a bounded closed-loop load over HTTP/3 with several
// connections and streams counts every request, reports the protocol and
// the ALPN, and sees the streams overlap.
func TestH3Load(t *testing.T) {
	var inFlight, most atomic.Int64
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond)
		inFlight.Add(-1)
		w.Write([]byte("hello!"))
	}))
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 2, Streams: 4, Requests: 200, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Errors != 0 {
		t.Fatalf("requests %d, errors %d (%s), want 200 and 0", res.Requests, res.Errors, res.ErrorSummary())
	}
	if res.Protocol != ProtoH3 || res.ALPN != "h3" || res.TLSVersion != "TLS 1.3" {
		t.Errorf("protocol %q, ALPN %q, TLS %q: want h3, h3, TLS 1.3", res.Protocol, res.ALPN, res.TLSVersion)
	}
	if most.Load() < 2 {
		t.Errorf("at most %d requests in flight at the server, want the streams to overlap", most.Load())
	}
	var b strings.Builder
	if err := WriteText(&b, res, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "HTTP/3 over QUIC") || !strings.Contains(b.String(), "ALPN h3") {
		t.Errorf("summary does not name HTTP/3:\n%s", b.String())
	}
}

// TestH3FixedServiceTime: against a server that takes 20 ms per request,
// the median over HTTP/3 is at least 20 ms (exact) and at most 25 ms, the
// bound TestFixedServiceTime uses (how promptly a loaded machine wakes the
// server's timer and the QUIC stack's goroutines: up to three attempts).
// The 5% target is a benchmark figure, not a test bound.
func TestH3FixedServiceTime(t *testing.T) {
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("ok"))
	}))
	for _, rate := range []float64{0, 100} {
		var p50s []time.Duration
		for attempt := 0; attempt < 3; attempt++ {
			res, err := Run(context.Background(), Options{Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 4, Requests: 120, Rate: rate})
			if err != nil {
				t.Fatal(err)
			}
			if res.Errors != 0 {
				t.Fatalf("rate %g: errors %s", rate, res.ErrorSummary())
			}
			p50 := time.Duration(res.Latency.ValueAtQuantile(50)) * time.Microsecond
			if p50 < 20*time.Millisecond {
				t.Fatalf("rate %g: p50 = %v, below the 20ms service time", rate, p50)
			}
			p50s = append(p50s, p50)
			t.Logf("rate %g: p50 %v", rate, p50)
			if p50 <= 25*time.Millisecond {
				break
			}
		}
		if last := p50s[len(p50s)-1]; last > 25*time.Millisecond {
			t.Errorf("rate %g: p50 = %v in every attempt, want 20–25ms", rate, p50s)
		}
	}
}

// TestH3OpenLoopSeesTheStall: at a fixed rate over HTTP/3, a 500 ms stall
// shows in the corrected p99 and not in the uncorrected one.
func TestH3OpenLoopSeesTheStall(t *testing.T) {
	start := time.Now()
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		phase := time.Since(start) % (5 * time.Second)
		if phase >= 1500*time.Millisecond && phase < 2*time.Second {
			time.Sleep(2*time.Second - phase)
		}
		w.Write([]byte("ok"))
	}))
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 4, Rate: 400, Duration: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("errors: %s", res.ErrorSummary())
	}
	p99 := time.Duration(res.Latency.ValueAtQuantile(99)) * time.Microsecond
	u99 := time.Duration(res.Uncorrected.ValueAtQuantile(99)) * time.Microsecond
	t.Logf("requests %d, corrected p99 %v, uncorrected p99 %v", res.Requests, p99, u99)
	if p99 < 400*time.Millisecond {
		t.Errorf("corrected p99 = %v, want >= 400ms (the 500ms stall)", p99)
	}
	if u99 >= 100*time.Millisecond {
		t.Errorf("uncorrected p99 = %v, want it small", u99)
	}
}

// TestH3OpenLoopStreams: an open-loop load over several streams per
// connection sends the whole schedule (run it with -race: the streams
// share the slot's budget, schedule and generator).
func TestH3OpenLoopStreams(t *testing.T) {
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: url + "/a"}, {URL: url + "/b"}}, Protocol: ProtoH3, Connections: 2, Streams: 4, Rate: 400, Requests: 200,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Errors != 0 {
		t.Fatalf("requests %d, errors %d (%s), want 200 and 0", res.Requests, res.Errors, res.ErrorSummary())
	}
}

// TestH3Timeout: a server that never answers costs timeouts, not a hung
// load: every request of the budget ends as a timeout.
func TestH3Timeout(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 1, Streams: 2, Requests: 4, Timeout: 200 * time.Millisecond,
	})
	if err == nil && res.Requests != 0 {
		t.Fatalf("requests %d answered by a server that never answers", res.Requests)
	}
	if res == nil || res.ErrorsBy["timeout"] != 4 {
		t.Fatalf("result %+v, err %v: want 4 timeouts", res, err)
	}
}

// TestH3Validate: HTTP/3 wants https:// targets and refuses what it
// cannot do, naming the field.
func TestH3Validate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Targets: []Target{{URL: "http://127.0.0.1:1/"}}, Protocol: ProtoH3}, "https://"},
		{Options{Targets: []Target{{URL: "https://127.0.0.1:1/"}}, Protocol: ProtoH3, Close: true, Streams: 2}, "one request stream"},
		{Options{Targets: []Target{{URL: "https://127.0.0.1:1/"}}, Protocol: ProtoH3, Engine: EngineUring}, "goroutine engine"},
	} {
		err := c.o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to say %q", c.o, err, c.want)
		}
	}
}

// The error of requests to several endpoints names the protocol it is about.
func TestMixedEndpointsNamesTheProtocol(t *testing.T) {
	r := &runner{urls: []string{"https://127.0.0.1:1/", "https://127.0.0.1:2/"}, reqs: []request{{}, {endpoint: 1}}}
	for proto, want := range map[string]string{
		ProtoH2: "protocol h2: targets 1 and 2 go to more than one scheme, host and port (https://127.0.0.1:1/, https://127.0.0.1:2/): one HTTP/2 connection",
		ProtoH3: "protocol h3: the request script's requests go to more than one scheme, host and port (https://127.0.0.1:1/, https://127.0.0.1:2/): one HTTP/3 connection",
	} {
		err := r.mixedEndpoints(proto, proto == ProtoH3)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want it to begin %q", proto, err, want)
		}
	}
}
