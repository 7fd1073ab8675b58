package load

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/serve"
)

// startServe runs benchflow's own server (`benchflow serve`) on a
// loopback port the kernel picks, with cfg (TLS and H3 as asked), until
// the test ends; it returns its base URL.
func startServe(t *testing.T, cfg serve.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Serve(ctx, ln, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	scheme := "http://"
	if cfg.TLS {
		scheme = "https://"
	}
	return scheme + ln.Addr().String()
}

// checkProtocols are the protocols whose checks run against
// `benchflow serve`: h2c, HTTP/2 over TLS and HTTP/3 (its UDP port has
// the TLS port's number).
var checkProtocols = []struct {
	name, protocol, reported string
	tls                      bool
}{
	{"h2c", ProtoH2, "h2c", false},
	{"h2", ProtoH2, ProtoH2, true},
	{"h3", ProtoH3, ProtoH3, true},
}

// TestChecksH2H3: response checks over HTTP/2 (cleartext and TLS) and
// HTTP/3 against `benchflow serve` mean what they mean over HTTP/1.1:
// passing checks (status, size, body text, a header, decoded through
// HPACK's dynamic table or QPACK) leave every response a request; a
// failing one makes every response an error of class check, its sample
// worded with what was seen, the same words as HTTP/1.1's.
func TestChecksH2H3(t *testing.T) {
	for _, p := range checkProtocols {
		t.Run(p.name, func(t *testing.T) {
			url := startServe(t, serve.Config{Size: 4096, TLS: p.tls, H3: p.protocol == ProtoH3})
			opts := func(n int64, checks ...string) Options {
				return Options{Targets: []Target{{URL: url + "/"}}, Protocol: p.protocol, Connections: 2, Streams: 4,
					Requests: n, Timeout: 10 * time.Second, Checks: checks}
			}
			res, err := Run(context.Background(), opts(200, "status==200", "size==4096", "body contains hello\nhello\nhello", "header Content-Type ~ ^text/plain", "header content-length ~ ^4096$"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 200 || res.Errors != 0 || res.Protocol != p.reported {
				t.Errorf("protocol %s: %d requests, %d errors (%s), want 200 passing every check", res.Protocol, res.Requests, res.Errors, res.ErrorSummary())
			}
			for _, c := range []struct{ check, sample string }{
				{"size==4095", "a body of 4096 bytes"},
				{"body contains goodbye", "not in the 4096-byte body"},
				{"header Content-Type ~ json", "no Content-Type header matches"},
				{"header X-Missing ~ .", "no X-Missing header matches"},
				{"status==201", "status 200"},
			} {
				res, err := Run(context.Background(), opts(50, "status<400", c.check))
				if err == nil || res == nil {
					t.Fatalf("%s: every response failed its check, want Run's error, got %v", c.check, err)
				}
				if res.Requests != 0 || res.Errors != 50 || res.ErrorsBy["check"] != 50 {
					t.Errorf("%s: %d requests, %d errors (%s), want 0 and 50 check errors", c.check, res.Requests, res.Errors, res.ErrorSummary())
				}
				if s := res.ErrorSample["check"]; !strings.Contains(s, c.check) || !strings.Contains(s, c.sample) {
					t.Errorf("%s: sample %q, want the check and %q", c.check, s, c.sample)
				}
			}
		})
	}
}

// TestChecksH2H3AcrossFrames: a body text split over two DATA frames (the
// handler flushes between its halves) is found over HTTP/2 and HTTP/3,
// and the size counts the payloads only (no frame headers, no padding);
// over HTTP/3 a request body too large for the raw path (the library's
// RoundTrip) is checked the same.
func TestChecksH2H3AcrossFrames(t *testing.T) {
	head, tail := strings.Repeat("a", 20000)+"MAR", "KER"+strings.Repeat("b", 3000)
	h := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kind", "split")
		w.Write([]byte(head))
		w.(http.Flusher).Flush()
		w.Write([]byte(tail))
	}
	size := "size==" + itoa(int64(len(head)+len(tail)))
	checks := []string{"body contains MARKER", size, "header x-kind ~ ^split$"}
	h2 := newH2TestServer(t, true, 100, h)
	h3 := newH3Server(t, http.HandlerFunc(h))
	for _, c := range []struct {
		name, url, protocol string
		body                []byte
	}{
		{"h2", h2.url, ProtoH2, nil},
		{"h3", h3 + "/", ProtoH3, nil},
		{"h3 library", h3 + "/", ProtoH3, make([]byte, h3RawMaxBody+1)},
	} {
		method := ""
		if c.body != nil {
			method = http.MethodPost
		}
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: c.url, Method: method, Body: c.body}}, Protocol: c.protocol,
			Connections: 1, Streams: 2, Requests: 40, Timeout: 10 * time.Second, Checks: checks})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Requests != 40 || res.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors (%s), want 40 passing", c.name, res.Requests, res.Errors, res.ErrorSummary())
		}
		res, err = Run(context.Background(), Options{Targets: []Target{{URL: c.url, Method: method, Body: c.body}}, Protocol: c.protocol,
			Connections: 1, Streams: 2, Requests: 20, Timeout: 10 * time.Second, Checks: []string{"body contains MARKERS"}})
		if res == nil || res.Requests != 0 || res.ErrorsBy["check"] != 20 {
			t.Errorf("%s: body contains MARKERS, absent from the body: want 20 check errors, got %v", c.name, err)
		}
	}
}

// h2CheckedMallocs is h2LoadMallocs with checks: the heap allocations of
// a closed-loop h2c load of n requests against s.
func h2CheckedMallocs(tb testing.TB, s *rawH2Server, checks []string, n int64) uint64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL()}}, Protocol: ProtoH2,
		Connections: 2, Streams: 10, Requests: n, Checks: checks})
	runtime.ReadMemStats(&after)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Requests != n || res.Errors != 0 {
		tb.Fatalf("requests %d errors %d %v, want %d requests without errors", res.Requests, res.Errors, res.ErrorSample, n)
	}
	return after.Mallocs - before.Mallocs
}

// TestH2ChecksAllocateNothing: over HTTP/2, status, size and body checks
// allocate nothing per request in steady state (a stream's checkState
// comes back to the session's list; the body is searched in the frame
// reader's buffer), as without checks.
func TestH2ChecksAllocateNothing(t *testing.T) {
	s := newRawH2Server(t, []byte(strings.Repeat("x", 4090)+"NEEDLE"))
	checks := []string{"status==200", "size==4096", "body contains NEEDLE"}
	small := h2CheckedMallocs(t, s, checks, 2_000)
	large := h2CheckedMallocs(t, s, checks, 22_000)
	per := (float64(large) - float64(small)) / 20_000
	t.Logf("%.3f allocations per request", per)
	if per > 0.1 {
		t.Errorf("%.3f allocations per checked HTTP/2 request, want < 0.1", per)
	}
}

// BenchmarkH2Checks is an h2c load's cost per request (2 connections × 10
// streams, a 4 KiB body from a frame-level server) without checks, with a
// body check, and with a header check (which decodes every header field
// through a second HPACK decoder). CPU per request, on a quiet machine:
//
//	go test -run '^$' -bench BenchmarkH2Checks -count 10 ./engine/load
func BenchmarkH2Checks(b *testing.B) {
	s := newRawH2Server(b, []byte(strings.Repeat("x", 4090)+"NEEDLE"))
	for _, c := range []struct {
		name   string
		checks []string
	}{
		{"none", nil},
		{"body", []string{"body contains NEEDLE"}},
		{"header", []string{"header content-type ~ octet"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			h2CheckedMallocs(b, s, c.checks, int64(max(b.N, 1)))
		})
	}
}
