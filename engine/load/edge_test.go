package load

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An open loop at a rate so low that every slot's next send falls after
// the end still lasts its whole duration, and reports the rate offered:
// -R 2 -c 2 -d 1.5s sends at 0, 0.5 and 1.0 s, i.e. 3 requests in 1.5 s.
func TestOpenLoopLowRateRunsFullDuration(t *testing.T) {
	s := okServer(t)
	defer s.Close()
	res := run(t, Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 2, Threads: 1, Rate: 2, Duration: 1500 * time.Millisecond})
	if res.Duration != 1500*time.Millisecond || res.Requests != 3 || res.RPS() != 2 {
		t.Errorf("duration %v, %d requests, %.2f req/s; want 1.5s, 3 requests, 2 req/s", res.Duration, res.Requests, res.RPS())
	}
}

// More connections than RLIMIT_NOFILE allows fail before any connect,
// naming the limit, instead of spinning on EMFILE connect errors.
func TestConnectionsOverFileLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	lim := old
	lim.Cur = 128
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, err = Run(t.Context(), Options{Targets: []Target{{URL: "http://" + ln.Addr().String() + "/"}}, Connections: 200, Requests: 10})
	if err == nil || !strings.Contains(err.Error(), "RLIMIT_NOFILE") || !strings.Contains(err.Error(), "200 connections") {
		t.Fatalf("err = %v, want one naming the file limit", err)
	}
	select {
	case <-accepted:
		t.Error("a connection was made before the limit was checked")
	default:
	}
	// Within the limit it runs.
	if _, err := Run(t.Context(), Options{Targets: []Target{{URL: "http://127.0.0.1:1/"}}, Connections: 50, Requests: 1}); err != nil && strings.Contains(err.Error(), "RLIMIT_NOFILE") {
		t.Errorf("50 connections under 128: %v", err)
	}
}

// A closed loop whose connects keep failing backs off (1 ms doubling to
// 100 ms per connection) rather than spinning: 4 connections for 1 s make
// at most a few dozen attempts each. Without the back-off they make tens
// of thousands; a slower machine only makes fewer. The server answers
// each connection's first request, closing it, then goes away: a load
// whose first connects are all refused stops at once instead
// (TestRefusedConnections).
func TestConnectErrorsBackOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() {
		for range 4 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go respondOnce(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		}
		ln.Close() // then nothing listens: every connect is refused
	}()
	defer ln.Close()
	res, err := Run(t.Context(), Options{Targets: []Target{{URL: "http://" + addr + "/"}}, Connections: 4, Threads: 1, Duration: time.Second})
	if err != nil || res == nil || res.Requests == 0 || strings.Contains(fmt.Sprint(err), "stopped at once") {
		t.Fatalf("err = %v, want the first requests answered, then connect errors", err)
	}
	if n := res.ErrorsBy["connect"]; n == 0 || n > 4*40 {
		t.Errorf("%d connect errors from 4 connections in 1s, want 1..160 (backing off)", n)
	}
}
