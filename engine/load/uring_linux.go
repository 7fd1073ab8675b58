//go:build linux

package load

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring engine: the event loops of poll_linux.go, with their slot
// state machine, schedule, timeouts and measurements, but their I/O goes
// through one io_uring per loop (ring_linux.go) instead of epoll and
// read/write calls. Each connection keeps one multishot receive armed
// that fills buffers from a provided-buffer ring; a request is one send
// entry; connects, cancels and closes are entries too. A loop iteration
// submits everything it queued and waits for completions in one
// io_uring_enter, so the system calls per request fall from about two to
// a share of one per batch. Completions run only when the loop enters
// the ring (DEFER_TASKRUN), on the loop's own locked OS thread.
//
// A response is parsed straight from the provided buffer; only bytes the
// parser cannot use yet (a header block split across receives) are copied
// into the slot's read buffer, which the parser then reads as the epoll
// engine's does.

// Operations, in the top bits of an entry's user data.
const (
	uopConnect = iota + 1
	uopSend
	uopRecv
	uopWake
	uopCancel
	uopClose
)

// User data: slot index (24 bits), endpoint (16), connection serial (20),
// operation (4).
const (
	uMaxSlots     = 1 << 24
	uMaxEndpoints = 1 << 16
	uSerialMask   = 1<<20 - 1
)

func udata(op int, idx int32, ep int, serial int32) uint64 {
	return uint64(uint32(idx)) | uint64(uint16(ep))<<24 | uint64(uint32(serial)&uSerialMask)<<40 | uint64(op)<<60
}

func splitUdata(u uint64) (op int, idx int32, ep int, serial int32) {
	return int(u >> 60), int32(u & (uMaxSlots - 1)), int(uint16(u >> 24)), int32((u >> 40) & uSerialMask)
}

// uend values: the connection's receive is live; otherwise it ended with
// 0 (the peer closed) or -errno.
const uLive = 1

// uringState is what a loop on the uring engine adds to ploop.
type uringState struct {
	rg      *ring
	ts      unix.Timespec
	pending int // sends, connects and receives in flight (for shutdown)
}

// Ring geometry per loop, from its slot count.
func ringSizes(slots int) (sq, cq uint32, nbuf int) {
	sq = pow2(uint32(min(max(2*slots+16, 64), maxRingEntries)))
	nbuf = int(pow2(uint32(min(max(4*slots, 64), 1024))))
	cq = pow2(uint32(min(nbuf+4*slots+64, 2*maxRingEntries)))
	return sq, cq, nbuf
}

func pow2(n uint32) uint32 {
	p := uint32(1)
	for p < n {
		p <<= 1
	}
	return p
}

// autoUring reports whether the automatic choice takes the uring engine
// (where it runs) for a load: for --close loads, where it measured 5-27%
// less client CPU per request than epoll; keep-alive loads stay on epoll,
// which costs the same for small bodies and 13% less for 1 MiB ones
// (docs/performance.md).
func autoUring(o *Options) bool { return o.Close }

// uringCheck reports whether the uring engine can run here (probeRing,
// once per process). Tests replace it to force the fallback.
var uringCheck = func() error {
	probeOnce.Do(func() {
		runtime.LockOSThread() // the probe ring is single-issuer
		defer runtime.UnlockOSThread()
		probeErr = probeRing()
	})
	return probeErr
}

var (
	probeOnce sync.Once
	probeErr  error
)

// UringAvailable reports why the io_uring engine cannot run on this
// machine (nil when it can): io_uring_disabled, a seccomp filter, an old
// kernel or a missing feature.
func UringAvailable() error { return uringCheck() }

// startUring starts one uring loop per thread, each on its own locked OS
// thread. ok is false when a ring could not be set up (the caller then
// starts the epoll loops); nothing is left running then.
func (r *runner) startUring(eps []pollEndpoint, wg *sync.WaitGroup) (wake func(), ok bool) {
	if len(eps) > uMaxEndpoints || len(r.conns) > uMaxSlots {
		return nil, false
	}
	loops := r.newLoops(eps)
	type setup struct {
		l   *ploop
		err error
	}
	ready := make(chan setup)
	goOn := make([]chan bool, len(loops))
	for i, l := range loops {
		goOn[i] = make(chan bool, 1)
		go func(l *ploop, goOn chan bool) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			sq, cq, nbuf := ringSizes(len(l.slots))
			rg, err := newRing(sq, cq, nbuf, readBufferSize)
			if err == nil {
				l.u = &uringState{rg: rg}
				if l.wakeFd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
					rg.close()
					l.u = nil
				}
			}
			ready <- setup{l, err}
			if !<-goOn {
				if l.u != nil {
					l.u.rg.close()
				}
				l.closeFds()
				wg.Done()
				return
			}
			l.run(wg)
		}(l, goOn[i])
	}
	wg.Add(len(loops))
	var failed error
	for range loops {
		if s := <-ready; s.err != nil {
			failed = s.err
		}
	}
	for _, c := range goOn {
		c <- failed == nil
	}
	if failed != nil {
		return nil, false
	}
	return func() {
		for _, l := range loops {
			l.wake()
		}
	}, true
}

// uarm queues the wake-up: a poll on the eventfd halt writes.
func (l *ploop) uarm() {
	if s := l.uget(); s != nil {
		s.opcode, s.fd, s.opFlags, s.userData = opPollAdd, int32(l.wakeFd), unix.POLLIN, udata(uopWake, 0, 0, 0)
	}
}

// uget returns an entry to fill, or nil when the ring failed (every
// exchange is then failed by the next wait).
func (l *ploop) uget() *sqe {
	s, err := l.u.rg.get()
	if err != nil {
		return nil
	}
	return s
}

// udial starts an asynchronous connect of a new blocking socket (the ring
// never blocks on it; a blocking socket lets the ring poll it).
func (l *ploop) udial(s *pslot, now time.Duration) {
	e := s.ep
	pe := &l.eps[e]
	fd, err := unix.Socket(pe.family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		l.fail(s, classConnect, pe.opError("dial", os.NewSyscallError("socket", err)))
		return
	}
	if pe.tcp {
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	sq := l.uget()
	if sq == nil {
		unix.Close(fd)
		l.fail(s, classConnect, pe.opError("dial", errRingFailed))
		return
	}
	l.serial = (l.serial + 1) & uSerialMask
	s.fds[e], s.serial[e], s.uend[e] = fd, l.serial, uLive
	s.reconn = s.dialed[e]
	s.dialed[e] = true
	s.dialAt = now
	s.rd.r, s.rd.w = 0, 0
	s.state = psConnecting
	sq.opcode, sq.fd = opConnect, int32(fd)
	sq.addr, sq.off = uint64(uintptr(unsafe.Pointer(&pe.raw))), uint64(pe.rawLen)
	sq.userData = udata(uopConnect, s.idx, e, l.serial)
	l.u.pending++
}

var errRingFailed = errors.New("io_uring submission failed")

// urecv arms the connection's multishot receive.
func (l *ploop) urecv(s *pslot, e int) {
	sq := l.uget()
	if sq == nil {
		s.uend[e] = -int32(unix.EIO)
		return
	}
	sq.opcode, sq.fd, sq.flags, sq.ioprio = opRecv, int32(s.fds[e]), sqeBufferSelect, recvMultishot
	sq.userData = udata(uopRecv, s.idx, e, s.serial[e])
	l.u.pending++
}

// usend queues the rest of the request.
func (l *ploop) usend(s *pslot) {
	raw := s.req.raw[s.wrote:]
	sq := l.uget()
	if sq == nil {
		l.fail(s, classWrite, l.eps[s.ep].opError("write", errRingFailed))
		return
	}
	s.state = psWriting
	sq.opcode, sq.fd = opSend, int32(s.fds[s.ep])
	sq.addr, sq.len, sq.opFlags = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(raw)))), uint32(len(raw)), unix.MSG_NOSIGNAL|unix.MSG_WAITALL
	sq.userData = udata(uopSend, s.idx, s.ep, s.serial[s.ep])
	l.u.pending++
}

// uclose cancels what is in flight on fd and closes it, both through the
// ring: the descriptor stays open until the entries run, so the cancel
// cannot reach a socket that reuses its number.
func (l *ploop) uclose(fd int) {
	c := l.uget()
	if c == nil {
		unix.Close(fd)
		return
	}
	c.opcode, c.fd, c.opFlags, c.userData = opAsyncCancel, int32(fd), cancelFD|cancelAll, udata(uopCancel, 0, 0, 0)
	cl := l.uget()
	if cl == nil {
		unix.Close(fd)
		return
	}
	cl.opcode, cl.fd, cl.userData = opClose, int32(fd), udata(uopClose, 0, 0, 0)
}

// uwait submits what the loop queued and waits up to d for completions
// (BusyPoll: polls first), then handles every completion.
func (l *ploop) uwait(d time.Duration) error {
	rg := l.u.rg
	got := false
	if spin := l.r.opts.BusyPoll; spin > 0 && d > 0 {
		start := time.Now()
		for {
			if _, err := rg.enter(0, enterGetEvents, nil, true); err != nil {
				return err
			}
			if h, t := rg.completions(); h != t {
				got = true
				break
			}
			if time.Since(start) >= spin {
				break
			}
		}
	}
	if !got {
		if l.rawWait {
			d = min(d, rawWaitMax)
		}
		l.u.ts = unix.NsecToTimespec(int64(max(d, time.Microsecond)))
		if _, err := rg.enter(1, 0, &l.u.ts, l.rawWait); err != nil {
			return err
		}
	}
	head, tail := rg.completions()
	for ; head != tail; head++ {
		c := *rg.cqe(head)
		l.ucqe(c)
	}
	rg.advance(head)
	return nil
}

// ucqe handles one completion.
func (l *ploop) ucqe(c cqe) {
	op, idx, e, serial := splitUdata(c.userData)
	switch op {
	case uopWake, uopCancel, uopClose, 0:
		return // halt's wake-up is acted on by the loop's checks
	}
	if int(idx) >= len(l.slots) {
		return
	}
	s := l.slots[idx]
	if op != uopRecv {
		l.u.pending--
	}
	if op == uopRecv && c.flags&cqeFMore == 0 {
		l.u.pending--
	}
	current := e < len(s.fds) && s.fds[e] >= 0 && s.serial[e] == serial
	switch op {
	case uopConnect:
		if !current || s.ep != e || s.state != psConnecting {
			return
		}
		if c.res < 0 {
			l.fail(s, classConnect, l.eps[e].opError("dial", os.NewSyscallError("connect", unix.Errno(-c.res))))
			return
		}
		l.urecv(s, e)
		l.connected(s, 0)
	case uopSend:
		if !current || s.ep != e || s.state != psWriting {
			return
		}
		if c.res < 0 {
			l.fail(s, classWrite, l.eps[e].opError("write", os.NewSyscallError("send", unix.Errno(-c.res))))
			return
		}
		s.wrote += int(c.res)
		l.write(s)
	case uopRecv:
		if c.flags&cqeFBuffer != 0 {
			bid := uint16(c.flags >> cqeBufferShift)
			if current && c.res > 0 {
				l.received(s, e, l.u.rg.buf(bid)[:c.res])
			}
			l.u.rg.putBuf(bid)
		}
		if c.flags&cqeFMore != 0 {
			return
		}
		// The receive ended. Data or a lack of buffers: arm it again;
		// the end of the connection or an error: the exchange reading
		// it sees it.
		if !(e < len(s.fds) && s.fds[e] >= 0 && s.serial[e] == serial) {
			return
		}
		if c.res > 0 || c.res == -int32(unix.ENOBUFS) {
			l.urecv(s, e)
			return
		}
		s.uend[e] = c.res
		if s.ep == e && s.state == psReading {
			l.uended(s)
		}
	}
}

// received handles bytes that arrived on connection e of slot s.
func (l *ploop) received(s *pslot, e int, b []byte) {
	rd := s.rd
	if e != s.ep {
		// Bytes on an idle connection to another endpoint: nothing asked
		// for them; the connection is not reusable.
		l.uclose(s.fds[e])
		s.fds[e] = -1
		return
	}
	rd.nread += int64(len(b))
	if s.state == psReading && rd.r == rd.w {
		// The common case: parse in place, keep only what the parser
		// could not use yet.
		used, done, err := s.p.feed(b)
		rd.r, rd.w = 0, copy(rd.buf, b[used:]) // b is no larger than rd.buf
		l.parsed(s, done, err)
		return
	}
	// Behind other unread bytes, or before the request is written.
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	} else if rd.r > 0 && len(rd.buf)-rd.w < len(b) {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	if len(rd.buf)-rd.w < len(b) {
		l.fail(s, classParse, errHeaderTooLarge)
		return
	}
	rd.w += copy(rd.buf[rd.w:], b)
	if s.state == psReading {
		l.consume(s)
	}
}

// consume feeds the slot's buffered bytes to the parser.
func (l *ploop) consume(s *pslot) {
	rd := s.rd
	used, done, err := s.p.feed(rd.buf[rd.r:rd.w])
	rd.r += used
	l.parsed(s, done, err)
}

// uended handles the end of the current connection's receive while a
// response is awaited.
func (l *ploop) uended(s *pslot) {
	if res := s.uend[s.ep]; res < 0 {
		l.fail(s, classRead, l.eps[s.ep].opError("read", os.NewSyscallError("recv", unix.Errno(-res))))
		return
	}
	l.eof(s)
}

// ureading is write's end on the uring engine: the response may already
// be buffered, or the connection already ended.
func (l *ploop) ureading(s *pslot) {
	if s.rd.r < s.rd.w {
		l.consume(s)
		if s.state != psReading {
			return
		}
	}
	if s.uend[s.ep] != uLive {
		l.uended(s)
	}
}

// ucancelAll submits what is queued with a cancellation of everything in
// flight and waits (up to a second) until every cancelled entry
// completed, so the kernel no longer holds the sockets or the buffers.
func (l *ploop) ucancelAll() {
	rg := l.u.rg
	c, err := rg.get()
	if err != nil {
		return
	}
	c.opcode, c.opFlags, c.userData = opAsyncCancel, cancelAll|cancelAny, udata(uopCancel, 0, 0, 0)
	deadline := time.Now().Add(time.Second)
	for first := true; first || (l.u.pending > 0 && time.Now().Before(deadline)); first = false {
		l.u.ts = unix.NsecToTimespec(int64(10 * time.Millisecond))
		if _, err := rg.enter(1, 0, &l.u.ts, false); err != nil {
			return
		}
		head, tail := rg.completions()
		for ; head != tail; head++ {
			c := rg.cqe(head)
			op, _, _, _ := splitUdata(c.userData)
			if c.flags&cqeFBuffer != 0 {
				rg.putBuf(uint16(c.flags >> cqeBufferShift))
			}
			switch {
			case op == uopConnect || op == uopSend:
				l.u.pending--
			case op == uopRecv && c.flags&cqeFMore == 0:
				l.u.pending--
			}
		}
		rg.advance(head)
	}
}

// rawSockaddr is sa as connect(2) takes it.
func rawSockaddr(sa unix.Sockaddr) (raw unix.RawSockaddrAny, n uint32, err error) {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(&raw))
		p.Family = unix.AF_INET
		p.Port = uint16(sa.Port>>8) | uint16(sa.Port&0xff)<<8
		p.Addr = sa.Addr
		return raw, unix.SizeofSockaddrInet4, nil
	case *unix.SockaddrInet6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(&raw))
		p.Family = unix.AF_INET6
		p.Port = uint16(sa.Port>>8) | uint16(sa.Port&0xff)<<8
		p.Addr, p.Scope_id = sa.Addr, sa.ZoneId
		return raw, unix.SizeofSockaddrInet6, nil
	case *unix.SockaddrUnix:
		p := (*unix.RawSockaddrUnix)(unsafe.Pointer(&raw))
		name := sa.Name
		if len(name) >= len(p.Path) {
			return raw, 0, fmt.Errorf("unix socket path too long: %q", name)
		}
		p.Family = unix.AF_UNIX
		for i := 0; i < len(name); i++ {
			p.Path[i] = int8(name[i])
		}
		n = 2 + uint32(len(name)) + 1
		if len(name) > 0 && name[0] == '@' { // abstract
			p.Path[0] = 0
			n--
		}
		return raw, n, nil
	}
	return raw, 0, fmt.Errorf("unsupported address %T", sa)
}
