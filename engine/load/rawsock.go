package load

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawSock is a socket of the goroutine engine (HTTP/1.1 over TLS or when
// chosen, and HTTP/2) whose reads and writes are sockRead and sockWrite:
// on Linux read(2) and write(2) by RawSyscall, which never give the
// scheduler's P away. Through Go's own Read and Write, a write to a
// loopback socket (which runs the receiver's TCP input and wakes it)
// lasts long enough for the runtime's monitor to hand the P to another
// thread, which then competes for the cores with the server under test
// (docs/performance.md, "Raw socket reads and writes"). Waiting for the
// socket and deadlines are still the netpoller's (syscall.RawConn).
type rawSock struct {
	net.Conn
	raw syscall.RawConn // nil: the Conn's own Read and Write
	fd  int32           // -1 unknown
	// The raw read's and write's callbacks and their arguments and
	// results, made once so that neither allocates (one reader and one
	// writer at a time per connection). readFn may be replaced by a
	// caller's own (h2Wire).
	readFn, writeFn func(fd uintptr) bool
	p               []byte
	n               int
	rerr            error
	wp              []byte
	wn              int
	werr            error
}

// init makes w read and write nc.
func (w *rawSock) init(nc net.Conn) {
	w.Conn, w.fd = nc, -1
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			w.raw, w.readFn, w.writeFn = rc, w.rawRead, w.rawWrite
			rc.Control(func(fd uintptr) { w.fd = int32(fd) })
		}
	}
}

// wrapRaw is dialVia's wrap for the goroutine engine's HTTP/1.1 sockets.
func wrapRaw(nc net.Conn) net.Conn {
	w := &rawSock{}
	w.init(nc)
	if w.raw == nil {
		return nc
	}
	return w
}

// rawRead reads into w.p (w.n, w.rerr), retrying when interrupted; it
// returns false (wait until readable) when nothing has arrived.
func (w *rawSock) rawRead(fd uintptr) bool {
	for {
		w.n, w.rerr = sockRead(int(fd), w.p)
		if w.rerr != syscall.EINTR {
			return w.rerr != syscall.EAGAIN
		}
	}
}

// rawWrite writes w.wp from w.wn on; it returns false (wait until
// writable) when the socket's buffer is full.
func (w *rawSock) rawWrite(fd uintptr) bool {
	for w.wn < len(w.wp) {
		n, err := sockWrite(int(fd), w.wp[w.wn:])
		switch err {
		case nil:
			w.wn += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			w.werr = err
			return true
		}
	}
	return true
}

// Read reads as net.Conn's Read does (io.EOF at the end, deadlines and
// a closed socket as its errors).
func (w *rawSock) Read(p []byte) (int, error) {
	if w.raw == nil || len(p) == 0 {
		return w.Conn.Read(p)
	}
	w.p = p
	err := w.raw.Read(w.readFn)
	n, rerr := w.n, w.rerr
	w.p, w.rerr = nil, nil
	switch {
	case err != nil: // a deadline, or the socket closed
		return 0, err
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: w.LocalAddr().Network(), Source: w.LocalAddr(), Addr: w.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes p whole, as net.Conn's Write does.
func (w *rawSock) Write(p []byte) (int, error) {
	if w.raw == nil {
		return w.Conn.Write(p)
	}
	w.wp, w.wn, w.werr = p, 0, nil
	err := w.raw.Write(w.writeFn)
	n, werr := w.wn, w.werr
	w.wp, w.werr = nil, nil
	switch {
	case err != nil: // a deadline, or the socket closed
		return n, err
	case werr != nil:
		return n, &net.OpError{Op: "write", Net: w.LocalAddr().Network(), Source: w.LocalAddr(), Addr: w.RemoteAddr(), Err: os.NewSyscallError("write", werr)}
	}
	return n, nil
}
