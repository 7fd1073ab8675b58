package load

// The UDP sockets of HTTP/3 connections. quic-go sizes each socket's
// receive and send buffers to 7 MiB when it wraps it (SO_RCVBUF and
// SO_SNDBUF up to net.core.rmem_max and wmem_max; as root with
// SO_RCVBUFFORCE and SO_SNDBUFFORCE past them), sends with GSO where the
// kernel has UDP_SEGMENT, and reads with recvmmsg (no GRO). The loader
// opens each connection's socket itself, so that what the kernel granted
// is read back from the socket the load uses, not guessed: the first
// connection's sizes and GSO are reported (Result.UDPRecvBuf, UDPSendBuf,
// UDPGSO), and quic-go's own one-line warning on standard error is
// replaced by the summary's advice (QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING,
// unless the environment sets it).

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"strconv"

	"github.com/quic-go/quic-go"
	"golang.org/x/sys/unix"
)

// h3QuietQuicGo turns quic-go's buffer warning off unless the environment
// says otherwise: the summary says the same with the sizes and what to do.
func h3QuietQuicGo() {
	const k = "QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING"
	if _, set := os.LookupEnv(k); !set {
		os.Setenv(k, "true")
	}
}

// h3DialOwn dials addr over a UDP socket of its own (as quic.DialAddr
// does: an unbound wildcard socket), which h3Hangup closes with the
// connection, and reads the socket's buffers back once per load.
func (c *conn) h3DialOwn(ctx context.Context, addr string, cfg *tls.Config, early bool) (*quic.Conn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero, Port: 0})
	if err != nil {
		return nil, err
	}
	r := c.r
	tr := &quic.Transport{Conn: udp}
	var qc *quic.Conn
	if early {
		qc, err = tr.DialEarly(ctx, ua, cfg, r.h3Config())
	} else {
		qc, err = tr.Dial(ctx, ua, cfg, r.h3Config())
	}
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, err
	}
	r.h3UDP.Do(func() { r.udpRecv, r.udpSend, r.udpGSO = udpSocketFacts(udp) })
	c.h3sock = func() {
		tr.Close()
		udp.Close()
	}
	return qc, nil
}

// h3Hangup closes the slot's QUIC connection, then its transport and
// UDP socket.
func (c *conn) h3Hangup(qc *quic.Conn) {
	qc.CloseWithError(0, "")
	if c.h3sock != nil {
		c.h3sock()
		c.h3sock = nil
	}
}

// udpSocketFacts reads a UDP socket's buffer sizes as the kernel reports
// them (twice what was set: the kernel counts its bookkeeping) and
// whether quic-go sends on it with GSO (the test quic-go makes: the
// kernel answers UDP_SEGMENT, and QUIC_GO_DISABLE_GSO is not set).
func udpSocketFacts(c *net.UDPConn) (recv, send int64, gso bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var gerr error
	rc.Control(func(fd uintptr) {
		n, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		if err == nil {
			recv = int64(n)
		}
		if n, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF); err == nil {
			send = int64(n)
		}
		_, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, udpSegment)
	})
	if off, err := strconv.ParseBool(os.Getenv("QUIC_GO_DISABLE_GSO")); err == nil && off {
		return recv, send, false
	}
	return recv, send, gerr == nil
}

// udpSegment is Linux's UDP_SEGMENT (GSO) socket option; elsewhere the
// getsockopt fails and GSO is reported off.
const udpSegment = 103
