//go:build unix

package load

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/load/caddytest"
)

// startCaddy starts a real Caddy (engine/load/caddytest): it skips, saying
// how to build Caddy, when there is none (fails under CI=true), and in the
// passes of make test that force the epoll or uring engine: TLS and QUIC
// loads run on goroutines whatever the engine, the first pass ran these.
func startCaddy(t *testing.T) *caddytest.Server {
	t.Helper()
	if e := os.Getenv(pollEngineEnv); e == EngineEpoll || e == EngineUring {
		t.Skipf("%s=%s: TLS and QUIC loads run on goroutines, tested in the other passes", pollEngineEnv, e)
	}
	return caddytest.Start(t)
}

// caddyProtocols are the three protocols Caddy serves on its one port:
// the load's protocol, the ALPN benchflow should negotiate, and the
// protocol Caddy's access log should name for each request.
var caddyProtocols = []struct {
	name, protocol, alpn, logProto string
	streams                        int
}{
	{"http1.1", "", "http/1.1", "HTTP/1.1", 1},
	{"h2", ProtoH2, "h2", "HTTP/2.0", 4},
	{"h3", ProtoH3, "h3", "HTTP/3.0", 4},
}

// TestCaddy: closed-loop loads of 300 requests over HTTP/1.1 (TLS), HTTP/2
// and HTTP/3 against a real Caddy, of its 6-byte and 64 KiB bodies,
// verifying its certificate (--cacert): every request is answered 200
// without error, the bytes read cover every body (and no more than a
// header section's worth per response besides), the negotiated ALPN is
// the protocol's, and Caddy's access log has exactly the load's requests,
// each over that protocol (HTTP/3.0 for h3: QUIC, not a fallback to TCP),
// each with the whole body written.
func TestCaddy(t *testing.T) {
	srv := startCaddy(t)
	t.Logf("Caddy %s at %s", srv.Version, srv.URL)
	const n = 300
	for _, p := range caddyProtocols {
		for _, body := range []struct {
			path string
			size int64
		}{{"/6b", int64(len(caddytest.Small))}, {"/64k", int64(len(caddytest.Large))}} {
			t.Run(p.name+body.path, func(t *testing.T) {
				before := len(srv.Access(t))
				res, err := Run(context.Background(), Options{
					Targets: []Target{{URL: srv.URL + body.path}}, Protocol: p.protocol, Connections: 2, Streams: p.streams,
					Requests: n, Timeout: 10 * time.Second, CACert: srv.CAFile,
				})
				if err != nil {
					t.Fatal(err)
				}
				if res.Requests != n || res.Errors != 0 || res.Status[200] != n || len(res.Status) != 1 {
					t.Fatalf("requests %d, errors %d (%s), statuses %v: want %d, 0, all 200", res.Requests, res.Errors, res.ErrorSummary(), res.Status, n)
				}
				// Result.Bytes counts bodies and headers over every protocol; a
				// header section of Caddy's is well under 1 KiB.
				if lo, hi := n*body.size, n*(body.size+1024); res.Bytes < lo || res.Bytes > hi {
					t.Errorf("bytes read %d, want %d bodies of %d bytes: between %d and %d", res.Bytes, n, body.size, lo, hi)
				}
				wantProto := p.protocol
				if wantProto == "" {
					wantProto = ProtoHTTP1
				}
				if res.Protocol != wantProto || res.ALPN != p.alpn || res.TLSVersion != "TLS 1.3" {
					t.Errorf("protocol %q, ALPN %q, TLS %q: want %q, %q, TLS 1.3", res.Protocol, res.ALPN, res.TLSVersion, wantProto, p.alpn)
				}
				es := srv.AccessSince(t, before, n)
				if len(es) != n {
					t.Fatalf("Caddy logged %d requests, want the load's %d", len(es), n)
				}
				bad := map[string]int{}
				for _, e := range es {
					if e.Request.Proto != p.logProto || e.Request.TLS.Proto != p.alpn || e.Request.URI != body.path || e.Status != 200 || e.Size != body.size {
						bad[fmt.Sprintf("%s (ALPN %s) %s: %d, %d bytes", e.Request.Proto, e.Request.TLS.Proto, e.Request.URI, e.Status, e.Size)]++
					}
				}
				if len(bad) > 0 {
					t.Errorf("Caddy logged requests other than %s (ALPN %s) %s: 200, %d bytes: %v", p.logProto, p.alpn, body.path, body.size, bad)
				}
			})
		}
	}
}

// TestCaddyCertificate: benchflow verifies Caddy's certificate only when
// given a CA (as for TLS without Caddy): against another CA every request
// of HTTP/1.1 and HTTP/3 fails on the certificate and Caddy serves none;
// without a CA (no verification, as wrk) the load succeeds.
func TestCaddyCertificate(t *testing.T) {
	srv := startCaddy(t)
	for _, p := range []string{"", ProtoH3} {
		before := len(srv.Access(t))
		res, err := Run(context.Background(), Options{
			Targets: []Target{{URL: srv.URL + "/6b"}}, Protocol: p, Connections: 1, Requests: 3, Timeout: 5 * time.Second, CACert: srv.OtherCAFile,
		})
		if err == nil || res == nil || res.Requests != 0 || res.Errors != 3 {
			t.Fatalf("protocol %q against another CA: result %+v, error %v: want 3 failed requests and an error", p, res, err)
		}
		if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("protocol %q against another CA: error %q does not name the certificate", p, err)
		}
		if es := srv.Access(t)[before:]; len(es) != 0 {
			t.Errorf("protocol %q against another CA: Caddy served %d requests", p, len(es))
		}
		res, err = Run(context.Background(), Options{
			Targets: []Target{{URL: srv.URL + "/6b"}}, Protocol: p, Connections: 1, Requests: 20, Timeout: 5 * time.Second,
		})
		if err != nil || res.Requests != 20 || res.Errors != 0 {
			t.Fatalf("protocol %q without verification: result %+v, error %v: want 20 requests, no error", p, res, err)
		}
	}
}

// TestCaddyChecks: response checks over HTTP/2 and HTTP/3 against a real
// Caddy (its HPACK and QPACK encoders, not Go's): its 64 KiB body, many
// DATA frames, passes a size, a body text and a header check on every
// request, and a wrong size makes every response a check error.
func TestCaddyChecks(t *testing.T) {
	srv := startCaddy(t)
	text := string(caddytest.Large[len(caddytest.Large)-40:])
	for _, p := range caddyProtocols[1:] {
		t.Run(p.name, func(t *testing.T) {
			opts := Options{Targets: []Target{{URL: srv.URL + "/64k"}}, Protocol: p.protocol, Connections: 2, Streams: p.streams,
				Requests: 100, Timeout: 10 * time.Second, CACert: srv.CAFile,
				Checks: []string{"status==200", fmt.Sprintf("size==%d", len(caddytest.Large)), "body contains " + text, "header server ~ (?i)caddy"}}
			res, err := Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 100 || res.Errors != 0 {
				t.Fatalf("%d requests, %d errors (%s): want 100 passing every check", res.Requests, res.Errors, res.ErrorSummary())
			}
			opts.Checks = []string{fmt.Sprintf("size==%d", len(caddytest.Large)-1)}
			res, err = Run(context.Background(), opts)
			if res == nil {
				t.Fatalf("a wrong size: no result (%v)", err)
			}
			want := fmt.Sprintf("a body of %d bytes", len(caddytest.Large))
			if res.ErrorsBy["check"] != 100 || !strings.Contains(res.ErrorSample["check"], want) {
				t.Errorf("a wrong size: %+v check errors, sample %q; want 100 and %q", res.ErrorsBy, res.ErrorSample["check"], want)
			}
		})
	}
}
