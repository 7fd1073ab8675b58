//go:build linux

package load

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// spinPair returns the client side of a loopback TCP connection wrapped
// as an h2Wire, and the server side to write to.
func spinPair(t *testing.T, ln net.Listener) (*h2Wire, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	w := &h2Wire{}
	w.wrap(c)
	if w.fd < 0 {
		t.Fatal("no descriptor for a TCP connection")
	}
	return w, s
}

// TestH2SpinYieldsToParked: the HTTP/2 busy poll reports data on its own
// socket, and stops (park) as soon as a connection parked in the
// netpoller has data waiting, however long the limit: the runtime wakes
// a parked goroutine only when nothing else runs, so a spin that went on
// would delay its response. The limit here is an hour: a spin that did
// not stop would fail the test by its timeout.
func TestH2SpinYieldsToParked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := &runner{start: time.Now(), conns: []*conn{{id: 0}, {id: 1}}, h2spin: newH2Spin(time.Hour)}
	if r.h2spin == nil {
		t.Fatal("no epoll instance for the busy poll")
	}
	defer r.h2spin.close()
	a, aPeer := spinPair(t, ln)
	b, bPeer := spinPair(t, ln)
	for i, w := range []*h2Wire{a, b} {
		r.h2spin.add(w, i)
		r.conns[i].h2wire.Store(w)
		if w.events == nil {
			t.Fatalf("socket %d not registered", i)
		}
	}

	// b is parked with a response waiting: a stops spinning.
	b.parked.Store(true)
	bPeer.Write([]byte("x"))
	done := make(chan bool, 1)
	go func() { done <- a.spin(r) }()
	select {
	case got := <-done:
		if got {
			t.Fatal("spin reported data on a socket that has none")
		}
	case <-time.After(time.Minute):
		t.Fatal("spin went on while a parked connection had data waiting")
	}

	// b runs (not parked): its data no longer stops a, whose own data
	// ends the spin with true.
	b.parked.Store(false)
	aPeer.Write([]byte("y"))
	if !a.spin(r) {
		t.Fatal("spin did not report the data waiting on its own socket")
	}

	// Unregistered: no spin at all.
	r.h2spin.remove(a)
	if a.spin(r) || a.events != nil {
		t.Fatal("an unregistered socket still spins")
	}
}

// TestH2SpinLimit: with nothing to read anywhere, the busy poll gives up
// after its limit.
func TestH2SpinLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := &runner{start: time.Now(), conns: []*conn{{id: 0}}, h2spin: newH2Spin(time.Millisecond)}
	defer r.h2spin.close()
	a, _ := spinPair(t, ln)
	r.h2spin.add(a, 0)
	r.conns[0].h2wire.Store(a)
	begin := time.Now()
	if a.spin(r) {
		t.Fatal("spin reported data on an idle socket")
	}
	if d := time.Since(begin); d < time.Millisecond {
		t.Fatalf("spin gave up after %v, before its limit of 1ms", d)
	}
}

// epollFDs counts the process's epoll instances.
func epollFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); l == "anon_inode:[eventpoll]" {
			n++
		}
	}
	return n
}

// TestH2BusyPoll: loads over h2c and h2 with --busy-poll complete every
// request without errors, multiplexed, and the busy poll's epoll instance
// is closed when the load ends.
func TestH2BusyPoll(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		s := newH2TestServer(t, useTLS, 0, slowHello(time.Millisecond))
		before := epollFDs(t)
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
			Connections: 4, Threads: 1, Streams: 8, Requests: 4000, BusyPoll: 200 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 4000 || res.Errors != 0 {
			t.Fatalf("tls %v: requests %d errors %d (%s)", useTLS, res.Requests, res.Errors, res.ErrorSummary())
		}
		if m := s.maxIn.Load(); m <= 4 {
			t.Errorf("tls %v: at most %d requests in flight on 4 connections", useTLS, m)
		}
		if after := epollFDs(t); after != before {
			t.Errorf("tls %v: %d epoll instances before the load, %d after", useTLS, before, after)
		}
	}
}
