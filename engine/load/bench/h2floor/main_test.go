package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

// The floor counts a response by the END_STREAM flag of its last frame:
// against a real HTTP/2 server over cleartext (prior knowledge) and over
// TLS, it counts no more responses than the server sent, and at most
// conns × streams fewer (the requests in flight when the load ended).
func TestFloorCountsResponses(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
		body string
	}{
		{"h2c, 6 B", false, "hello\n"},
		{"h2c, 40 KiB (DATA frames across reads)", false, strings.Repeat("x", 40<<10)},
		{"tls, 6 B", true, "hello\n"},
		{"h2c, no body (END_STREAM on HEADERS)", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.ProtoMajor != 2 {
					http.Error(w, "want HTTP/2", http.StatusHTTPVersionNotSupported)
					return
				}
				served.Add(1)
				if tc.body == "" {
					w.WriteHeader(http.StatusOK)
					return
				}
				_, _ = w.Write([]byte(tc.body))
			})
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewUnstartedServer(h)
				srv.EnableHTTP2 = true
				srv.StartTLS()
			} else {
				srv = httptest.NewServer(h2c.NewHandler(h, &http2.Server{}))
			}
			defer srv.Close()
			const conns, streams = 2, 3
			res, err := run(srv.URL+"/x", conns, streams, 300*time.Millisecond, 0)
			if err != nil {
				t.Fatal(err)
			}
			srv.Close() // every handler has returned
			// The server also answered run's check, before the load.
			got, sent := res.done, served.Load()-1
			if got == 0 || got > sent || sent-got > conns*streams {
				t.Fatalf("counted %d responses, the server sent %d in the load (want 1..%d, at most %d fewer)", got, sent, sent, conns*streams)
			}
			if res.failed != 0 {
				t.Fatalf("%d connections failed", res.failed)
			}
			if tc.tls != (res.cipher != "") {
				t.Fatalf("cipher %q for tls=%v", res.cipher, tc.tls)
			}
		})
	}
}

// With -n the floor stops after that many responses, shared by the
// connections (rounded up to a multiple of them).
func TestFloorRequestLimit(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = w.Write([]byte("hello\n"))
	}), &http2.Server{}))
	defer srv.Close()
	res, err := run(srv.URL+"/", 3, 4, time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if res.done != 102 || served.Load()-1 != 102 {
		t.Fatalf("counted %d, served %d in the load; want 102 (3 connections × 34)", res.done, served.Load()-1)
	}
}

func TestFloorRefuses(t *testing.T) {
	for raw, want := range map[string]string{
		"ftp://127.0.0.1:1/":   "want an https:// or http:// URL",
		"http://192.0.2.1:80/": "not a loopback address",
		"http://127.0.0.1/":    "want HOST:PORT",
	} {
		if _, err := run(raw, 1, 1, time.Millisecond, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", raw, err, want)
		}
	}
}

func TestHeaderBlockIntegers(t *testing.T) {
	// RFC 7541 C.1.2: 1337 with a 5-bit prefix is 31, 154, 10.
	if got := appendInt(nil, 5, 1337); string(got) != string([]byte{31, 154, 10}) {
		t.Fatalf("appendInt(1337) = %v", got)
	}
	long := "/" + strings.Repeat("p", 200)
	b := headerBlock("http", "127.0.0.1:1", long)
	if !strings.Contains(string(b), long) || b[0] != 0x82 || b[1] != 0x86 {
		t.Fatalf("header block %q", b)
	}
}
