package load

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/measure"
)

// udpFDs counts the process's open UDP sockets (lines of /proc/net/udp
// and udp6 whose inode is one of our fds').
func udpFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	mine := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if fs := strings.Fields(line); len(fs) > 9 && mine[fs[9]] {
				n++
			}
		}
	}
	return n
}

// sizedAsQuicGo is a UDP socket sized the way quic-go sizes its own
// (7 MiB asked for; past net.core.*mem_max with the FORCE options where
// the process may), read back: what a load's sockets should report.
func sizedAsQuicGo(t *testing.T) (recv, send int64, gso bool) {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadBuffer(measure.UDPWantBuffer)
	c.SetWriteBuffer(measure.UDPWantBuffer)
	rc, _ := c.SyscallConn()
	rc.Control(func(fd uintptr) {
		if n, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); n < measure.UDPWantBuffer {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, measure.UDPWantBuffer)
		}
		if n, _ := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF); n < measure.UDPWantBuffer {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, measure.UDPWantBuffer)
		}
	})
	r, s, g := udpSocketFacts(c)
	return r, s, g
}

// TestH3UDPSockets: an HTTP/3 load reports its UDP sockets' buffers as a
// socket sized as quic-go sizes them reads back, GSO as the kernel
// answers UDP_SEGMENT, the summary's line (and the advice exactly when
// the buffers are short), the JSON keys; and it leaves no UDP socket
// open, with keep-alive and with a connection per request.
func TestH3UDPSockets(t *testing.T) {
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	wantRecv, wantSend, wantGSO := sizedAsQuicGo(t)
	if wantRecv == 0 || wantSend == 0 {
		t.Fatalf("a sized UDP socket reads back %d/%d", wantRecv, wantSend)
	}
	for _, close := range []bool{false, true} {
		before := udpFDs(t)
		res, err := Run(context.Background(), Options{
			Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 2, Streams: 1, Requests: 40, Close: close, Timeout: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 40 || res.Errors != 0 {
			t.Fatalf("close=%v: requests %d, errors %d (%s)", close, res.Requests, res.Errors, res.ErrorSummary())
		}
		if after := udpFDs(t); after != before {
			t.Errorf("close=%v: %d UDP sockets open before the load, %d after", close, before, after)
		}
		if res.UDPRecvBuf != wantRecv || res.UDPSendBuf != wantSend || res.UDPGSO != wantGSO {
			t.Errorf("close=%v: udp receive/send/gso %d/%d/%v, want %d/%d/%v (a socket sized as quic-go sizes it)",
				close, res.UDPRecvBuf, res.UDPSendBuf, res.UDPGSO, wantRecv, wantSend, wantGSO)
		}
		var b strings.Builder
		if err := WriteText(&b, res, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "UDP buffers:  receive "+fmtBytes(float64(wantRecv))) {
			t.Errorf("close=%v: no UDP buffers line with %s:\n%s", close, fmtBytes(float64(wantRecv)), b.String())
		}
		short := wantRecv < measure.UDPWantBuffer || wantSend < measure.UDPWantBuffer
		if got := strings.Contains(b.String(), UDPBufferAdvice); got != short {
			t.Errorf("close=%v: advice printed %v, want %v (buffers %d/%d):\n%s", close, got, short, wantRecv, wantSend, b.String())
		}
		j := measure.ToJSON(res)
		if j.UDPRecvBuf != wantRecv || j.UDPSendBuf != wantSend || j.UDPGSO == nil || *j.UDPGSO != wantGSO {
			t.Errorf("close=%v: JSON udp fields %d/%d/%v", close, j.UDPRecvBuf, j.UDPSendBuf, j.UDPGSO)
		}
	}
}

// TestUDPBufferAdvice: short buffers (either) print the advice; full ones
// or none read do not.
func TestUDPBufferAdvice(t *testing.T) {
	for _, c := range []struct {
		recv, send int64
		want       bool
	}{{0, 0, false}, {416 << 10, 416 << 10, true}, {14 << 20, 416 << 10, true}, {14 << 20, 14 << 20, false}, {7 << 20, 7 << 20, false}} {
		res := &Result{Protocol: ProtoH3, UDPRecvBuf: c.recv, UDPSendBuf: c.send}
		var b strings.Builder
		WriteText(&b, res, false)
		if got := strings.Contains(b.String(), "WARNING: "+UDPBufferAdvice); got != c.want {
			t.Errorf("buffers %d/%d: advice %v, want %v:\n%s", c.recv, c.send, got, c.want, b.String())
		}
		if got := strings.Contains(b.String(), "UDP buffers:"); got != (c.recv > 0) {
			t.Errorf("buffers %d/%d: UDP buffers line %v", c.recv, c.send, got)
		}
	}
}

// TestH3SummaryStreams: the summary's protocol line counts streams in the
// singular for one.
func TestH3SummaryStreams(t *testing.T) {
	for n, want := range map[int]string{1: "HTTP/3 over QUIC, 1 stream at a time per connection\n", 8: "HTTP/3 over QUIC, 8 concurrent streams per connection\n"} {
		var b strings.Builder
		WriteText(&b, &Result{Protocol: ProtoH3, Streams: n}, false)
		if !strings.Contains(b.String(), want) {
			t.Errorf("streams %d: want %q in:\n%s", n, want, b.String())
		}
	}
}
