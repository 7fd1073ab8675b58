package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLoadWhatWrkUsersType: what a wrk or h2load user types gets a
// located answer. -m 10 (h2load's streams) is refused as a method,
// naming --streams; methods that are tokens beginning with a letter pass.
// A load whose every response is ≥ 400 names the statuses and their
// counts. A load whose every first connect is refused stops at once, not
// after -d. -t above -c says so. "N requests in D" prints the measured
// time to the hundredth, as wrk.
func TestLoadWhatWrkUsersType(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/missing":
			http.NotFound(w, r)
		case r.URL.Path == "/mixed" && n.Add(1)%2 == 0:
			w.WriteHeader(503)
		case r.URL.Path == "/mixed":
			http.NotFound(w, r)
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()

	for _, m := range []string{"10", "1", "G ET", "GET/", "", "-X"} {
		_, errOut, code := runLoad(t, "-m", m, "-n", "5", srv.URL+"/")
		if code != 1 || !strings.Contains(errOut, "not an HTTP method") {
			t.Errorf("-m %q: exit %d, want 1 refusing it as a method:\n%s", m, code, errOut)
		}
		if regexp.MustCompile(`^\d+$`).MatchString(m) && !strings.Contains(errOut, "--streams "+m) {
			t.Errorf("-m %s: does not name --streams %s:\n%s", m, m, errOut)
		}
	}
	for _, m := range []string{"get", "PROPFIND", "M-SEARCH"} {
		if _, errOut, code := runLoad(t, "-m", m, "-n", "5", srv.URL+"/"); code != 0 {
			t.Errorf("-m %s: exit %d\n%s", m, code, errOut)
		}
	}

	_, errOut, code := runLoad(t, "-c", "2", "-n", "300", srv.URL+"/missing")
	if code != 1 || !strings.Contains(errOut, "all 300 responses had status >= 400: 404 × 300") {
		t.Errorf("all 404: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runLoad(t, "-c", "1", "-n", "300", srv.URL+"/mixed")
	if code != 1 || !strings.Contains(errOut, "all 300 responses had status >= 400: 404 × 150, 503 × 150") {
		t.Errorf("404 and 503: exit %d\n%s", code, errOut)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	// -d 10m: were the load not stopped at once, the test would time out.
	_, errOut, code = runLoad(t, "-c", "4", "-d", "10m", "http://"+closed+"/")
	if code != 1 || !strings.Contains(errOut, "stopped at once: the first connect of every connection was refused (is a server listening on "+closed+"?)") {
		t.Errorf("every connect refused: exit %d\n%s", code, errOut)
	}

	out, errOut, code := runLoad(t, "-t", "8", "-c", "2", "-n", "100", srv.URL+"/")
	if code != 0 || !strings.Contains(errOut, "-t 8 is above -c 2: 2 threads run") || !strings.Contains(out, "2 threads and 2 connections") {
		t.Errorf("-t 8 -c 2: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, _ := runLoad(t, "-c", "2", "-n", "100", srv.URL+"/"); strings.Contains(errOut, "above -c") {
		t.Errorf("the default -t 2 with -c 2 gets a note:\n%s", errOut)
	}

	out, errOut, code = runLoad(t, "-c", "2", "-d", "300ms", srv.URL+"/")
	if code != 0 || !regexp.MustCompile(`(?m)^  \d+ requests in \d+\.\d\ds, `).MatchString(out) {
		t.Errorf("-d 300ms: exit %d, want \"N requests in 0.30s\" (the measured time):\n%s%s", code, out, errOut)
	}
}
