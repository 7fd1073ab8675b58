package load

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"testing"
)

// TestConnectLineExplainsReopened: a server that closes each keep-alive
// connection after 5 requests (as nginx does at keepalive_requests) makes
// the loader open more connections than -c; the Connect line says how many
// were reopened and why, and its parts add up to the count.
func TestConnectLineExplainsReopened(t *testing.T) {
	const perConn = 5
	s := newRawServer(t, func(c net.Conn) {
		n := 0
		readRequests(c, func(w io.Writer, _, _ string) bool {
			n++
			resp := okResponse
			if n == perConn {
				resp = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 6\r\n\r\nhello\n"
			}
			_, err := io.WriteString(w, resp)
			return err == nil && n < perConn
		})
	})
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 4, Threads: 1, Requests: 200})
	if res.Errors != 0 {
		t.Fatalf("errors: %s", res.ErrorSummary())
	}
	var b bytes.Buffer
	if err := WriteText(&b, res, true); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Connect: (\d+) connections \((\d+) \+ (\d+) reopened after the server closed them: keep-alive limit\?\), mean`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("no explained Connect line:\n%s", b.String())
	}
	total, _ := strconv.Atoi(m[1])
	first, _ := strconv.Atoi(m[2])
	again, _ := strconv.Atoi(m[3])
	if first+again != total || first != 4 || int64(again) != res.Reconnects || total != int(s.accepted.Load()) {
		t.Errorf("Connect line %q: want 4 + the %d reconnects = the %d connections the server accepted", m[0], res.Reconnects, s.accepted.Load())
	}
	// 200 requests, 5 per connection: about 40 connections.
	if total < 200/perConn || total > 200/perConn+4 {
		t.Errorf("%d connections for 200 requests at %d per connection", total, perConn)
	}

	// Without reconnects the line is as before; with errors the reason
	// says so.
	res.Reconnects = 0
	b.Reset()
	WriteText(&b, res, true)
	if !regexp.MustCompile(fmt.Sprintf(`Connect: %d connections, mean`, total)).MatchString(b.String()) {
		t.Errorf("no reconnects: Connect line changed:\n%s", b.String())
	}
	res.Reconnects, res.ErrorsBy = int64(again), map[string]int64{"read": 3}
	b.Reset()
	WriteText(&b, res, true)
	if !bytes.Contains(b.Bytes(), []byte("reopened after the server closed them (keep-alive limit?) or after an error)")) {
		t.Errorf("with read errors:\n%s", b.String())
	}
}
