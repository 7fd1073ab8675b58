package load

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
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
