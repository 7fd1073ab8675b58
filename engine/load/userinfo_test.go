package load

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A target URL's user-info is sent as "Authorization: Basic …" and never
// shows in the result (its summary, JSON and tables).
func TestUserinfoIsSentAsBasicAuthAndRedacted(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		mu.Lock()
		if ok {
			got = append(got, user+":"+pass)
		} else {
			got = append(got, "(none)")
		}
		mu.Unlock()
	}))
	defer srv.Close()
	target := strings.Replace(srv.URL, "http://", "http://alice:hunter22@", 1) + "/x"
	res := run(t, Options{Targets: []Target{{URL: target}}, Connections: 1, Requests: 3})
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, g := range got {
		if g != "alice:hunter22" {
			t.Fatalf("server saw credentials %q, want alice:hunter22", g)
		}
	}
	var b strings.Builder
	if err := WriteText(&b, res, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "hunter22") || strings.Contains(strings.Join(res.Targets, " "), "hunter22") {
		t.Fatalf("the password shows in the result:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "http://(sensitive)@") {
		t.Errorf("summary does not show the redacted URL:\n%s", b.String())
	}
}

// A server ending its header lines with a bare LF is read leniently (RFC
// 9112 §2.2), on both engines: its responses count, none times out.
func TestBareLFResponses(t *testing.T) {
	s := fixedResponse(t, "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false)
	defer s.Close()
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 2, Threads: 1, Requests: 50, Timeout: 2 * time.Second})
	if res.Requests < 50 || res.Errors != 0 || res.Status[200] < 50 {
		t.Fatalf("requests %d, errors %d (%v), status %v; want 50 ok", res.Requests, res.Errors, res.ErrorsBy, res.Status)
	}
}
