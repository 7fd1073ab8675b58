//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/load/caddytest"
)

// TestLoadH3Caddy: the binary's `benchflow load --h3 -n 200` against a
// real Caddy (engine/load/caddytest; skips without Caddy, saying how to
// build it, except under CI=true): the text summary names HTTP/3 and 200
// requests, Caddy's access log has 200 requests over HTTP/3.0; with
// --json and --cacert (verifying Caddy's certificate) the 64 KiB body
// comes back 200 times without error.
func TestLoadH3Caddy(t *testing.T) {
	srv := caddytest.Start(t)
	before := len(srv.Access(t))
	out, err := runBin(t, t.TempDir(), "load", "--h3", "-n", "200", srv.URL+"/")
	if err != nil {
		t.Fatalf("load --h3: %v\n%s", err, out)
	}
	for _, want := range []string{"HTTP/3 over QUIC", "ALPN h3", "200 requests in"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not say %q:\n%s", want, out)
		}
	}
	es := srv.AccessSince(t, before, 200)
	h3 := 0
	for _, e := range es {
		if e.Request.Proto == "HTTP/3.0" && e.Status == 200 && e.Size == int64(len(caddytest.Small)) {
			h3++
		}
	}
	if len(es) != 200 || h3 != 200 {
		t.Errorf("Caddy logged %d requests, %d of them HTTP/3.0 200 with the %d-byte body: want 200 and 200", len(es), h3, len(caddytest.Small))
	}

	out, err = runBin(t, t.TempDir(), "load", "--h3", "-n", "200", "-c", "2", "--streams", "4", "--json", "--cacert", srv.CAFile, srv.URL+"/64k")
	if err != nil {
		t.Fatalf("load --h3 --json --cacert: %v\n%s", err, out)
	}
	var j struct {
		Requests int64            `json:"requests"`
		Errors   int64            `json:"errors"`
		Bytes    int64            `json:"bytes"`
		Status   map[string]int64 `json:"status"`
		Protocol string           `json:"protocol"`
		ALPN     string           `json:"alpn"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if j.Requests != 200 || j.Errors != 0 || j.Status["200"] != 200 || j.Protocol != "h3" || j.ALPN != "h3" {
		t.Errorf("--json: %+v: want 200 requests, 0 errors, 200 of status 200, protocol and ALPN h3", j)
	}
	if body := int64(len(caddytest.Large)); j.Bytes < 200*body || j.Bytes > 200*(body+1024) {
		t.Errorf("--json: bytes %d, want 200 bodies of %d bytes", j.Bytes, body)
	}
}

// TestLoadH3TCPOnly: `benchflow load --h3` against an HTTPS server with
// nothing on its UDP port exits 1 with an error that names the address,
// says the QUIC handshake got no answer and asks whether an HTTP/3 server
// listens on UDP there.
func TestLoadH3TCPOnly(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) }))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "https://")
	out, err := runBin(t, t.TempDir(), "load", "--h3", "-n", "2", "-c", "1", "--timeout", "300ms", srv.URL+"/")
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("load --h3 against a TCP-only server: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"no QUIC handshake with " + addr, "is an HTTP/3 server listening on UDP there?"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}
