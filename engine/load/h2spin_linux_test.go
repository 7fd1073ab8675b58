//go:build linux

package load

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/benchflow/benchflow/engine/measure"

	"golang.org/x/sys/unix"
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
	r := &runner{start: time.Now(), h2spin: newH2Spin(time.Hour, 0)}
	r.conns = []*conn{{r: r, id: 0}, {r: r, id: 1}}
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
	go func() { done <- a.spin(r.conns[0]) }()
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
	if !a.spin(r.conns[0]) {
		t.Fatal("spin did not report the data waiting on its own socket")
	}

	// Unregistered: no spin at all.
	r.h2spin.remove(a)
	if a.spin(r.conns[0]) || a.events != nil {
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
	r := &runner{start: time.Now(), h2spin: newH2Spin(time.Millisecond, 0)}
	r.conns = []*conn{{r: r, id: 0}}
	defer r.h2spin.close()
	a, _ := spinPair(t, ln)
	r.h2spin.add(a, 0)
	r.conns[0].h2wire.Store(a)
	begin := time.Now()
	if a.spin(r.conns[0]) {
		t.Fatal("spin reported data on an idle socket")
	}
	if d := time.Since(begin); d < time.Millisecond {
		t.Fatalf("spin gave up after %v, before its limit of 1ms", d)
	}
	if n := r.conns[0].naps.Load(); n != 0 {
		t.Fatalf("%d naps without a nap set", n)
	}
}

// TestH2SpinNap: with a nap and no busy poll, a connection with nothing
// to read naps once (at least as long as asked), looks again and parks;
// what arrived during the nap is read instead.
func TestH2SpinNap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Long enough that the writer below, started a tenth of the way in,
	// is scheduled inside the nap even on a loaded machine.
	const nap = 500 * time.Millisecond
	r := &runner{start: time.Now(), h2spin: newH2Spin(0, nap)}
	r.conns = []*conn{{r: r, id: 0}}
	defer r.h2spin.close()
	a, aPeer := spinPair(t, ln)
	r.h2spin.add(a, 0)
	r.conns[0].h2wire.Store(a)
	c := r.conns[0]
	begin := time.Now()
	if a.spin(c) {
		t.Fatal("spin reported data on an idle socket")
	}
	if d := time.Since(begin); d < nap || c.naps.Load() != 1 || time.Duration(c.napTime.Load()) < nap {
		t.Fatalf("gave up after %v with %d naps lasting %v, want one nap of at least %v", d, c.naps.Load(), time.Duration(c.napTime.Load()), nap)
	}
	// A response that arrives during the nap is read after it. The nap
	// lasts at least nap, so a write done before begin+nap was there when
	// it ended; a writer that a loaded machine schedules only after that
	// tests nothing, and says so.
	wrote := make(chan time.Time, 1)
	begin = time.Now()
	go func() {
		time.Sleep(nap / 10)
		aPeer.Write([]byte("x"))
		wrote <- time.Now()
	}()
	got := a.spin(c)
	if w := <-wrote; !got {
		if w.After(begin.Add(nap)) {
			t.Skipf("the writer ran %v after the nap began, after the nap's %v: nothing arrived during it", w.Sub(begin), nap)
		}
		t.Fatalf("spin missed data written %v into its nap of %v", w.Sub(begin), nap)
	}
	if c.naps.Load() != 2 {
		t.Fatalf("%d naps in all, want 2", c.naps.Load())
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

// TestH2Nap: with Options.Nap, a connection that finds nothing to read
// naps (Result.Naps) before it waits, each nap lasts at least as long as
// asked, every request completes, and the epoll instance is closed when
// the load ends; without it no nap is taken.
func TestH2Nap(t *testing.T) {
	const nap = 30 * time.Microsecond
	for _, useTLS := range []bool{false, true} {
		// Each response is 1ms away: every wait for one starts with a nap.
		s := newH2TestServer(t, useTLS, 0, slowHello(time.Millisecond))
		before := epollFDs(t)
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
			Connections: 2, Threads: 1, Streams: 4, Requests: 400, Nap: nap})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 400 || res.Errors != 0 {
			t.Fatalf("tls %v: requests %d errors %d (%s)", useTLS, res.Requests, res.Errors, res.ErrorSummary())
		}
		if res.Naps == 0 || res.NapTime < time.Duration(res.Naps)*nap {
			t.Errorf("tls %v: %d naps lasting %s in all, want some, each at least %s", useTLS, res.Naps, res.NapTime, nap)
		}
		j := measure.ToJSON(res)
		if j.Naps != res.Naps || j.NapMeanUS < 30 {
			t.Errorf("tls %v: JSON naps %d, mean %gµs; want %d, at least 30µs", useTLS, j.Naps, j.NapMeanUS, res.Naps)
		}
		var txt strings.Builder
		if err := WriteText(&txt, res, false); err != nil || !strings.Contains(txt.String(), fmt.Sprintf("%d naps, ", res.Naps)) {
			t.Errorf("tls %v: the text summary does not show the naps (%v):\n%s", useTLS, err, txt.String())
		}
		if after := epollFDs(t); after != before {
			t.Errorf("tls %v: %d epoll instances before the load, %d after", useTLS, before, after)
		}
		res, err = Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
			Connections: 2, Threads: 1, Streams: 4, Requests: 100})
		if err != nil {
			t.Fatal(err)
		}
		txt.Reset()
		WriteText(&txt, res, false)
		if res.Naps != 0 || res.NapTime != 0 || strings.Contains(txt.String(), "naps") {
			t.Errorf("tls %v: without Nap, %d naps lasting %s", useTLS, res.Naps, res.NapTime)
		}
	}
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

// TestH2NapReceiveTime: with naps, a wire reads its socket with the
// kernel's receive times, and a response's end is when the kernel
// received it, not when the client read it: data written between before
// and after and read well after that is dated inside [before, after],
// clamped to the request's send time and the read's time. Without naps a
// wire keeps no receive time and the end is the read's time.
func TestH2NapReceiveTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := &runner{start: time.Now(), h2spin: newH2Spin(0, 20*time.Microsecond)}
	r.startWall = r.start
	defer r.h2spin.close()
	w, peer := spinPair(t, ln)
	r.h2spin.add(w, 0)
	if w.stamp == nil {
		t.Fatal("no receive times on a TCP socket with naps (SO_TIMESTAMPNS)")
	}
	buf := make([]byte, 64)
	// The kernel turns receive times on for the whole machine
	// asynchronously when a first socket asks: until then data comes
	// without one, and the end is the read's time.
	for i := 0; w.stamp.at.Load() == 0; i++ {
		if i == 100 {
			t.Fatal("no receive time on 100 reads")
		}
		peer.Write([]byte("x"))
		w.Read(buf)
		if w.stamp.at.Load() == 0 {
			if at, now := w.receivedAt(r, 0, time.Second), time.Second; at != now {
				t.Fatalf("a read without a receive time ends at %v, want the read's time %v", at, now)
			}
			time.Sleep(time.Millisecond)
		}
	}
	before := time.Since(r.start)
	if _, err := peer.Write([]byte("response")); err != nil {
		t.Fatal(err)
	}
	after := time.Since(r.start)
	time.Sleep(20 * time.Millisecond) // the client "naps": the data waits
	if n, err := w.Read(buf); err != nil || string(buf[:n]) != "response" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	now := time.Since(r.start)
	if at := w.receivedAt(r, 0, now); at < before || at > after {
		t.Errorf("received at %v, read at %v; want within the write, [%v, %v]", at, now, before, after)
	}
	if at := w.receivedAt(r, after+time.Millisecond, now); at != after+time.Millisecond {
		t.Errorf("a request sent after the data arrived ends at %v, want its send time %v", at, after+time.Millisecond)
	}
	if at := w.receivedAt(r, 0, before); at != before {
		t.Errorf("clamped to a read time of %v: %v", before, at)
	}

	plain, plainPeer := spinPair(t, ln)
	newH2Spin(0, 0).add(plain, 0) // no spin at all: nil
	sp := newH2Spin(time.Microsecond, 0)
	defer sp.close()
	sp.add(plain, 0)
	if plain.stamp != nil {
		t.Fatal("receive times without naps")
	}
	plainPeer.Write([]byte("x"))
	plain.Read(buf)
	if at := plain.receivedAt(r, 0, now); at != now {
		t.Errorf("without naps the end is the read's time %v, got %v", now, at)
	}
}

// TestCmsgTimestampNS reads SCM_TIMESTAMPNS out of control messages and
// nothing out of others or of truncated ones.
func TestCmsgTimestampNS(t *testing.T) {
	ts := unix.NsecToTimespec(1_700_000_000_123_456_789)
	b := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(ts))))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS
	h.SetLen(unix.CmsgLen(int(unsafe.Sizeof(ts))))
	*(*unix.Timespec)(unsafe.Pointer(&b[unix.CmsgLen(0)])) = ts
	if got := cmsgTimestampNS(b); got != ts.Nano() {
		t.Errorf("got %d, want %d", got, ts.Nano())
	}
	other := append([]byte(nil), b...)
	(*unix.Cmsghdr)(unsafe.Pointer(&other[0])).Type = unix.SCM_RIGHTS
	if got := cmsgTimestampNS(append(other, b...)); got != ts.Nano() {
		t.Errorf("after another message: got %d, want %d", got, ts.Nano())
	}
	for _, bad := range [][]byte{nil, b[:unix.CmsgLen(0)-1], b[:unix.CmsgLen(0)+4], other} {
		if got := cmsgTimestampNS(bad); got != 0 {
			t.Errorf("%d bytes: got %d, want 0", len(bad), got)
		}
	}
}
