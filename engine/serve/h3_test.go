package serve

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// startH3 runs ListenAndServe with cfg (TLS and H3 on, a free loopback
// port) and returns the address; when the test ends it stops the server
// and checks that both the TCP and the UDP port were let go.
func startH3(t *testing.T, cfg Config) string {
	t.Helper()
	cfg.TLS, cfg.H3, cfg.Addr = true, true, "127.0.0.1:0"
	ready := make(chan net.Addr, 1)
	cfg.Ready = func(a net.Addr) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, cfg) }()
	var addr string
	select {
	case a := <-ready:
		addr = a.String()
	case err := <-done:
		cancel()
		t.Fatalf("ListenAndServe: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ListenAndServe after cancel: %v", err)
		}
		// The sockets are closed: both ports can be bound again.
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Errorf("UDP %s still bound after shutdown: %v", addr, err)
		} else {
			pc.Close()
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("TCP %s still bound after shutdown: %v", addr, err)
		} else {
			ln.Close()
		}
	})
	return addr
}

// h3Client is a quic-go HTTP/3 client that trusts any certificate.
func h3Client(t *testing.T) *http.Client {
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestH3Serves: with H3 the server answers a quic-go HTTP/3 client on the
// UDP port of its TLS listener's number, the same generated body and
// /bytes/ path as over TLS, and the TLS responses advertise that port by
// Alt-Svc.
func TestH3Serves(t *testing.T) {
	addr := startH3(t, Config{Size: 100})
	c := h3Client(t)
	for path, n := range map[string]int{"/": 100, "/bytes/4KiB": 4096} {
		resp, err := c.Get("https://" + addr + path)
		if err != nil {
			t.Fatalf("HTTP/3 GET %s: %v", path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 3 || resp.StatusCode != 200 || string(body) != pattern(n) {
			t.Errorf("GET %s: %s status %d, %d bytes; want HTTP/3, 200 and %d bytes of the pattern", path, resp.Proto, resp.StatusCode, len(body), n)
		}
	}
	tc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer tc.CloseIdleConnections()
	resp, err := tc.Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("GET over TLS: %v", err)
	}
	resp.Body.Close()
	_, port, _ := net.SplitHostPort(addr)
	if got, want := resp.Header.Get("Alt-Svc"), `h3=":`+port+`"`; !strings.HasPrefix(got, want) {
		t.Errorf("Alt-Svc over TLS = %q, want it to start with %s", got, want)
	}
}

// TestH3Delay: the delay is waited before answering over HTTP/3 too.
func TestH3Delay(t *testing.T) {
	const delay = 20 * time.Millisecond
	addr := startH3(t, Config{Delay: delay})
	c := h3Client(t)
	if resp, err := c.Get("https://" + addr + "/"); err != nil { // the handshake, outside the timing
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	for range 3 {
		t0 := time.Now()
		resp, err := c.Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if el := time.Since(t0); el < delay || resp.StatusCode != 200 {
			t.Errorf("answered after %s with status %d; want at least the %s delay", el, resp.StatusCode, delay)
		}
	}
}

// TestH3Accepts0RTT: a client that resumes a session the server issued
// sends early data, and the server accepts it.
func TestH3Accepts0RTT(t *testing.T) {
	addr := startH3(t, Config{})
	cache := tls.NewLRUClientSessionCache(8)
	get := func() bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		qc, err := quic.DialAddrEarly(ctx, addr, &tls.Config{InsecureSkipVerify: true, ClientSessionCache: cache, NextProtos: []string{http3.NextProtoH3}}, nil)
		if err != nil {
			t.Fatalf("dialing: %v", err)
		}
		defer qc.CloseWithError(0, "")
		cc := (&http3.Transport{}).NewClientConn(qc)
		req, _ := http.NewRequestWithContext(ctx, http3.MethodGet0RTT, "https://"+addr+"/", nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return qc.ConnectionState().Used0RTT
	}
	if get() {
		t.Errorf("the first connection, with no session to resume, used 0-RTT")
	}
	if !get() {
		t.Errorf("the second connection, resuming the first one's session, did not use 0-RTT")
	}
}

// TestH3NeedsTLS: H3 without TLS is refused, saying why.
func TestH3NeedsTLS(t *testing.T) {
	if _, err := New(Config{H3: true}); err == nil || !strings.Contains(err.Error(), "always TLS") {
		t.Errorf("New(H3 without TLS) = %v, want an error saying QUIC is always TLS", err)
	}
}

// TestH3UDPPortTaken: when the UDP port of the number asked for is taken,
// ListenAndServe fails naming it, and leaves the TCP port free.
func TestH3UDPPortTaken(t *testing.T) {
	// The UDP port is taken here; the TCP port of the same number must be
	// free, and another process may hold it (tests of other packages run
	// at the same time): such a port is passed over for another.
	var addr string
	for try := 0; ; try++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		addr = pc.LocalAddr().String()
		err = ListenAndServe(context.Background(), Config{Addr: addr, TLS: true, H3: true})
		if err != nil && strings.Contains(err.Error(), "listen tcp "+addr) && try < 20 {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "UDP "+addr) {
			t.Fatalf("ListenAndServe with the UDP port taken = %v, want an error naming UDP %s", err, addr)
		}
		break
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("TCP %s not released after the UDP failure: %v", addr, err)
	} else {
		ln.Close()
	}
}

// TestH3ShutdownEndsDelayedRequests: a request waiting in the delay when
// the server stops is answered 503 over HTTP/3 (without the Connection
// header HTTP/3 forbids, which a client would reject), and the server
// returns.
func TestH3ShutdownEndsDelayedRequests(t *testing.T) {
	ready := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- ListenAndServe(ctx, Config{Addr: "127.0.0.1:0", TLS: true, H3: true, Delay: time.Hour, Ready: func(a net.Addr) { ready <- a }})
	}()
	var addr string
	select {
	case a := <-ready:
		addr = a.String()
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
	}
	got := make(chan *http.Response, 1)
	fail := make(chan error, 1)
	go func() {
		resp, err := h3Client(t).Get("https://" + addr + "/")
		if err != nil {
			fail <- err
			return
		}
		resp.Body.Close()
		got <- resp
	}()
	time.Sleep(100 * time.Millisecond) // let the request reach the handler
	cancel()
	select {
	case resp := <-got:
		if resp.StatusCode != 503 || resp.ProtoMajor != 3 {
			t.Errorf("%s status %d, want HTTP/3 503", resp.Proto, resp.StatusCode)
		}
	case err := <-fail:
		t.Errorf("the delayed request failed instead of a 503: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe: %v", err)
	}
}
