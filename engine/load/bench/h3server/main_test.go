package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/quic-go/quic-go/http3"
)

// The server answers /6b and /64k over HTTP/3 with their bodies and
// lengths, and anything else with a 404; its self-signed certificate
// verifies for 127.0.0.1 against its own PEM (what -write-cert writes).
func TestServerBodies(t *testing.T) {
	cert, certPEM, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(cert)
	go func() { _ = srv.Serve(pc) }()
	defer func() {
		srv.Close()
		pc.Close()
	}()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("the certificate's PEM does not parse")
	}
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.Close()
	base := "https://" + pc.LocalAddr().String()
	for path, want := range map[string]struct {
		status int
		body   []byte
	}{
		"/6b":   {200, []byte("hello\n")},
		"/64k":  {200, body64k},
		"/nope": {404, nil},
	} {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: reading the body: %v", path, err)
		}
		if resp.StatusCode != want.status || resp.ProtoMajor != 3 {
			t.Fatalf("%s: %s %d, want HTTP/3 %d", path, resp.Proto, resp.StatusCode, want.status)
		}
		if want.body != nil && (!bytes.Equal(got, want.body) || resp.ContentLength != int64(len(want.body))) {
			t.Fatalf("%s: %d bytes (Content-Length %d), want %d", path, len(got), resp.ContentLength, len(want.body))
		}
	}
	if len(body64k) != 65536 || bytes.Count(body64k, body64k[:1]) > 1024 {
		t.Fatalf("the 64 KiB body: %d bytes, %d of its first byte", len(body64k), bytes.Count(body64k, body64k[:1]))
	}
}

func TestServeRefuses(t *testing.T) {
	for _, tc := range []struct {
		addr, cert, key string
		threads, args   int
		want            string
	}{
		{"192.0.2.1:8443", "", "", 1, 0, "not a loopback address"},
		{"127.0.0.1", "", "", 1, 0, "want HOST:PORT"},
		{"", "", "", 1, 0, "want HOST:PORT"},
		{"127.0.0.1:0", "c.pem", "", 1, 0, "-cert and -key go together"},
		{"127.0.0.1:0", "", "", 0, 0, "-t 0"},
		{"127.0.0.1:0", "", "", 1, 1, "no arguments"},
		{"127.0.0.1:0", "/nonexistent/c.pem", "/nonexistent/k.pem", 1, 0, "loading -cert and -key"},
	} {
		err := serve(tc.addr, tc.threads, tc.cert, tc.key, "", tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc, err, tc.want)
		}
	}
}
