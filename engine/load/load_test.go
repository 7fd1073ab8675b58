package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkNoGoroutineLeak records the goroutine count and, at cleanup, waits
// for it to come back down.
func checkNoGoroutineLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		var now int
		for i := 0; i < 200; i++ {
			if now = runtime.NumGoroutine(); now <= before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		n := runtime.Stack(buf, true)
		t.Errorf("goroutines: %d before, %d after the load\n%s", before, now, buf[:n])
	})
}

func run(t *testing.T, o Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestClosedLoopCountsEveryRequest(t *testing.T) {
	s := okServer(t)
	checkNoGoroutineLeak(t)
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 4, Threads: 2, Requests: 1000})
	if res.Requests != 1000 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%s), want 1000 and 0", res.Requests, res.Errors, res.ErrorSummary())
	}
	if got := res.Status[200]; got != 1000 {
		t.Errorf("status 200 count = %d, want 1000", got)
	}
	if want := int64(1000 * len(okResponse)); res.Bytes != want {
		t.Errorf("bytes = %d, want %d", res.Bytes, want)
	}
	if n := res.Latency.TotalCount(); n != 1000 {
		t.Errorf("latency histogram holds %d values, want 1000", n)
	}
	if res.Uncorrected != nil {
		t.Error("closed loop has an uncorrected histogram")
	}
	if n := s.accepted.Load(); n != 4 {
		t.Errorf("server accepted %d connections, want 4 (keep-alive)", n)
	}
	if res.Reconnects != 0 {
		t.Errorf("reconnects = %d, want 0", res.Reconnects)
	}
	var sum int64
	for _, iv := range res.Intervals {
		sum += iv.Requests
	}
	if sum != res.Requests {
		t.Errorf("intervals sum to %d requests, total is %d", sum, res.Requests)
	}
	s.waitClientsGone(t)
}

func TestCloseModeConnectsPerRequest(t *testing.T) {
	s := okServer(t)
	checkNoGoroutineLeak(t)
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 2, Requests: 200, Close: true})
	if res.Requests != 200 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
	if n := s.accepted.Load(); n != 200 {
		t.Errorf("server accepted %d connections, want 200", n)
	}
	if n := res.Connect.TotalCount(); n != 200 {
		t.Errorf("connect histogram holds %d values, want 200", n)
	}
	if res.Reconnects != 0 {
		t.Errorf("reconnects = %d in --close mode, want 0", res.Reconnects)
	}
	s.waitClientsGone(t)
}

func TestConnectionCloseHeaderMeansCloseMode(t *testing.T) {
	o := Defaults(Options{Targets: []Target{{URL: "http://127.0.0.1:1/", Headers: [][2]string{{"connection", " Close"}}}}})
	if !o.Close {
		t.Fatal("-H 'Connection: close' did not select a new connection per request")
	}
}

func TestServerClosingConnectionsIsNotAnError(t *testing.T) {
	s := fixedResponse(t, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true)
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 2, Requests: 50})
	if res.Requests != 50 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
	// Each slot's first connection is not a reconnect (one of the two
	// slots may have sent everything).
	if n := s.accepted.Load(); res.Reconnects != n-2 && res.Reconnects != n-1 {
		t.Errorf("reconnects = %d, want %d connections accepted minus the first of each slot", res.Reconnects, n)
	}
}

func TestResponseShapes(t *testing.T) {
	cases := []struct {
		name, resp string
		method     string
		bytesEach  int
		status     int
	}{
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n", "GET", 0, 200},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", "HEAD", 0, 200},
		{"no-content", "HTTP/1.1 204 No Content\r\n\r\n", "GET", 0, 204},
		{"continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc", "POST", 0, 201},
		{"lf-only", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", "GET", 0, 200},
		{"lf-then-crlf", "HTTP/1.1 200 OK\nContent-Length: 2\n\r\nok", "GET", 0, 200},
		{"not-found", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "GET", 0, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fixedResponse(t, tc.resp, false)
			res := run(t, Options{Targets: []Target{{URL: s.URL("/"), Method: tc.method}}, Connections: 2, Requests: 20})
			if res.Requests != 20 {
				t.Fatalf("requests = %d (%s), want 20", res.Requests, res.ErrorSummary())
			}
			if res.Status[tc.status] != 20 {
				t.Errorf("status counts %v, want 20 × %d", res.Status, tc.status)
			}
			if want := int64(20 * len(tc.resp)); res.Bytes != want {
				t.Errorf("bytes = %d, want %d", res.Bytes, want)
			}
			wantHTTP := int64(0)
			if tc.status >= 400 {
				wantHTTP = 20
			}
			if res.ErrorsBy["http"] != wantHTTP || res.Errors != wantHTTP {
				t.Errorf("errors %d, http errors %d, want %d", res.Errors, res.ErrorsBy["http"], wantHTTP)
			}
			if s.accepted.Load() > 2 {
				t.Errorf("server accepted %d connections, want at most 2 (the response kept the connection)", s.accepted.Load())
			}
		})
	}
}

func TestBodyUntilCloseAndHTTP10(t *testing.T) {
	for _, resp := range []string{
		"HTTP/1.1 200 OK\r\n\r\nbody until close",
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	} {
		s := fixedResponse(t, resp, true)
		res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 1, Requests: 10})
		if res.Requests != 10 || res.Errors != 0 {
			t.Errorf("%q: requests %d errors %d (%s)", resp, res.Requests, res.Errors, res.ErrorSummary())
		}
		if s.accepted.Load() != 10 {
			t.Errorf("%q: %d connections, want 10", resp, s.accepted.Load())
		}
	}
}

// TestErrorClasses checks that each kind of failure lands in its class and
// the summary says what happened.
func TestErrorClasses(t *testing.T) {
	big := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 40<<10) + "\r\nContent-Length: 0\r\n\r\n"
	cases := []struct {
		name    string
		handle  func(c net.Conn)
		class   string
		message string
	}{
		{"garbage", func(c net.Conn) { respondOnce(c, "HELLO THERE\r\n\r\n") }, "parse", "malformed status line"},
		{"bad-content-length", func(c net.Conn) { respondOnce(c, "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n") }, "parse", "Content-Length"},
		{"oversized-header", func(c net.Conn) { respondOnce(c, big) }, "parse", "larger than"},
		{"bad-chunk", func(c net.Conn) {
			respondOnce(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
		}, "parse", "chunk size"},
		{"truncated-body", func(c net.Conn) {
			respondOnce(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
		}, "read", "mid-response"},
		{"closed-mid-header", func(c net.Conn) { respondOnce(c, "HTTP/1.1 200 OK\r\nContent-") }, "read", "mid-response"},
		{"closed-without-response", func(c net.Conn) { respondOnce(c, "") }, "read", "before responding"},
		{"no-response", func(c net.Conn) { io.Copy(io.Discard, c) }, "timeout", "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, tc.handle)
			checkNoGoroutineLeak(t)
			res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL("/")}},
				Connections: 2, Requests: 6, Timeout: 200 * time.Millisecond})
			if err == nil {
				t.Fatalf("Run succeeded, want 'all requests failed'")
			}
			if !strings.Contains(err.Error(), "all 6 requests failed") || !strings.Contains(err.Error(), tc.class) ||
				!strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not say all 6 requests failed with %s (%s)", err, tc.class, tc.message)
			}
			if res == nil {
				t.Fatal("no result returned with the error")
			}
			if res.ErrorsBy[tc.class] != 6 || res.Errors != 6 || res.Requests != 0 {
				t.Errorf("errors by class %v (total %d, requests %d), want 6 %s", res.ErrorsBy, res.Errors, res.Requests, tc.class)
			}
			var sb strings.Builder
			if err := WriteText(&sb, res, true); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sb.String(), "first "+tc.class+" error") && tc.class != "http" {
				t.Errorf("text summary does not say what happened:\n%s", sb.String())
			}
		})
	}
}

// respondOnce reads one request, writes resp and closes.
func respondOnce(c net.Conn, resp string) {
	readRequests(c, func(w io.Writer, _, _ string) bool {
		io.WriteString(w, resp)
		return false
	})
}

func TestRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	checkNoGoroutineLeak(t)
	// Every first connect refused: the load stops at once (as h2load),
	// not after the 50 requests, nor after a duration.
	for _, o := range []Options{{Requests: 50}, {Duration: time.Hour}} {
		o.Targets, o.Connections = []Target{{URL: "http://" + addr + "/"}}, 2
		res, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "refused") ||
			!strings.Contains(err.Error(), "stopped at once: the first connect of every connection was refused (is a server listening on "+addr+"?)") {
			t.Fatalf("error = %v, want every connect refused, stopped at once", err)
		}
		if n := res.ErrorsBy["connect"]; n < 2 || n >= 50 || res.Errors != n ||
			!strings.Contains(err.Error(), fmt.Sprintf("all %d requests failed: connect %d", n, n)) {
			t.Errorf("connect errors = %d (%v), want a few, at least one per connection", n, err)
		}
	}
}

// TestRefusedOnlyAtFirst: a server that refuses some first connects but
// accepts others is loaded, not stopped: only when the first connect of
// every connection is refused does the load give up.
func TestRefusedOnlyAtFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// Another address answers: the load goes on with it.
	srv := newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, _, _ string) bool {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return true
		})
	})
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: "http://" + addr + "/"}, {URL: srv.URL("/")}}, Connections: 2, Requests: 200})
	if err != nil || res.Requests == 0 || res.Requests+res.ErrorsBy["connect"] != 200 {
		t.Errorf("a load with an address that answers: %v, %d requests, %d connect errors; want 200 in all", err, res.Requests, res.ErrorsBy["connect"])
	}
}

func TestMixedOutcomesAreMeasured(t *testing.T) {
	var n atomic.Int64
	s := newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, _, _ string) bool {
			if n.Add(1)%2 == 0 {
				io.WriteString(w, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n")
				return true
			}
			io.WriteString(w, okResponse)
			return true
		})
	})
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 1, Requests: 100})
	if res.Requests != 100 || res.Status[500] != 50 || res.Status[200] != 50 || res.ErrorsBy["http"] != 50 || res.Errors != 50 {
		t.Fatalf("requests %d status %v errors %v", res.Requests, res.Status, res.ErrorsBy)
	}
}

func TestWeightsAndMethods(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	s := newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, method, path string) bool {
			mu.Lock()
			seen[method+" "+path]++
			mu.Unlock()
			_, err := io.WriteString(w, okResponse)
			return err == nil
		})
	})
	res := run(t, Options{Targets: []Target{
		{URL: s.URL("/a?x=1"), Weight: 3},
		{URL: s.URL("/b"), Method: "POST", Body: []byte("payload"), Weight: 1},
	}, Connections: 4, Requests: 4000})
	if res.Requests != 4000 {
		t.Fatalf("requests = %d", res.Requests)
	}
	mu.Lock()
	defer mu.Unlock()
	a, b := seen["GET /a?x=1"], seen["POST /b"]
	if a+b != 4000 {
		t.Fatalf("server saw %v", seen)
	}
	if frac := float64(a) / 4000; frac < 0.70 || frac > 0.80 {
		t.Errorf("weight 3:1 gave %.3f of requests to /a, want about 0.75", frac)
	}
}

func TestUnixSocketTarget(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("unix sockets unavailable: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/x" {
			w.WriteHeader(404)
		}
		io.WriteString(w, "unix")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	res := run(t, Options{Targets: []Target{{URL: "unix:" + sock + ":/x"}}, Connections: 2, Requests: 100})
	if res.Requests != 100 || res.Status[200] != 100 {
		t.Fatalf("requests %d status %v (%s)", res.Requests, res.Status, res.ErrorSummary())
	}
}

func TestTLSTarget(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls")
	}))
	defer srv.Close()
	res := run(t, Options{Targets: []Target{{URL: srv.URL + "/"}}, Connections: 2, Requests: 100})
	if res.Requests != 100 || res.Status[200] != 100 {
		t.Fatalf("requests %d status %v (%s)", res.Requests, res.Status, res.ErrorSummary())
	}
}

func TestCancelReturnsWhatWasMeasured(t *testing.T) {
	// A server that answers the first requests and then never again:
	// cancellation must unblock reads that would otherwise wait 1 min.
	var n atomic.Int64
	s := newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, _, _ string) bool {
			if n.Add(1) > 20 {
				io.Copy(io.Discard, c)
				return false
			}
			io.WriteString(w, okResponse)
			return true
		})
	})
	checkNoGoroutineLeak(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for n.Load() <= 20 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	// One connection: the 21st request, which triggers the cancel, is
	// sent only after the 20th response was read (with two, the other
	// connection's request could reach the server first).
	res, err := Run(ctx, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 1, Duration: time.Minute, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Requests != 20 || res.Errors != 0 {
		t.Errorf("requests %d errors %d (%s), want 20 and 0 (in-flight requests are not errors)", res.Requests, res.Errors, res.ErrorSummary())
	}
	s.waitClientsGone(t)
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		o    Options
		want string
	}{
		{Options{}, "no target URL"},
		{Options{Targets: []Target{{URL: "ftp://x/"}}}, `unsupported scheme "ftp"`},
		{Options{Targets: []Target{{URL: "127.0.0.1:8080/"}}}, "scheme"},
		{Options{Targets: []Target{{URL: "http:///x"}}}, "no host"},
		{Options{Targets: []Target{{URL: "http://h:99999/"}}}, "invalid port"},
		{Options{Targets: []Target{{URL: "unix::/x"}}}, "no socket path"},
		{Options{Targets: []Target{{URL: "http://h/", Method: "GE T"}}}, "invalid method"},
		{Options{Targets: []Target{{URL: "http://h/", Headers: [][2]string{{"X", "a\r\nb"}}}}}, "line break"},
		{Options{Targets: []Target{{URL: "http://h/"}}, Rate: -1}, "rate"},
		{Options{Targets: []Target{{URL: "http://h/"}}, Requests: -1}, "requests"},
	}
	for _, tc := range cases {
		_, err := Run(context.Background(), tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to mention %q", tc.o.Targets, err, tc.want)
		}
	}
}

func TestParseWeightedURL(t *testing.T) {
	cases := []struct {
		in   string
		url  string
		w    int
		fail bool
	}{
		{"http://127.0.0.1:8080/a@3", "http://127.0.0.1:8080/a", 3, false},
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:8080/a", 1, false},
		{"http://user@host/", "http://user@host/", 1, false},
		{"http://h/a@0", "", 0, true},
		{"http://h/a@x", "", 0, true},
	}
	for _, tc := range cases {
		u, w, err := ParseWeightedURL(tc.in)
		if (err != nil) != tc.fail || u != tc.url || w != tc.w {
			t.Errorf("ParseWeightedURL(%q) = %q, %d, %v", tc.in, u, w, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	o := Defaults(Options{Targets: []Target{{URL: "http://h/"}}, Connections: 1})
	if o.Threads != 1 || o.Duration != 10*time.Second || o.Timeout != 2*time.Second ||
		o.Interval != time.Second || o.Targets[0].Method != "GET" || o.Targets[0].Weight != 1 {
		t.Errorf("Defaults = %+v", o)
	}
	o = Defaults(Options{Requests: 5})
	if o.Duration != 0 || o.Connections != 10 || o.Threads != 2 {
		t.Errorf("Defaults with -n = %+v", o)
	}
}

func TestRequestBytes(t *testing.T) {
	raw, err := buildRequest(Target{Method: "POST", Headers: [][2]string{{"X-A", "1"}}, Body: []byte("hi")}, "h:1", "/p", true)
	if err != nil {
		t.Fatal(err)
	}
	want := "POST /p HTTP/1.1\r\nX-A: 1\r\nHost: h:1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
	if string(raw) != want {
		t.Errorf("request bytes\n%q\nwant\n%q", raw, want)
	}
}

func TestWarmTagIsKept(t *testing.T) {
	s := okServer(t)
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 1, Requests: 10, Tag: "warm"})
	if res.Tag != "warm" {
		t.Errorf("tag = %q", res.Tag)
	}
	var sb strings.Builder
	WriteText(&sb, res, false)
	if !strings.Contains(sb.String(), "warm-up") {
		t.Errorf("text summary of a warm-up does not say so:\n%s", sb.String())
	}
}
