package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/measure"
)

// runWithEngine runs a load and reports which engine served it.
func runWithEngine(t *testing.T, o Options) (*Result, string) {
	t.Helper()
	r, err := newRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, r.engine
}

// TestEngineChoice: plain TCP and unix sockets run on the event loops
// (on Linux: io_uring for --close loads where it runs, else epoll), TLS on
// goroutines, and the environment can force an engine; Result.Engine names
// the one that ran.
func TestEngineChoice(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the event-loop engines are Linux only")
	}
	if os.Getenv(pollEngineEnv) != "" {
		t.Skipf("%s is set", pollEngineEnv)
	}
	plain := okServer(t)
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	us := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "u") })}
	go us.Serve(ln)
	defer us.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "t") }))
	defer tlsSrv.Close()
	// The automatic choice: uring for --close loads where it runs, epoll
	// for keep-alive ones.
	autoClose := EngineEpoll
	if UringAvailable() == nil {
		autoClose = EngineUring
	}
	type tc struct {
		url, env string
		close    bool
		want     string
	}
	cases := []tc{
		{plain.URL("/"), "", false, EngineEpoll},
		{"unix:" + sock + ":/", "", false, EngineEpoll},
		{plain.URL("/"), "", true, autoClose},
		{"unix:" + sock + ":/", "", true, autoClose},
		{tlsSrv.URL + "/", "", false, EngineGoroutines},
		{tlsSrv.URL + "/", "", true, EngineGoroutines},
		{plain.URL("/"), "goroutines", false, EngineGoroutines},
		{plain.URL("/"), "epoll", false, EngineEpoll},
		{plain.URL("/"), "epoll", true, EngineEpoll},
		{"unix:" + sock + ":/", "epoll", false, EngineEpoll},
		{plain.URL("/"), "auto", true, autoClose},
	}
	if UringAvailable() == nil {
		cases = append(cases, tc{plain.URL("/"), "uring", false, EngineUring}, tc{"unix:" + sock + ":/", "uring", false, EngineUring},
			tc{plain.URL("/"), "uring", true, EngineUring}, tc{tlsSrv.URL + "/", "uring", false, EngineGoroutines})
	} else {
		t.Logf("io_uring cannot run here: %v", UringAvailable())
	}
	for _, tc := range cases {
		t.Setenv(pollEngineEnv, tc.env)
		res, engine := runWithEngine(t, Options{Targets: []Target{{URL: tc.url}}, Connections: 2, Requests: 50, Close: tc.close})
		if engine != tc.want || res.Engine != tc.want {
			t.Errorf("%s (close %v, %s=%q): engine %q, reported %q, want %q", tc.url, tc.close, pollEngineEnv, tc.env, engine, res.Engine, tc.want)
		}
		if res.Requests != 50 || res.Status[200] != 50 {
			t.Errorf("%s: requests %d status %v (%s)", tc.url, res.Requests, res.Status, res.ErrorSummary())
		}
	}
	t.Setenv(pollEngineEnv, "fastest")
	if _, err := Run(context.Background(), Options{Targets: []Target{{URL: plain.URL("/")}}, Requests: 1}); err == nil ||
		!strings.Contains(err.Error(), "want auto, uring, epoll or goroutines") {
		t.Errorf("an unknown engine: error %v", err)
	}
	t.Setenv(pollEngineEnv, "goroutines")
	if _, engine := runWithEngine(t, Options{Targets: []Target{{URL: plain.URL("/")}}, Requests: 10, Engine: "epoll"}); engine != EngineEpoll {
		t.Errorf("Options.Engine epoll over the environment's goroutines: engine %q", engine)
	}
}

// TestUringFallback: where the io_uring probe fails (io_uring_disabled,
// seccomp's EPERM, an old kernel), the automatic choice runs epoll even
// for a --close load (which would take uring) and says so, and asking for
// uring is an error naming the cause.
func TestUringFallback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the event-loop engines are Linux only")
	}
	saved := uringCheck
	t.Cleanup(func() { uringCheck = saved })
	uringCheck = func() error { return fmt.Errorf("io_uring_setup: %w", syscall.EPERM) }
	s := okServer(t)
	t.Setenv(pollEngineEnv, "")
	res, engine := runWithEngine(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 4, Requests: 200, Close: true})
	if engine != EngineEpoll || res.Engine != EngineEpoll {
		t.Errorf("with io_uring refused: engine %q, reported %q, want epoll", engine, res.Engine)
	}
	if res.Requests != 200 || res.Errors != 0 {
		t.Errorf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
	j := measure.ToJSON(res)
	if j.Engine != EngineEpoll {
		t.Errorf("JSON engine %q, want epoll", j.Engine)
	}
	for _, o := range []Options{{Engine: "uring"}, {}} {
		if o.Engine == "" {
			t.Setenv(pollEngineEnv, "uring")
		}
		o.Targets, o.Requests = []Target{{URL: s.URL("/")}}, 10
		_, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "operation not permitted") {
			t.Errorf("uring asked for (%+v) where it is refused: error %v", o.Engine, err)
		}
	}
}

// TestNoAllocationPerRequestWholeLoad: over whole loads (every engine),
// 20,000 more requests cost no more allocations than a handful of
// interval histograms: nothing is allocated per request.
func TestNoAllocationPerRequestWholeLoad(t *testing.T) {
	s := fastServer(t)
	for _, engine := range testEngines(t) {
		t.Run(engine, func(t *testing.T) {
			t.Setenv(pollEngineEnv, engine)
			mallocs := func(n int64) uint64 { _, m := loadAllocs(t, s, n); return m }
			mallocs(1000) // warm up lazily initialised state
			small, large := mallocs(2_000), mallocs(22_000)
			perRequest := (float64(large) - float64(small)) / 20_000
			t.Logf("%d allocations for 2,000 requests, %d for 22,000: %.4f per request", small, large, perRequest)
			if perRequest > 0.01 {
				t.Errorf("%.4f allocations per request, want 0", perRequest)
			}
		})
	}
}

// testEngines lists the engines to run a test on: the one the
// environment forces, else every engine that runs here.
func testEngines(t testing.TB) []string {
	if e := os.Getenv(pollEngineEnv); e != "" && e != "auto" {
		return []string{e}
	}
	if runtime.GOOS != "linux" {
		return []string{EngineGoroutines}
	}
	engines := []string{EngineEpoll, EngineGoroutines}
	if err := UringAvailable(); err == nil {
		engines = append(engines, EngineUring)
	} else {
		t.Logf("io_uring cannot run here (%v): not testing the uring engine", err)
	}
	return engines
}

// TestTwoEndpoints: a slot alternating between two servers keeps one
// connection to each and measures every request.
func TestTwoEndpoints(t *testing.T) {
	a, b := okServer(t), okServer(t)
	checkNoGoroutineLeak(t)
	res := run(t, Options{Targets: []Target{{URL: a.URL("/a")}, {URL: b.URL("/b")}}, Connections: 2, Requests: 2000})
	if res.Requests != 2000 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
	na, nb := a.accepted.Load(), b.accepted.Load()
	if na != 2 || nb != 2 {
		t.Errorf("servers accepted %d and %d connections, want 2 each (one per slot)", na, nb)
	}
	if res.Reconnects != 0 {
		t.Errorf("reconnects = %d, want 0", res.Reconnects)
	}
	a.waitClientsGone(t)
	b.waitClientsGone(t)
}

// TestNoDescriptorLeak: finished, failed and cancelled loads close every
// socket and descriptor they opened.
func TestNoDescriptorLeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	fds := func() []string {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
			out = append(out, e.Name()+"->"+l)
		}
		return out
	}
	s := okServer(t)
	stall := newRawServer(t, func(c net.Conn) { io.Copy(io.Discard, c) }) // never answers
	refused := closedPort(t)
	before := fds()
	run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 8, Requests: 500})
	run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 8, Requests: 500, Close: true})
	Run(context.Background(), Options{Targets: []Target{{URL: "http://" + refused + "/"}}, Connections: 4, Requests: 100})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	Run(ctx, Options{Targets: []Target{{URL: stall.URL("/")}}, Connections: 8, Duration: time.Minute})
	cancel()
	// The test servers close their side when they see the client's
	// close: give them a moment, then compare.
	s.waitClientsGone(t)
	stall.waitClientsGone(t)
	if after := fds(); len(after) != len(before) {
		t.Errorf("descriptors before the loads:\n%v\nafter:\n%v", before, after)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestBusyPoll: polling before sleeping changes how the loop waits, not
// what it measures.
func TestBusyPoll(t *testing.T) {
	s := okServer(t)
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 4, Requests: 2000, BusyPoll: 50 * time.Microsecond})
	if res.Requests != 2000 || res.Errors != 0 || res.Status[200] != 2000 {
		t.Fatalf("requests %d errors %d status %v (%s)", res.Requests, res.Errors, res.Status, res.ErrorSummary())
	}
	if _, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL("/")}}, BusyPoll: time.Second}); err == nil {
		t.Error("a 1s busy poll was accepted")
	}
}

// TestDribbledResponses: responses that arrive a few bytes per segment
// (the reads of one response see many partial buffers, and the event loop
// sleeps between them) are parsed and counted like whole ones, on both
// engines.
func TestDribbledResponses(t *testing.T) {
	big := strings.Repeat("x", 40_000)   // larger than the 32 KiB read buffer
	huge := strings.Repeat("y", 300_000) // many times the read buffer
	chunk := strings.Repeat("z", 100_000)
	cases := []struct{ name, resp string }{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n"},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"},
		{"big-chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(big)), 16) + "\r\n" + big + "\r\n0\r\n\r\n"},
		{"huge-length", "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(huge)) + "\r\n\r\n" + huge},
		{"huge-chunks", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat(strconv.FormatInt(int64(len(chunk)), 16)+"\r\n"+chunk+"\r\n", 2) + "0\r\n\r\n"},
	}
	for _, engine := range testEngines(t) {
		for _, tc := range cases {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				t.Setenv(pollEngineEnv, engine)
				s := newRawServer(t, func(c net.Conn) {
					readRequests(c, func(w io.Writer, _, _ string) bool {
						b := []byte(tc.resp)
						for len(b) > 0 {
							// 7-byte segments; 200 per response at most.
							n := min(len(b), max(7, len(tc.resp)/200))
							if _, err := w.Write(b[:n]); err != nil {
								return false
							}
							b = b[n:]
							time.Sleep(20 * time.Microsecond)
						}
						return true
					})
				})
				res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 2, Requests: 10})
				if res.Requests != 10 || res.Errors != 0 || res.Status[200] != 10 {
					t.Fatalf("requests %d errors %d status %v (%s)", res.Requests, res.Errors, res.Status, res.ErrorSummary())
				}
				if want := int64(10 * len(tc.resp)); res.Bytes != want {
					t.Errorf("bytes = %d, want %d", res.Bytes, want)
				}
				if n := s.accepted.Load(); n != 2 {
					t.Errorf("server accepted %d connections, want 2", n)
				}
			})
		}
	}
}

// TestLargeResponses: bodies much larger than the read buffer, written
// whole, are counted exactly, with the next response on the connection
// parsed from its first byte.
func TestLargeResponses(t *testing.T) {
	body := strings.Repeat("b", 1<<20+17)
	chunk := strings.Repeat("c", 200_000)
	cases := []struct{ name, resp string }{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat(strconv.FormatInt(int64(len(chunk)), 16)+"\r\n"+chunk+"\r\n", 3) + "0\r\n\r\n"},
	}
	for _, engine := range testEngines(t) {
		for _, tc := range cases {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				t.Setenv(pollEngineEnv, engine)
				s := newRawServer(t, func(c net.Conn) {
					readRequests(c, func(w io.Writer, _, _ string) bool {
						_, err := io.WriteString(w, tc.resp)
						return err == nil
					})
				})
				res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 2, Requests: 20})
				if res.Requests != 20 || res.Errors != 0 || res.Status[200] != 20 {
					t.Fatalf("requests %d errors %d status %v (%s)", res.Requests, res.Errors, res.Status, res.ErrorSummary())
				}
				if want := int64(20 * len(tc.resp)); res.Bytes != want {
					t.Errorf("bytes = %d, want %d", res.Bytes, want)
				}
			})
		}
	}
}

// TestLargeRequestBody: a body larger than the socket buffers is written
// in parts as the server drains it (the event loop waits for EPOLLOUT).
func TestLargeRequestBody(t *testing.T) {
	body := make([]byte, 8<<20)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	var got atomic.Int64
	s := newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, _, _ string) bool {
			got.Add(1)
			_, err := io.WriteString(w, okResponse)
			return err == nil
		})
	})
	res := run(t, Options{Targets: []Target{{URL: s.URL("/"), Method: "POST", Body: body}}, Connections: 2, Requests: 6})
	if res.Requests != 6 || res.Errors != 0 || res.Status[200] != 6 {
		t.Fatalf("requests %d errors %d status %v (%s)", res.Requests, res.Errors, res.Status, res.ErrorSummary())
	}
	if n := got.Load(); n != 6 {
		t.Errorf("server parsed %d requests with their 8 MiB bodies, want 6", n)
	}
}
