package load

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/serve"
)

// TestBytesOneDefinition: against benchflow's own server (HTTP/1.1 and
// HTTP/2 over TLS, HTTP/3 over QUIC on one port number), bytes count the
// same thing over every protocol — each response as its protocol frames
// it, headers and body, after TLS or QUIC: per response the body plus a
// header block of some dozens of bytes, never the body alone (HTTP/3
// counted only bodies) — and Transfer/sec is bytes over the measured
// duration for every protocol.
func TestBytesOneDefinition(t *testing.T) {
	const body = 1000
	url := startServeH3(t, serve.Config{Size: body})
	for _, proto := range []string{ProtoHTTP1, ProtoH2, ProtoH3} {
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: url + "/"}}, Protocol: proto,
			Connections: 2, Requests: 100, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		if res.Requests != 100 {
			t.Fatalf("%s: %d requests", proto, res.Requests)
		}
		per := res.Bytes / res.Requests
		// Headers: a status, content-length and -type, a date and an
		// Alt-Svc, with their framing: at least 15 bytes however
		// compressed (HTTP/2's two 9-byte frame headers and an HPACK
		// block mostly indexed), at most 300.
		if per < body+15 || per > body+300 {
			t.Errorf("%s: %d bytes per response, want the %d-byte body and its headers (15 to 300 bytes)", proto, per, body)
		}
		var b strings.Builder
		if err := WriteText(&b, res, false); err != nil {
			t.Fatal(err)
		}
		want := "Transfer/sec: " + strings.TrimSpace(fmtBytes(float64(res.Bytes)/res.Duration.Seconds()))
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), want) {
			t.Errorf("%s: summary lacks %q:\n%s", proto, want, b.String())
		}
		t.Logf("%s: %d bytes per response", proto, per)
	}
}

// TestH3HintWithoutHandshake: when no QUIC handshake completes — nothing
// listens on the UDP port — the error asks whether an HTTP/3 server
// listens there, whether the dials time out (a long -d), the duration
// ends first (a -d shorter than the timeout) or requests run out.
func TestH3HintWithoutHandshake(t *testing.T) {
	// A UDP port nobody answers on: held by a socket that reads nothing.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	url := "https://" + pc.LocalAddr().String() + "/"
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"-d shorter than the timeout", Options{Duration: 300 * time.Millisecond, Timeout: 5 * time.Second}},
		{"-d longer than the timeout", Options{Duration: 1500 * time.Millisecond, Timeout: 300 * time.Millisecond}},
		{"-n", Options{Requests: 2, Timeout: 300 * time.Millisecond}},
	} {
		opts := c.opts
		opts.Targets, opts.Protocol, opts.Connections = []Target{{URL: url}}, ProtoH3, 1
		_, err := Run(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), "is an HTTP/3 server listening on UDP there?") ||
			strings.Count(err.Error(), "listening on UDP") != 1 {
			t.Errorf("%s: %v, want the hint once", c.name, err)
		}
	}
}
