package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestH3AgainstTCPOnly: HTTP/3 against a server that listens on TCP only
// (HTTPS, nothing on its UDP port) fails every request of the budget
// without a response, and the load's error names the address and asks
// whether an HTTP/3 server listens on UDP there (a QUIC Initial to a
// closed UDP port gets no answer: the handshake times out).
func TestH3AgainstTCPOnly(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) }))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "https://")
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: srv.URL + "/"}}, Protocol: ProtoH3, Connections: 1, Requests: 2, Timeout: 300 * time.Millisecond,
	})
	if err == nil {
		t.Fatalf("HTTP/3 against a TCP-only server did not fail: %+v", res)
	}
	for _, want := range []string{"all 2 requests failed", "no QUIC handshake with " + addr, "is an HTTP/3 server listening on UDP there?"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if res == nil || res.Requests != 0 || res.Errors != 2 || res.ErrorsBy["timeout"] != 2 {
		t.Fatalf("result %+v: want no responses and 2 timeouts", res)
	}
}
