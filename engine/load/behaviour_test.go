package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestBehaviour is the behaviour every engine must share: one table of
// servers (answers, late answers, every error class, closes, chunked and
// partial bodies), each run by the same code on every client — the
// goroutine, epoll and io_uring engines over HTTP/1.1 and the HTTP/2
// client — in closed and open loop, keep-alive and --close. Counts are
// exact wherever the server determines them: a response that completes
// after --timeout is a timeout on every engine and never a success, so a
// server slower than the timeout gets 0 responses counted, however the
// engine happened to notice. No assertion depends on the machine's speed:
// a server's delay is a lower bound on the client's latency, so a late
// answer is late however slow the machine; where a fast answer is
// expected within the timeout the timeout is 10 s, or the case asserts
// only lower bounds.
func TestBehaviour(t *testing.T) {
	for _, cl := range behaviourClients {
		t.Run(cl.name, func(t *testing.T) {
			if why := cl.skip(); why != "" {
				t.Skip(why)
			}
			for _, tc := range behaviourCases {
				for _, m := range behaviourModes {
					t.Run(tc.name+"/"+m.name, func(t *testing.T) {
						if why := tc.skip(cl, m); why != "" {
							t.Skip(why)
						}
						tc.check(t, cl, m)
					})
				}
			}
		})
	}
}

// behaviourClient is one client the table runs on.
type behaviourClient struct {
	name   string
	engine string // Options.Engine
	h2     bool   // HTTP/2 (h2c): the goroutine engine's HTTP/2 client
}

var behaviourClients = []behaviourClient{
	{"goroutines", EngineGoroutines, false},
	{"epoll", EngineEpoll, false},
	{"uring", EngineUring, false},
	{"h2c", EngineGoroutines, true},
}

// skip says why the client cannot run here, "" when it can. A pass of
// make test that forces an engine (BENCHFLOW_LOAD_ENGINE) tests that one.
func (cl behaviourClient) skip() string {
	if e := os.Getenv(pollEngineEnv); e != "" && e != "auto" && e != cl.engine {
		return fmt.Sprintf("%s=%s: this pass tests the %s engine", pollEngineEnv, e, e)
	}
	if cl.engine != EngineGoroutines && runtime.GOOS != "linux" {
		return "the event-loop engines are Linux only"
	}
	if cl.engine == EngineUring {
		if err := UringAvailable(); err != nil {
			return "io_uring cannot run here: " + err.Error()
		}
	}
	return ""
}

// behaviourMode is a load model and connection mode.
type behaviourMode struct {
	name        string
	open, close bool
}

var behaviourModes = []behaviourMode{
	{"closed-keepalive", false, false},
	{"closed-close", false, true},
	{"open-keepalive", true, false},
	{"open-close", true, true},
}

// behaviourCase is a server and what every client must count against it.
type behaviourCase struct {
	name string
	// h1 answers HTTP/1.1 request k (from 1, over all connections),
	// the nth on its connection; false closes the connection after it.
	h1 func(w io.Writer, k, nth int64) bool
	// conn, instead of h1, handles each HTTP/1.1 connection whole.
	conn func(c net.Conn)
	// h2 answers HTTP/2 request k; nil: the case is HTTP/1.1 only, for
	// the reason h2why.
	h2    func(w http.ResponseWriter, r *http.Request, k int64)
	h2why string
	// refused: nothing listens, every connect is refused.
	refused bool
	// keepAliveOnly: the case is about reusing connections.
	keepAliveOnly bool

	timeout time.Duration // default 10s
	conns   int           // default 2
	n       int64         // requests, default 6
	body    []byte        // request body (POST)

	// ok is the exact number of complete responses and errs the exact
	// errors by class (every other class 0)…
	ok   int64
	errs map[string]int64
	// …unless atLeast is set: the split then depends on the machine's
	// speed, and atLeast holds lower bounds ("ok" for responses);
	// atLeastOpen replaces it in open loop.
	atLeast, atLeastOpen map[string]int64
	// accepted, when > 0, is the exact number of connections the server
	// accepts in keep-alive mode (--close: one per request).
	accepted int64
}

const (
	lateBy      = 20 * time.Millisecond // a late server's delay
	lateTimeout = 5 * time.Millisecond  // the timeout it misses
	// justTimeout is missed by lateBy by only a little: less than the
	// event loops' 5 ms timeout scan.
	justTimeout = lateBy - 2*time.Millisecond
)

// Response bodies the cases share.
const (
	chunkedResp    = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"
	closeResp      = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
	untilCloseResp = "HTTP/1.1 200 OK\r\n\r\nbody until close"
	errorResp      = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nfail"
)

// answer writes resp and keeps the connection.
func answer(resp string) func(w io.Writer, k, nth int64) bool {
	return func(w io.Writer, _, _ int64) bool {
		_, err := io.WriteString(w, resp)
		return err == nil
	}
}

// lateH1 answers resp after d; closes the connection after it when close.
func lateH1(d time.Duration, resp string, close bool) func(w io.Writer, k, nth int64) bool {
	return func(w io.Writer, _, _ int64) bool {
		time.Sleep(d)
		_, err := io.WriteString(w, resp)
		return err == nil && !close
	}
}

// splitH1 writes head at once and tail after d.
func splitH1(head, tail string, d time.Duration) func(w io.Writer, k, nth int64) bool {
	return func(w io.Writer, _, _ int64) bool {
		if _, err := io.WriteString(w, head); err != nil {
			return false
		}
		time.Sleep(d)
		_, err := io.WriteString(w, tail)
		return err == nil
	}
}

// lateH2 answers status with body after d.
func lateH2(d time.Duration, status int) func(w http.ResponseWriter, r *http.Request, k int64) {
	return func(w http.ResponseWriter, _ *http.Request, _ int64) {
		time.Sleep(d)
		w.WriteHeader(status)
		io.WriteString(w, "hello\n")
	}
}

var behaviourCases = []behaviourCase{
	{name: "ok", h1: answer(okResponse), h2: lateH2(0, 200), ok: 6},
	{name: "status", h1: answer(errorResp), h2: lateH2(0, 500), ok: 6, errs: map[string]int64{"http": 6}},
	{name: "chunked", h1: answer(chunkedResp), h2why: "chunked bodies are HTTP/1.1 framing", ok: 6},
	{name: "connection-close", h1: func(w io.Writer, _, _ int64) bool { io.WriteString(w, closeResp); return false },
		h2why: "Connection: close is HTTP/1.1's", conns: 1, ok: 6, accepted: 6},
	{name: "body-until-close", h1: func(w io.Writer, _, _ int64) bool { io.WriteString(w, untilCloseResp); return false },
		h2why: "close-delimited bodies are HTTP/1.1's", conns: 1, ok: 6, accepted: 6},
	// The server closes each connection after its third response (saying
	// so): the slot reopens and goes on.
	{name: "reopen", h1: func(w io.Writer, _, nth int64) bool {
		if nth == 3 {
			io.WriteString(w, closeResp)
			return false
		}
		_, err := io.WriteString(w, okResponse)
		return err == nil
	}, h2why: "Connection: close is HTTP/1.1's", keepAliveOnly: true, conns: 1, ok: 6, accepted: 2},
	{name: "refused", refused: true, h2: lateH2(0, 200), errs: map[string]int64{"connect": 6}},
	{name: "closed-before-response", h1: func(io.Writer, int64, int64) bool { return false },
		h2why: "a closed HTTP/2 connection is the frame layer's", errs: map[string]int64{"read": 6}},
	{name: "truncated-body", h1: func(w io.Writer, _, _ int64) bool {
		io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
		return false
	}, h2why: "HTTP/2 frames its bodies", errs: map[string]int64{"read": 6}},
	{name: "not-http", h1: func(w io.Writer, _, _ int64) bool { io.WriteString(w, "HELLO THERE\r\n\r\n"); return false },
		h2why: "an HTTP/2 client reads frames, not a status line", errs: map[string]int64{"parse": 6}},
	{name: "bad-chunk", h1: func(w io.Writer, _, _ int64) bool {
		io.WriteString(w, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
		return false
	}, h2why: "chunked bodies are HTTP/1.1 framing", errs: map[string]int64{"parse": 6}},
	// The server resets the connection while the client is still writing
	// a body larger than the socket buffers.
	{name: "reset-while-writing", conn: resetAfterHead, body: make([]byte, 8<<20), n: 2,
		h2why: "HTTP/2 sends bodies as the windows allow", errs: map[string]int64{"write": 2}},
	{name: "no-response", timeout: lateTimeout, conn: func(c net.Conn) { io.Copy(io.Discard, c) },
		h2: func(_ http.ResponseWriter, r *http.Request, _ int64) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, errs: map[string]int64{"timeout": 6}},
	// Late answers: whatever the engine saw first, a response completed
	// after the timeout is a timeout.
	{name: "late", timeout: lateTimeout, h1: lateH1(lateBy, okResponse, false), h2: lateH2(lateBy, 200),
		errs: map[string]int64{"timeout": 6}},
	{name: "just-late", timeout: justTimeout, h1: lateH1(lateBy, okResponse, false), h2: lateH2(lateBy, 200),
		errs: map[string]int64{"timeout": 6}},
	{name: "late-status", timeout: lateTimeout, h1: lateH1(lateBy, errorResp, false), h2: lateH2(lateBy, 500),
		errs: map[string]int64{"timeout": 6}},
	{name: "late-connection-close", timeout: lateTimeout, h1: lateH1(lateBy, closeResp, true),
		h2why: "Connection: close is HTTP/1.1's", errs: map[string]int64{"timeout": 6}},
	{name: "late-close-instead", timeout: lateTimeout, h1: func(io.Writer, int64, int64) bool { time.Sleep(lateBy); return false },
		h2why: "a closed HTTP/2 connection is the frame layer's", errs: map[string]int64{"timeout": 6}},
	{name: "late-body-end", timeout: lateTimeout,
		h1: splitH1("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "world", lateBy),
		h2: func(w http.ResponseWriter, _ *http.Request, _ int64) {
			io.WriteString(w, "hello")
			w.(http.Flusher).Flush()
			time.Sleep(lateBy)
			io.WriteString(w, "world")
		}, errs: map[string]int64{"timeout": 6}},
	{name: "late-last-chunk", timeout: lateTimeout,
		h1:    splitH1("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", "0\r\n\r\n", lateBy),
		h2why: "chunked bodies are HTTP/1.1 framing", errs: map[string]int64{"timeout": 6}},
	{name: "late-until-close", timeout: lateTimeout, h1: func(w io.Writer, _, _ int64) bool {
		io.WriteString(w, untilCloseResp)
		time.Sleep(lateBy)
		return false
	}, h2why: "close-delimited bodies are HTTP/1.1's", errs: map[string]int64{"timeout": 6}},
	// Every other answer is late: those are timeouts on any machine; the
	// others are answers unless the machine is slower than the timeout.
	{name: "half-late", timeout: 3 * lateBy / 2, n: 8, h1: func(w io.Writer, k, _ int64) bool {
		if k%2 == 1 {
			time.Sleep(2 * lateBy)
		}
		_, err := io.WriteString(w, okResponse)
		return err == nil
	}, h2: func(w http.ResponseWriter, _ *http.Request, k int64) {
		if k%2 == 1 {
			time.Sleep(2 * lateBy)
		}
		io.WriteString(w, "hello\n")
	}, atLeast: map[string]int64{"timeout": 4}},
	// Each answer takes 15 ms, within the 20 ms timeout of its send; in
	// open loop one connection's schedule asks for one every 10 ms, so
	// send k (from 0) goes out at least 15k ms after the start though
	// intended at 10k ms: from k = 2 on, 15 + 5k ms or more after its
	// intended send, a timeout (its corrected latency would exceed the
	// timeout) on any machine. In closed loop none need be.
	{name: "behind-schedule", timeout: lateBy, conns: 1, h1: lateH1(3*lateBy/4, okResponse, false), h2: lateH2(3*lateBy/4, 200),
		atLeast: map[string]int64{}, atLeastOpen: map[string]int64{"timeout": 4}},
}

// resetAfterHead reads a request's head and resets the connection
// (SO_LINGER 0) without reading its body.
func resetAfterHead(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if line == "\r\n" {
			break
		}
	}
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
}

func (tc behaviourCase) skip(cl behaviourClient, m behaviourMode) string {
	switch {
	case cl.h2 && tc.h2 == nil:
		return "HTTP/1.1 only: " + tc.h2why
	case cl.h2 && m.close:
		return "HTTP/2 has no --close (Validate refuses it)"
	case tc.keepAliveOnly && m.close:
		return "the case is about reusing connections"
	}
	return ""
}

// url starts the case's server for cl and returns its URL and the
// number of connections it accepted so far.
func (tc behaviourCase) url(t *testing.T, cl behaviourClient) (string, func() int64) {
	var k atomic.Int64
	switch {
	case tc.refused:
		return "http://" + closedPort(t) + "/", func() int64 { return 0 }
	case cl.h2:
		s := newH2TestServer(t, false, 0, func(w http.ResponseWriter, r *http.Request) { tc.h2(w, r, k.Add(1)) })
		return s.url, s.conns.Load
	case tc.conn != nil:
		s := newRawServer(t, tc.conn)
		return s.URL("/"), s.accepted.Load
	}
	s := newRawServer(t, func(c net.Conn) {
		var nth int64
		readRequests(c, func(w io.Writer, _, _ string) bool {
			nth++
			return tc.h1(w, k.Add(1), nth)
		})
	})
	return s.URL("/"), s.accepted.Load
}

func (tc behaviourCase) check(t *testing.T, cl behaviourClient, m behaviourMode) {
	n, conns, timeout := tc.n, tc.conns, tc.timeout
	if n == 0 {
		n = 6
	}
	if conns == 0 {
		conns = 2
	}
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	url, accepted := tc.url(t, cl)
	target := Target{URL: url}
	if tc.body != nil {
		target.Method, target.Body = "POST", tc.body
	}
	o := Options{Targets: []Target{target}, Engine: cl.engine, Connections: conns, Threads: 1, Requests: n,
		Timeout: timeout, Close: m.close}
	if cl.h2 {
		o.Protocol = ProtoH2
	}
	if m.open {
		o.Rate = float64(100 * conns) // a send every 10 ms per connection
	}
	res, err := Run(context.Background(), o)
	if res == nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Engine != cl.engine {
		t.Fatalf("engine %q ran, want %q", res.Engine, cl.engine)
	}
	got := map[string]int64{"ok": res.Requests}
	for k, v := range res.ErrorsBy {
		if v != 0 {
			got[k] = v
		}
	}
	summary := fmt.Sprintf("%d responses, errors %s (%s)", res.Requests, formatCounts(res.ErrorsBy), res.ErrorSummary())
	if (err != nil) != (res.Requests == 0) {
		t.Errorf("Run's error %v with %s", err, summary)
	}
	if tc.refused {
		// Every first connect refused: the load stops at once (as
		// h2load), having counted each connection's refusal at least,
		// each attempt once, and no more than the n requests.
		if c := res.ErrorsBy["connect"]; c < int64(conns) || c > n || res.Requests != 0 || res.Errors != c ||
			err == nil || !strings.Contains(err.Error(), "stopped at once") {
			t.Errorf("refused: %v; %s; want the load stopped at once, %d to %d connect errors", err, summary, conns, n)
		}
		return
	}
	// Every request is counted once: a response (of any status) or a
	// failure of one class.
	if sum := res.Requests + res.Errors - res.ErrorsBy["http"]; sum != n {
		t.Errorf("%d requests counted, want %d: %s", sum, n, summary)
	}
	if atLeast := tc.atLeast; atLeast != nil {
		if m.open && tc.atLeastOpen != nil {
			atLeast = tc.atLeastOpen
		}
		for k, v := range atLeast {
			if got[k] < v {
				t.Errorf("%s %d, want at least %d: %s", k, got[k], v, summary)
			}
		}
	} else {
		want := map[string]int64{"ok": tc.ok}
		for k, v := range tc.errs {
			want[k] = v
		}
		for _, k := range append([]string{"ok"}, ErrorClasses[:]...) {
			if got[k] != want[k] {
				t.Errorf("%s %d, want %d: %s", k, got[k], want[k], summary)
			}
		}
	}
	// No response counted as one took longer than the timeout.
	us := int64(timeout / time.Microsecond)
	for name, h := range map[string]*hdrhistogram.Histogram{"latency": res.Latency, "uncorrected latency": res.Uncorrected} {
		if h == nil {
			continue
		}
		if max := h.Max(); max > us && !h.ValuesAreEquivalent(max, us) {
			t.Errorf("%s max %d µs over the timeout %s: a late response was counted", name, max, timeout)
		}
	}
	if c := res.Latency.TotalCount(); c != res.Requests {
		t.Errorf("%d latencies recorded for %d responses", c, res.Requests)
	}
	if tc.accepted > 0 {
		want := tc.accepted
		if m.close {
			want = n
		}
		// The server counts connections as it accepts them: wait for it
		// (the load is over; nothing else connects).
		for i := 0; i < 500 && accepted() < want; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if a := accepted(); a != want {
			t.Errorf("server accepted %d connections, want %d", a, want)
		}
		if !m.close && res.Reconnects != want-int64(conns) {
			t.Errorf("reconnects %d, want %d", res.Reconnects, want-int64(conns))
		}
	}
}

// formatCounts prints non-zero counts in a stable order.
func formatCounts(m map[string]int64) string {
	var parts []string
	for k, v := range m {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, v))
		}
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}
