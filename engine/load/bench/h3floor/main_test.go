package main

import (
	"crypto/tls"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// testCert is net/http/httptest's certificate (for 127.0.0.1 and ::1) and
// its PEM, taken from a TLS server started and closed at once.
func testCert(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	return ts.TLS.Certificates[0], pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
}

// serveH3 starts quic-go's HTTP/3 server with h on host:0 (UDP) and
// returns its https:// base URL and the certificate's PEM.
func serveH3(t *testing.T, host string, h http.Handler) (string, []byte) {
	t.Helper()
	cert, certPEM := testCert(t)
	pc, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http3.Server{
		Handler:   h,
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
	}
	go func() { _ = srv.Serve(pc) }()
	t.Cleanup(func() {
		srv.Close()
		pc.Close()
	})
	return "https://" + pc.LocalAddr().String(), certPEM
}

// The floor counts a response when its body has been read to the end:
// against quic-go's own HTTP/3 server it counts no more responses than
// the server sent, and at most conns × streams fewer (the requests in
// flight when the load ended), each in its status class.
func TestFloorCountsResponses(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
	}{
		{"6 B", "hello\n"},
		{"64 KiB (many DATA frames and QUIC packets)", strings.Repeat("x", 64<<10)},
		{"no body", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int64
			base, _ := serveH3(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.ProtoMajor != 3 {
					http.Error(w, "want HTTP/3", http.StatusHTTPVersionNotSupported)
					return
				}
				served.Add(1)
				_, _ = w.Write([]byte(tc.body))
			}))
			const conns, streams = 2, 3
			res, err := run(base+"/x", conns, streams, 300*time.Millisecond, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The server also answered run's check, before the load; a
			// response counted has been served, but the server may have
			// served some that the load ended before reading.
			got, sent := res.done(), served.Load()-1
			if got == 0 || got > sent || sent-got > conns*streams {
				t.Fatalf("counted %d responses, the server sent %d in the load (want 1..%d, at most %d fewer)", got, sent, sent, conns*streams)
			}
			if res.status[2] != got {
				t.Fatalf("status classes %v: want all %d in 2xx", res.status, got)
			}
			if want := got * int64(len(tc.body)); res.bytes != want {
				t.Fatalf("%d body bytes, want %d (%d × %d)", res.bytes, want, got, len(tc.body))
			}
			if res.failed != 0 {
				t.Fatalf("%d connections failed", res.failed)
			}
			if res.cipher == "" || res.alpn != "h3" {
				t.Fatalf("cipher %q, ALPN %q: want a TLS 1.3 cipher and h3", res.cipher, res.alpn)
			}
			if res.cpu <= 0 || res.user > res.cpu {
				t.Fatalf("CPU time %v, user %v: want user ≤ total, total > 0", res.cpu, res.user)
			}
		})
	}
}

// Responses that are not 2xx are counted in their class (the load stops
// at none of them); only the check before the load wants a 200.
func TestFloorCountsStatusClasses(t *testing.T) {
	var served atomic.Int64
	base, _ := serveH3(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 1 {
			return // the check: 200
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	res, err := run(base+"/", 1, 2, time.Minute, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.status[5] != 10 || res.done() != 10 {
		t.Fatalf("status classes %v: want 10 in 5xx and nothing else", res.status)
	}
}

// With -n the floor stops after that many responses, shared by the
// connections (rounded up to a multiple of them).
func TestFloorRequestLimit(t *testing.T) {
	var served atomic.Int64
	base, _ := serveH3(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = w.Write([]byte("hello\n"))
	}))
	res, err := run(base+"/", 3, 4, time.Minute, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.done() != 102 || served.Load()-1 != 102 {
		t.Fatalf("counted %d, served %d in the load; want 102 (3 connections × 34)", res.done(), served.Load()-1)
	}
}

// A server that stops answering after the check ends the load a second
// after its duration, without a failure: the round trips waiting end
// with their connections.
func TestFloorServerStalls(t *testing.T) {
	var served atomic.Int64
	release := make(chan struct{})
	defer close(release)
	base, _ := serveH3(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 1 {
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	res, err := run(base+"/", 2, 2, 100*time.Millisecond, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.done() != 0 || res.failed != 0 {
		t.Fatalf("counted %d responses and %d failed connections; want none of either", res.done(), res.failed)
	}
}

// -cacert verifies: the server's own certificate passes, and the same
// certificate served on an address it does not name (127.0.0.2) fails.
func TestFloorCACert(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hello\n")) })
	base, certPEM := serveH3(t, "127.0.0.1", h)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tc, err := tlsConfig(ca)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := run(base+"/", 1, 1, time.Minute, 3, tc); err != nil || res.done() != 3 {
		t.Fatalf("verified load: %d responses, error %v; want 3, none", res.done(), err)
	}
	other, _ := serveH3(t, "127.0.0.2", h)
	if _, err := run(other+"/", 1, 1, time.Minute, 3, tc); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a certificate not for 127.0.0.2: error %v, want a certificate error", err)
	}
	// Without -cacert nothing is verified.
	if _, err := run(other+"/", 1, 1, time.Minute, 3, nil); err != nil {
		t.Fatalf("unverified: %v", err)
	}
}

func TestFloorRefuses(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:1/":   "want an https:// URL",
		"https://192.0.2.1:80/": "not a loopback address",
		"https://127.0.0.1/":    "want HOST:PORT",
	} {
		if _, err := run(raw, 1, 1, time.Millisecond, 0, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", raw, err, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	const u = "https://127.0.0.1:1/"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "want one URL"},
		{[]string{u, u}, "want one URL"},
		{[]string{"-c", "0", u}, "-c 0"},
		{[]string{"-m", "0", u}, "-m 0"},
		{[]string{"-m", "1001", u}, "-m 1001"},
		{[]string{"-t", "0", u}, "-t 0"},
		{[]string{"-d", "0s", u}, "-d 0s"},
		{[]string{"-n", "-1", u}, "-n -1"},
		{[]string{"-c", "many", u}, "invalid value"},
	} {
		_, err := parse(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	c, err := parse([]string{"-c", "3", "-m", "7", "-n", "9", u}, io.Discard)
	if err != nil || c.conns != 3 || c.streams != 7 || c.total != 9 || c.url != u {
		t.Fatalf("parse: %+v, %v", c, err)
	}
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{filepath.Join(dir, "missing.pem"): "no such file", notPEM: "no PEM certificate"} {
		if _, err := tlsConfig(file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("-cacert %s: error %v, want one containing %q", file, err, want)
		}
	}
}
