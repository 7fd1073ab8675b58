package serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// start serves cfg on a free loopback port and returns its base URL. The
// server is shut down (and checked to have stopped) when the test ends.
func start(t *testing.T, cfg Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, cfg) }()
	addr := ln.Addr().String()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after shutdown", addr)
		}
	})
	return "http://" + addr
}

func get(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func pattern(n int) string {
	return strings.Repeat(Pattern, n/len(Pattern)+1)[:n]
}

func TestGeneratedBody(t *testing.T) {
	base := start(t, Config{Size: 4096})
	for _, p := range []string{"/", "/any/path", "/index.html?x=1"} {
		resp, body := get(t, "GET", base+p)
		if resp.StatusCode != 200 || resp.ContentLength != 4096 || string(body) != pattern(4096) {
			t.Errorf("GET %s: status %d, Content-Length %d, %d body bytes; want 200 with 4096 bytes of the pattern",
				p, resp.StatusCode, resp.ContentLength, len(body))
		}
	}
}

func TestDefaultSixBytes(t *testing.T) {
	base := start(t, Config{Size: 6})
	_, body := get(t, "GET", base+"/")
	if string(body) != "hello\n" {
		t.Errorf("body %q, want %q", body, "hello\n")
	}
}

func TestBytesPath(t *testing.T) {
	base := start(t, Config{Size: 3})
	for p, n := range map[string]int{"/bytes/0": 0, "/bytes/100": 100, "/bytes/1MiB": 1 << 20, "/bytes/70000": 70000} {
		resp, body := get(t, "GET", base+p)
		if resp.StatusCode != 200 || resp.ContentLength != int64(n) || string(body) != pattern(n) {
			t.Errorf("GET %s: status %d, Content-Length %d, %d body bytes; want %d pattern bytes", p, resp.StatusCode, resp.ContentLength, len(body), n)
		}
	}
	for _, p := range []string{"/bytes/", "/bytes/abc", "/bytes/2GiB", "/bytes/-1"} {
		resp, body := get(t, "GET", base+p)
		if resp.StatusCode != 400 || !strings.Contains(string(body), "size") && !strings.Contains(string(body), "bytes") {
			t.Errorf("GET %s: status %d body %q, want 400 explaining the size", p, resp.StatusCode, body)
		}
	}
}

func TestStatus(t *testing.T) {
	base := start(t, Config{Size: 10, Status: 503})
	resp, body := get(t, "GET", base+"/")
	if resp.StatusCode != 503 || len(body) != 10 {
		t.Errorf("status %d with %d bytes, want 503 with 10", resp.StatusCode, len(body))
	}
	resp, body = get(t, "GET", base+"/bytes/5")
	if resp.StatusCode != 503 || len(body) != 5 {
		t.Errorf("/bytes/5: status %d with %d bytes, want 503 with 5", resp.StatusCode, len(body))
	}
	base = start(t, Config{Size: 10, Status: 204})
	resp, body = get(t, "GET", base+"/")
	if resp.StatusCode != 204 || len(body) != 0 {
		t.Errorf("status %d with %d bytes, want 204 without a body", resp.StatusCode, len(body))
	}
}

// rawConn speaks HTTP/1.1 over one TCP connection so tests see exactly
// what the server sends and when it closes.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, base string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) do(t *testing.T, method, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req := method + " " + path + " HTTP/1.1\r\nHost: test\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(rc.c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(rc.r, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestKeepAliveAndHead(t *testing.T) {
	base := start(t, Config{Size: 1000})
	rc := dial(t, base)
	for i := 0; i < 3; i++ {
		resp, body := rc.do(t, "GET", "/")
		if resp.StatusCode != 200 || len(body) != 1000 || resp.Close {
			t.Fatalf("request %d on one connection: status %d, %d bytes, close=%v", i, resp.StatusCode, len(body), resp.Close)
		}
	}
	// HEAD: the length of the GET, no body; the GET that follows on the
	// same connection parses only if no body bytes were sent.
	resp, body := rc.do(t, "HEAD", "/")
	if resp.StatusCode != 200 || resp.ContentLength != 1000 || len(body) != 0 {
		t.Fatalf("HEAD: status %d, Content-Length %d, %d body bytes; want 200, 1000, 0", resp.StatusCode, resp.ContentLength, len(body))
	}
	resp, body = rc.do(t, "GET", "/bytes/7")
	if resp.StatusCode != 200 || string(body) != pattern(7) {
		t.Fatalf("GET after HEAD: status %d body %q", resp.StatusCode, body)
	}
}

func TestConnectionClose(t *testing.T) {
	base := start(t, Config{Size: 10})
	rc := dial(t, base)
	resp, body := rc.do(t, "GET", "/", "Connection: close")
	if resp.StatusCode != 200 || len(body) != 10 || !resp.Close {
		t.Fatalf("status %d, %d bytes, close=%v; want 200, 10 bytes and Connection: close", resp.StatusCode, len(body), resp.Close)
	}
	if n, err := rc.r.ReadByte(); err != io.EOF {
		t.Fatalf("after Connection: close, read %q, %v; want EOF (connection closed by the server)", n, err)
	}
}

func TestDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	base := start(t, Config{Size: 1, Delay: delay})
	t0 := time.Now()
	resp, _ := get(t, "GET", base+"/")
	if el := time.Since(t0); el < delay || resp.StatusCode != 200 {
		t.Errorf("answered %s after the request with status %d; want at least the %s delay", el, resp.StatusCode, delay)
	}
}

func TestStallWindow(t *testing.T) {
	h, err := newHandler(Config{Stall: 300 * time.Millisecond, StallEvery: time.Second, Delay: 5 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int) time.Time { return h.start.Add(time.Duration(ms) * time.Millisecond) }
	cases := map[int]time.Duration{ // ms since start -> wait
		0:    5 * time.Millisecond,
		699:  5 * time.Millisecond,
		700:  305 * time.Millisecond,
		900:  105 * time.Millisecond,
		999:  6 * time.Millisecond,
		1000: 5 * time.Millisecond,
		2750: 255 * time.Millisecond,
	}
	for ms, want := range cases {
		if got := h.wait(at(ms)); got != want {
			t.Errorf("request at %dms waits %s, want %s", ms, got, want)
		}
	}
}

func TestStallEndToEnd(t *testing.T) {
	// A request that arrives during a stall is answered no earlier than
	// the end of the stall window.
	const stall, every = 400 * time.Millisecond, 800 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan time.Time, 1)
	done := make(chan error, 1)
	t0 := time.Now() // the server's clock starts after this
	go func() {
		done <- Serve(ctx, ln, Config{Size: 1, Stall: stall, StallEvery: every, Ready: func(net.Addr) { started <- time.Now() }})
	}()
	time.Sleep(time.Until((<-started).Add(every - stall + 50*time.Millisecond)))
	resp, _ := get(t, "GET", "http://"+ln.Addr().String()+"/")
	if end := t0.Add(every); time.Now().Before(end) || resp.StatusCode != 200 {
		t.Errorf("a request inside the stall window was answered %s before the window ended (status %d)", time.Until(end), resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestShutdownEndsStalledRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, Config{Delay: time.Hour}) }()
	rc := dial(t, "http://"+ln.Addr().String())
	io.WriteString(rc.c, "GET / HTTP/1.1\r\nHost: t\r\n\r\n")
	time.Sleep(50 * time.Millisecond) // let the request reach the handler
	cancel()
	resp, err := http.ReadResponse(rc.r, nil)
	if err != nil {
		t.Fatalf("reading the answer to a delayed request during shutdown: %v", err)
	}
	if resp.StatusCode != 503 || !resp.Close {
		t.Errorf("status %d close=%v, want 503 with Connection: close", resp.StatusCode, resp.Close)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("index.html", "<h1>home</h1>")
	write("hello", "hello\n")
	write("sub/data.json", `{"a":1}`)
	write("sub/index.html", "<p>sub</p>")
	base := start(t, Config{Dir: dir, Size: 99})
	for p, want := range map[string][2]string{
		"/":              {"<h1>home</h1>", "text/html; charset=utf-8"},
		"/index.html":    {"<h1>home</h1>", "text/html; charset=utf-8"},
		"/hello":         {"hello\n", "text/plain; charset=utf-8"},
		"/sub/data.json": {`{"a":1}`, "application/json"},
		"/sub/":          {"<p>sub</p>", "text/html; charset=utf-8"},
	} {
		resp, body := get(t, "GET", base+p)
		if resp.StatusCode != 200 || string(body) != want[0] || resp.Header.Get("Content-Type") != want[1] {
			t.Errorf("GET %s: %d %q %q, want 200 %q %q", p, resp.StatusCode, resp.Header.Get("Content-Type"), body, want[1], want[0])
		}
	}
	if resp, _ := get(t, "GET", base+"/missing"); resp.StatusCode != 404 {
		t.Errorf("GET /missing: %d, want 404", resp.StatusCode)
	}
	// Files added after start are served from disk.
	write("late.txt", "late")
	if resp, body := get(t, "GET", base+"/late.txt"); resp.StatusCode != 200 || string(body) != "late" {
		t.Errorf("GET /late.txt: %d %q, want 200 \"late\"", resp.StatusCode, body)
	}
	// /bytes/<n> answers even with a directory.
	if _, body := get(t, "GET", base+"/bytes/12"); string(body) != pattern(12) {
		t.Errorf("GET /bytes/12 with --dir: %q", body)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Status: 99}, "status 99"},
		{Config{Status: 600}, "status 600"},
		{Config{Size: -1}, "size -1"},
		{Config{Delay: -time.Second}, "must not be negative"},
		{Config{Stall: time.Second}, "needs a period"},
		{Config{StallEvery: time.Second}, "needs a stall duration"},
		{Config{Stall: time.Second, StallEvery: time.Second}, "shorter than the period"},
		{Config{Dir: "/nonexistent/benchflow"}, "no such file"},
		{Config{Dir: file}, "not a directory"},
	}
	for _, c := range cases {
		_, err := New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
}

func TestListenAndServeBadAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = ListenAndServe(context.Background(), Config{Addr: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "listening on "+ln.Addr().String()) {
		t.Errorf("ListenAndServe on a busy port = %v, want a located listen error", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("error %v does not wrap the *net.OpError", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:1": true, "[::1]:80": true, "localhost:80": true,
		":8080": false, "0.0.0.0:80": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// discard is a minimal ResponseWriter for the handler benchmark.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func BenchmarkHandler(b *testing.B) {
	for name, path := range map[string]string{"root": "/", "bytes4KiB": "/bytes/4KiB"} {
		b.Run(name, func(b *testing.B) {
			h, err := New(Config{Size: 6})
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest("GET", "http://x"+path, nil)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkServeKeepAlive measures whole requests over one loopback
// keep-alive connection (server and client in this process).
func BenchmarkServeKeepAlive(b *testing.B) {
	for name, size := range map[string]int64{"6B": 6, "4KiB": 4096} {
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, ln, Config{Size: size}) }()
			defer func() { cancel(); <-done }()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
			r := bufio.NewReaderSize(c, 64<<10)
			body := make([]byte, size)
			b.SetBytes(size)
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				// Headers end with an empty line; the body follows.
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						b.Fatal(err)
					}
					if len(line) == 2 {
						break
					}
				}
				if _, err := io.ReadFull(r, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWorkerSchedule: a worker's services follow one another on the
// queue's clock. A request that waited for the worker starts when the
// previous service ended, however late the hand-over came, so the lag of
// timers and goroutines never lowers the capacity; a request arriving at
// an idle worker starts on arrival.
func TestWorkerSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := 5 * time.Millisecond
	var wk worker
	if end := wk.serve(t0, d); !end.Equal(t0.Add(d)) {
		t.Fatalf("idle worker: service ends %v, want %v", end.Sub(t0), d)
	}
	// Three requests queued behind it (arrived at t0+1ms), served back to
	// back: each ends 5 ms after the previous, wherever the goroutine that
	// took the worker ran.
	for i := 2; i <= 4; i++ {
		if end := wk.serve(t0.Add(time.Millisecond), d); !end.Equal(t0.Add(time.Duration(i) * d)) {
			t.Errorf("queued request %d: service ends at %v, want %v", i, end.Sub(t0), time.Duration(i)*d)
		}
	}
	// The worker then idles; a request arriving at t0+1s starts then.
	if end := wk.serve(t0.Add(time.Second), d); !end.Equal(t0.Add(time.Second + d)) {
		t.Errorf("after idling: service ends at %v, want %v", end.Sub(t0), time.Second+d)
	}
}

// TestIdleTimeout: keep-alive connections left idle after a request are
// closed by the server once IdleTimeout passes, so idle clients cannot hold
// its descriptors (and starve new clients) for good; a connection in use is
// not. Each read below is bounded by dial's 10 s deadline, far beyond the
// 200 ms timeout, so a timeout error means the server kept the connection.
func TestIdleTimeout(t *testing.T) {
	base := start(t, Config{IdleTimeout: 200 * time.Millisecond})
	var idle []*rawConn
	for range 40 {
		rc := dial(t, base)
		if resp, _ := rc.do(t, "GET", "/"); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("status %d close=%v, want a kept-alive 200", resp.StatusCode, resp.Close)
		}
		idle = append(idle, rc)
	}
	for i, rc := range idle {
		if _, err := rc.r.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("idle connection %d: read %v, want the server to close it (EOF)", i, err)
		}
	}
	// A new client is served.
	if resp, _ := dial(t, base).do(t, "GET", "/"); resp.StatusCode != 200 {
		t.Errorf("a new client after the idle ones: status %d", resp.StatusCode)
	}
}

// TestIdleTimeoutSetting: the zero Config closes idle connections after
// DefaultIdleTimeout, a negative one never.
func TestIdleTimeoutSetting(t *testing.T) {
	for _, c := range []struct{ cfg, want time.Duration }{{0, DefaultIdleTimeout}, {-1, 0}, {5 * time.Second, 5 * time.Second}} {
		if got := newServer(Config{IdleTimeout: c.cfg}, nil).IdleTimeout; got != c.want {
			t.Errorf("IdleTimeout %s: server's %s, want %s", c.cfg, got, c.want)
		}
	}
	if DefaultIdleTimeout <= 0 {
		t.Errorf("DefaultIdleTimeout %s: idle connections would never close", DefaultIdleTimeout)
	}
}
