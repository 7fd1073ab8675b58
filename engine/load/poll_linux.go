//go:build linux

package load

import (
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event-loop engine: one epoll loop per thread (-t) drives its share
// of the connection slots over non-blocking sockets, as wrk does. Each
// keep-alive request costs one write and one read system call, plus a
// share of epoll_wait; there are no goroutine switches, no runtime timers
// and no deadline updates per request. Plain TCP and unix-socket targets
// use it; TLS targets use the goroutine per connection engine (conn.go),
// which crypto/tls needs.

// pollEndpoint is an endpoint resolved once, before the load starts.
type pollEndpoint struct {
	family  int
	sa      unix.Sockaddr
	tcp     bool
	network string
	addr    net.Addr
	// Errors without per-request detail are built once: timeouts.
	dialTimeout, readTimeout, writeTimeout error
	// raw is sa as connect(2) takes it (the uring engine's connects).
	raw    unix.RawSockaddrAny
	rawLen uint32
}

// resolveForPoll resolves every endpoint to a socket address. ok is false
// when the event loops cannot serve this load (TLS, a name that does not
// resolve, the engine switched off); the goroutine engine then runs it
// and reports any resolution error per request, as a connect error.
func (r *runner) resolveForPoll() ([]pollEndpoint, bool) {
	if r.engineWanted == EngineGoroutines {
		return nil, false
	}
	eps := make([]pollEndpoint, len(r.endpoints))
	for i, ep := range r.endpoints {
		if ep.tls != nil {
			return nil, false
		}
		pe := &eps[i]
		pe.network = ep.network
		switch ep.network {
		case "unix":
			pe.family, pe.sa = unix.AF_UNIX, &unix.SockaddrUnix{Name: ep.addr}
			pe.addr = &net.UnixAddr{Name: ep.addr, Net: "unix"}
		case "tcp":
			ta, err := net.ResolveTCPAddr("tcp", ep.addr)
			if err != nil {
				return nil, false
			}
			pe.tcp, pe.addr = true, ta
			if ip4 := ta.IP.To4(); ip4 != nil {
				pe.family, pe.sa = unix.AF_INET, &unix.SockaddrInet4{Port: ta.Port, Addr: [4]byte(ip4)}
			} else {
				sa := &unix.SockaddrInet6{Port: ta.Port, Addr: [16]byte(ta.IP.To16())}
				if ta.Zone != "" {
					ifi, err := net.InterfaceByName(ta.Zone)
					if err != nil {
						return nil, false
					}
					sa.ZoneId = uint32(ifi.Index)
				}
				pe.family, pe.sa = unix.AF_INET6, sa
			}
		default:
			return nil, false
		}
		var err error
		if pe.raw, pe.rawLen, err = rawSockaddr(pe.sa); err != nil {
			return nil, false
		}
		pe.dialTimeout = pe.opError("dial", os.ErrDeadlineExceeded)
		pe.readTimeout = pe.opError("read", os.ErrDeadlineExceeded)
		pe.writeTimeout = pe.opError("write", os.ErrDeadlineExceeded)
	}
	return eps, true
}

// cloneEndpoints gives a loop its own socket addresses: connect(2)
// marshals an address into a buffer inside it.
func cloneEndpoints(eps []pollEndpoint) []pollEndpoint {
	out := make([]pollEndpoint, len(eps))
	for i, pe := range eps {
		switch sa := pe.sa.(type) {
		case *unix.SockaddrInet4:
			c := *sa
			pe.sa = &c
		case *unix.SockaddrInet6:
			c := *sa
			pe.sa = &c
		case *unix.SockaddrUnix:
			c := *sa
			pe.sa = &c
		}
		out[i] = pe
	}
	return out
}

// opError describes a failed operation the way the net package does
// ("dial tcp 127.0.0.1:80: connect: connection refused").
func (pe *pollEndpoint) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: pe.network, Addr: pe.addr, Err: err}
}

// Slot states.
const (
	psIdle       = iota // no exchange: waiting for its schedule, or finished
	psConnecting        // non-blocking connect in progress
	psWriting           // request partly written, waiting for EPOLLOUT
	psReading           // waiting for (more of) the response
)

// pslot is a connection slot driven by an event loop. Its measurements
// live in the embedded conn, exactly as for the goroutine engine.
type pslot struct {
	*conn
	idx    int32   // index in the loop
	fds    []int   // per endpoint, -1 when not connected
	serial []int32 // per endpoint: the identity of fds[e] in epoll events
	// uend (uring engine), per endpoint: uLive while the connection's
	// receive is armed, else how it ended (0 closed by the peer, -errno).
	uend []int32
	ep   int // endpoint of the current exchange, -1 before the first

	state      int
	backingOff bool // in sched for a connect back-off, not a scheduled send
	req        *request
	wrote      int
	intended   time.Duration
	sent       time.Duration
	dialAt     time.Duration
	deadline   time.Duration
	connect    time.Duration // > 0 when this exchange connected
	reconn     bool          // this exchange replaced an earlier connection
	p          parser
	// readable is false only when the socket is known drained (a short
	// read or EAGAIN); edge-triggered epoll sets it again on new data.
	readable bool
	// hup: the peer closed or the socket failed; reads go on to EOF or
	// the error, since a short read no longer means drained.
	hup bool

	due      time.Duration // open loop: when the next send is due
	finished bool
}

// ploop is one event loop.
type ploop struct {
	r      *runner
	eps    []pollEndpoint
	slots  []*pslot
	epfd   int
	wakeMu sync.Mutex // guards wakeFd against closing while halt writes
	wakeFd int        // eventfd written by halt
	timeFd int        // timerfd for the open-loop schedule
	armed  time.Duration
	serial int32
	live   int // slots not finished
	events []unix.EpollEvent
	sched  slotHeap
	// ready holds slots whose exchange ended, to start their next one
	// from the loop rather than recursively (a refused connect fails at
	// once, again and again).
	ready      []*pslot
	readyHead  int
	readyCount int
	ev         unix.EpollEvent // scratch for epoll_ctl (kept off the stack)
	scan       time.Duration   // next timeout scan
	// u is set on the uring engine (uring_linux.go): its I/O goes through
	// a ring instead of epoll, read and write.
	u *uringState
	// rawWait: the loop sleeps in its wait without handing its P (Go's
	// processor) back to the scheduler, because another P is free for
	// the rest of the process. Handing it over costs more than the
	// request: with every P in a wait, the runtime's monitor thread wakes
	// every 20 µs or so to retake them, and the loop must win its P back
	// after each wake-up (a quarter of the client's CPU in a -t1 profile).
	// Raw waits last at most rawWaitMax, so a stop-the-world pause (which
	// waits for the loop) stays short.
	rawWait bool
	// epFile is the epoll instance as the Go runtime's poller sees it,
	// in open loop without a spare P (rawWait) nor --busy-poll: a loop
	// with nothing ready parks its goroutine until the instance is
	// readable (park) rather than sleeping in a system call. nil
	// otherwise, or when it could not be set up: the loop then waits in
	// epoll_wait. Parking makes the loop's wake-up the Go scheduler's:
	// only one thread waits in the runtime's poller, so a parked loop
	// whose events arrive while other goroutines run waits until one of
	// them yields (or for the runtime's monitor, up to 10 ms). A closed
	// loop keeps epoll_wait (at -c30 against a 1 ms server, parking cost
	// a quarter of its requests), and so does a loop with a spare P: its
	// raw wait wakes on its own thread (parked at -t1, with the server in
	// the same process, TestFindMaxServerPlateau found 594 req/s where
	// the raw wait found 700-712, two runs each on a busy machine). An
	// open loop without a spare P, idle most of the time, parks: its
	// epoll_wait would have needed a P back from the scheduler on every
	// wake-up anyway.
	epFile *os.File
	epConn syscall.RawConn
}

// rawWaitMax bounds a raw wait.
const rawWaitMax = time.Millisecond

// Event tokens that are not slots.
const (
	tokenWake  = -1
	tokenTimer = -2
)

// scanEvery is how often in-flight exchanges are checked for their
// deadline (-timeout): timeouts fire up to this much late.
const scanEvery = 5 * time.Millisecond

// startPoll starts one event loop per thread over the slots, on the
// uring engine when it is wanted and sets up, else on epoll, and returns
// the engine and the function halt calls to wake the loops, or ok false
// when no loop can be set up (the goroutine engine then runs the load).
func (r *runner) startPoll(eps []pollEndpoint, wg *sync.WaitGroup) (engine string, wake func(), ok bool) {
	if r.engineWanted == EngineUring || (r.engineWanted == "" && autoUring(&r.opts) && uringCheck() == nil) {
		if wake, ok := r.startUring(eps, wg); ok {
			return EngineUring, wake, true
		}
	}
	loops := r.newLoops(eps)
	for _, l := range loops {
		if err := l.openEpoll(); err != nil {
			for _, l := range loops {
				l.closeFds()
			}
			return "", nil, false
		}
	}
	wg.Add(len(loops))
	for _, l := range loops {
		l.events = make([]unix.EpollEvent, min(max(len(l.slots), 16), 1024))
		go l.run(wg)
	}
	return EngineEpoll, func() {
		for _, l := range loops {
			l.wake()
		}
	}, true
}

// newLoops shares the slots out over one loop per thread (every loop gets
// a slot).
func (r *runner) newLoops(eps []pollEndpoint) []*ploop {
	loops := make([]*ploop, min(r.opts.Threads, len(r.conns)))
	for t := range loops {
		loops[t] = &ploop{r: r, eps: cloneEndpoints(eps), epfd: -1, wakeFd: -1, timeFd: -1, armed: -1}
	}
	for i, c := range r.conns {
		l := loops[i%len(loops)]
		s := &pslot{conn: c, idx: int32(len(l.slots)), ep: -1,
			fds: make([]int, len(eps)), serial: make([]int32, len(eps)), uend: make([]int32, len(eps))}
		for e := range s.fds {
			s.fds[e] = -1
		}
		s.p.chk = c.rd.chk
		l.slots = append(l.slots, s)
	}
	raw := runtime.GOMAXPROCS(0) > len(loops)
	for _, l := range loops {
		l.rawWait = raw
		l.live = len(l.slots)
		l.sched = make(slotHeap, 0, len(l.slots))
		l.ready = make([]*pslot, len(l.slots))
	}
	return loops
}

// wake interrupts the loop's epoll_wait. It never writes to a closed
// descriptor: its number may already belong to another file.
func (l *ploop) wake() {
	l.wakeMu.Lock()
	defer l.wakeMu.Unlock()
	if l.wakeFd >= 0 {
		one := [8]byte{1}
		unix.Write(l.wakeFd, one[:])
	}
}

// openEpoll creates the loop's epoll instance, wake-up eventfd and timer.
func (l *ploop) openEpoll() error {
	var err error
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return err
	}
	if l.wakeFd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		l.closeFds()
		return err
	}
	if l.timeFd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		l.closeFds()
		return err
	}
	for _, t := range []struct {
		fd    int
		token int32
	}{{l.wakeFd, tokenWake}, {l.timeFd, tokenTimer}} {
		l.ev = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: t.token}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, t.fd, &l.ev); err != nil {
			l.closeFds()
			return err
		}
	}
	if l.r.openLoop && !l.rawWait && l.r.opts.BusyPoll == 0 {
		l.openPark()
	}
	return nil
}

// openPark hands the epoll instance to the Go runtime's poller (see
// park); on failure the loop keeps waiting in epoll_wait.
func (l *ploop) openPark() {
	if unix.SetNonblock(l.epfd, true) != nil {
		return
	}
	f := os.NewFile(uintptr(l.epfd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		l.epfd = -1
		return
	}
	l.epFile, l.epConn = f, rc
}

func (l *ploop) closeFds() {
	l.wakeMu.Lock()
	defer l.wakeMu.Unlock()
	if l.epFile != nil {
		l.epFile.Close() // the runtime's poller forgets it, then closes it
		l.epFile, l.epConn, l.epfd = nil, nil, -1
	}
	for _, fd := range []*int{&l.epfd, &l.wakeFd, &l.timeFd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

func (l *ploop) now() time.Duration { return time.Since(l.r.start) }

// run is the loop: start every slot, then wait for events and act on them
// until the load ends, stops or runs out of requests.
func (l *ploop) run(wg *sync.WaitGroup) {
	defer wg.Done()
	defer l.closeFds()
	defer l.shutdown()
	r := l.r
	for _, s := range l.slots {
		l.queue(s)
	}
	if l.u != nil {
		l.uarm()
	}
	l.scan = l.now() + scanEvery
	for {
		if !l.drain() || l.live == 0 {
			return
		}
		now := l.now()
		wait := scanEvery
		if r.hasEnd {
			wait = min(wait, r.endOff-now)
		}
		if err := l.waitAndHandle(now, wait); err != nil {
			// Not expected with valid descriptors; fail every exchange in
			// flight rather than spin.
			l.failAll(err)
			return
		}
		now = l.now()
		if l.over(now) {
			return
		}
		if now >= l.scan {
			l.timeouts(now)
			l.scan = now + scanEvery
		}
		for len(l.sched) > 0 && l.sched[0].due <= now+schedSlack {
			s := l.sched.pop()
			if s.backingOff {
				s.backingOff = false
				l.queue(s) // back-off over: next() claims and starts it
				continue
			}
			l.start(s, s.due, l.now())
		}
	}
}

// waitAndHandle waits up to d (less when an open-loop send is due) for
// I/O and handles what happened.
func (l *ploop) waitAndHandle(now, d time.Duration) error {
	if l.u != nil {
		if len(l.sched) > 0 {
			d = min(d, l.sched[0].due-now)
		}
		return l.uwait(d)
	}
	var n int
	var err error
	if l.epConn != nil {
		n, err = l.park(now, d)
	} else {
		l.armTimer(now, -1)
		n, err = l.wait(int((d + time.Millisecond - 1) / time.Millisecond))
	}
	if err != nil && err != unix.EINTR {
		return err
	}
	for i := 0; i < n; i++ {
		ev := &l.events[i]
		if ev.Fd < 0 {
			continue // wake-up or timer: the loop's checks act on them
		}
		l.event(l.slots[ev.Fd], ev.Events, ev.Pad)
	}
	return nil
}

// queue marks s ready for its next exchange.
func (l *ploop) queue(s *pslot) {
	s.state = psIdle
	l.ready[(l.readyHead+l.readyCount)%len(l.ready)] = s
	l.readyCount++
}

// drain starts the next exchange of every ready slot, including slots
// that become ready again meanwhile. It returns false once the load is
// over.
func (l *ploop) drain() bool {
	for l.readyCount > 0 {
		s := l.ready[l.readyHead]
		l.ready[l.readyHead] = nil
		l.readyHead = (l.readyHead + 1) % len(l.ready)
		l.readyCount--
		now := l.now()
		if l.over(now) {
			return false
		}
		l.next(s, now)
	}
	return !l.over(l.now())
}

// schedSlack: an open-loop send due within this is sent now rather than
// after another timer round trip.
const schedSlack = 20 * time.Microsecond

// armTimer points the timer at the earliest scheduled send, or at by
// when that is earlier (by < 0: no such bound).
func (l *ploop) armTimer(now, by time.Duration) {
	due := by
	if len(l.sched) > 0 && (due < 0 || l.sched[0].due < due) {
		due = l.sched[0].due
	}
	if due < 0 {
		return
	}
	if due == l.armed && due > now {
		return
	}
	d := max(due-now, time.Microsecond)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(l.timeFd, 0, &spec, nil); err == nil {
		l.armed = due
	}
}

// shutdown closes every connection and hands the buffered latencies over.
func (l *ploop) shutdown() {
	if l.u != nil {
		// Cancel what is in flight before closing the sockets: an entry
		// still queued must never reach a number another file reuses.
		l.ucancelAll()
	}
	for _, s := range l.slots {
		for e, fd := range s.fds {
			if fd >= 0 {
				unix.Close(fd)
				s.fds[e] = -1
			}
		}
		s.flush()
	}
	if l.u != nil {
		l.u.rg.close()
	}
}

// event handles readiness of one of slot s's connections.
func (l *ploop) event(s *pslot, events uint32, serial int32) {
	if s.ep < 0 || s.fds[s.ep] < 0 || s.serial[s.ep] != serial {
		return // an idle connection to another endpoint, or a closed one
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.readable = true
	}
	if events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		s.hup = true
	}
	out := events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0
	switch s.state {
	case psConnecting:
		if out {
			l.connected(s, events)
		}
	case psWriting:
		if out {
			l.write(s)
		}
	case psReading:
		if s.readable {
			l.read(s)
		}
	}
}

// next starts the slot's next exchange, schedules it (open loop) or
// finishes the slot (-n exhausted, end of the schedule, stopped).
func (l *ploop) next(s *pslot, now time.Duration) {
	r := l.r
	if r.stop.Load() {
		l.finish(s)
		return
	}
	if r.bounded {
		if s.quota == 0 {
			if s.quota = r.claim(); s.quota == 0 {
				l.finish(s)
				return
			}
		}
		s.quota--
	}
	intended := now
	if r.openLoop {
		intended = s.conn.next
		s.conn.advance()
		if r.hasEnd && intended >= r.endOff {
			l.finish(s)
			return
		}
		if intended > now+schedSlack {
			s.due = intended
			l.sched.push(s)
			return
		}
	}
	l.start(s, intended, now)
}

func (l *ploop) finish(s *pslot) {
	if !s.finished {
		s.finished = true
		l.live--
	}
}

// start begins an exchange: pick a request, connect if needed, write.
func (l *ploop) start(s *pslot, intended, now time.Duration) {
	r := l.r
	req := &r.reqs[s.pick()]
	e := req.endpoint
	if e != s.ep {
		s.rd.r, s.rd.w = 0, 0
		s.ep = e
		s.readable = true // unknown: the first read finds out
	}
	s.req, s.wrote, s.connect, s.reconn = req, 0, 0, false
	s.intended, s.sent = intended, now
	s.deadline = r.deadline(l.intended(s), now)
	if s.fds[e] < 0 {
		l.dial(s, now)
		return
	}
	l.write(s)
}

// dial opens a non-blocking connection for the slot's current endpoint.
func (l *ploop) dial(s *pslot, now time.Duration) {
	if l.u != nil {
		l.udial(s, now)
		return
	}
	e := s.ep
	pe := &l.eps[e]
	fd, err := unix.Socket(pe.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		l.fail(s, classConnect, pe.opError("dial", os.NewSyscallError("socket", err)))
		return
	}
	if pe.tcp {
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	l.serial++
	l.ev = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: s.idx, Pad: l.serial}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &l.ev); err != nil {
		unix.Close(fd)
		l.fail(s, classConnect, pe.opError("dial", os.NewSyscallError("epoll_ctl", err)))
		return
	}
	s.fds[e], s.serial[e] = fd, l.serial
	s.reconn = s.dialed[e]
	s.dialed[e] = true
	s.dialAt = now
	s.readable, s.hup = false, false
	s.rd.r, s.rd.w = 0, 0
	switch err := unix.Connect(fd, pe.sa); err {
	case nil:
		l.connected(s, 0)
	case unix.EINPROGRESS:
		s.state = psConnecting
	default:
		l.fail(s, classConnect, pe.opError("dial", os.NewSyscallError("connect", err)))
	}
}

// connected completes a connect (events are the readiness that reported
// it, 0 when connect succeeded at once) and writes the request.
func (l *ploop) connected(s *pslot, events uint32) {
	if events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		errno, err := unix.GetsockoptInt(s.fds[s.ep], unix.SOL_SOCKET, unix.SO_ERROR)
		if err == nil {
			err = unix.Errno(errno)
			if errno == 0 {
				err = unix.ECONNRESET
			}
		}
		l.fail(s, classConnect, l.eps[s.ep].opError("dial", os.NewSyscallError("connect", err)))
		return
	}
	now := l.now()
	s.connect = max(now-s.dialAt, 1)
	if !l.r.opts.Close {
		s.sent = now // keep-alive: connect time is not latency
	}
	s.deadline = l.r.deadline(l.intended(s), s.dialAt)
	l.write(s)
}

// write sends (the rest of) the request, then reads if data is waiting.
func (l *ploop) write(s *pslot) {
	if l.u != nil {
		if s.wrote < len(s.req.raw) {
			l.usend(s)
			return
		}
		s.state = psReading
		s.p.begin(s.req.head)
		l.ureading(s)
		return
	}
	fd, raw := s.fds[s.ep], s.req.raw
	for s.wrote < len(raw) {
		n, err := rawWrite(fd, raw[s.wrote:])
		switch err {
		case nil:
			s.wrote += n
			continue
		case unix.EAGAIN:
			s.state = psWriting
			return
		case unix.EINTR:
			continue
		}
		l.fail(s, classWrite, l.eps[s.ep].opError("write", os.NewSyscallError("write", err)))
		return
	}
	s.state = psReading
	s.p.begin(s.req.head)
	if s.readable {
		l.read(s)
	}
}

// read takes what the socket holds and feeds the parser until the
// response is complete or the socket is drained.
func (l *ploop) read(s *pslot) {
	fd, rd := s.fds[s.ep], s.rd
	for {
		if rd.r == rd.w {
			rd.r, rd.w = 0, 0
		} else if rd.w == len(rd.buf) && rd.r > 0 {
			rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
			rd.r = 0
		}
		space := len(rd.buf) - rd.w
		n, err := rawRead(fd, rd.buf[rd.w:])
		switch err {
		case nil:
		case unix.EAGAIN:
			s.readable = false
			return
		case unix.EINTR:
			continue
		default:
			l.fail(s, classRead, l.eps[s.ep].opError("read", os.NewSyscallError("read", err)))
			return
		}
		if n == 0 {
			l.eof(s)
			return
		}
		rd.w += n
		rd.nread += int64(n)
		used, done, err := s.p.feed(rd.buf[rd.r:rd.w])
		rd.r += used
		if n < space && !s.hup {
			s.readable = false // drained: epoll reports the next data
		}
		if l.parsed(s, done, err) || !s.readable {
			return
		}
	}
}

// parsed acts on what the parser said of the bytes fed to it: the
// exchange failed, completed (true), or awaits more bytes (false).
func (l *ploop) parsed(s *pslot, done bool, err error) bool {
	if err != nil {
		l.fail(s, classify(err, classRead), err)
		return true
	}
	if done {
		l.complete(s)
		return true
	}
	return false
}

// eof ends the exchange at the end of the connection: it completes a
// response delimited by the close and fails any other.
func (l *ploop) eof(s *pslot) {
	if _, err := s.p.eof(s.rd.w - s.rd.r); err != nil {
		l.fail(s, classRead, err)
		return
	}
	l.complete(s)
}

// complete records a finished exchange and moves on.
func (l *ploop) complete(s *pslot) {
	r := l.r
	if s.p.resp.close || r.opts.Close || s.p.st == stUntilClose {
		l.drop(s)
	}
	done := l.now()
	if l.over(done) {
		s.state = psIdle
		return
	}
	o := outcome{status: s.p.resp.status, connect: s.connect, reconnect: s.reconn}
	if s.p.resp.checkErr != nil {
		o.class, o.err = classCheck, s.p.resp.checkErr
	}
	s.record(s.req, o, l.intended(s), s.sent, done)
	s.connFails = 0
	l.queue(s)
}

// intended is the latency origin (runner.origin): the schedule in open
// loop, the send in closed loop.
func (l *ploop) intended(s *pslot) time.Duration { return l.r.origin(s.intended, s.sent) }

// over reports whether the load has ended (stopped, or its duration is
// up): exchanges in flight then are not measured.
func (l *ploop) over(now time.Duration) bool {
	r := l.r
	return r.stop.Load() || (r.hasEnd && now >= r.endOff)
}

// fail records a failed exchange, closes its connection and moves on.
func (l *ploop) fail(s *pslot, class int, err error) {
	if s.ep >= 0 {
		l.drop(s)
	}
	done := l.now()
	if l.over(done) {
		s.state = psIdle
		return
	}
	o := outcome{class: class, err: err, connect: s.connect, reconnect: s.reconn}
	s.record(s.req, o, l.intended(s), s.sent, done)
	if d := s.conn.backoff(o); d > 0 {
		// Its next exchange waits (see conn.backoff).
		s.state = psIdle
		s.backingOff = true
		s.due = done + d
		l.sched.push(s)
		return
	}
	l.queue(s)
}

// drop closes the connection of the current exchange.
func (l *ploop) drop(s *pslot) {
	if fd := s.fds[s.ep]; fd >= 0 {
		if l.u != nil {
			l.uclose(fd)
		} else {
			unix.Close(fd)
		}
		s.fds[s.ep] = -1
		s.rd.r, s.rd.w = 0, 0
	}
}

// timeouts fails the exchanges whose deadline passed.
func (l *ploop) timeouts(now time.Duration) {
	for _, s := range l.slots {
		if s.state == psIdle || now < s.deadline {
			continue
		}
		pe := &l.eps[s.ep]
		switch s.state {
		case psConnecting:
			l.fail(s, classTimeout, pe.dialTimeout)
		case psWriting:
			l.fail(s, classTimeout, pe.writeTimeout)
		default:
			l.fail(s, classTimeout, pe.readTimeout)
		}
	}
}

// failAll ends every exchange in flight with err (epoll itself failed).
func (l *ploop) failAll(err error) {
	for _, s := range l.slots {
		if s.state != psIdle {
			l.fail(s, classRead, os.NewSyscallError(l.waitCall(), err))
		}
	}
}

func (l *ploop) waitCall() string {
	if l.u != nil {
		return "io_uring_enter"
	}
	return "epoll_wait"
}

// wait collects ready events, sleeping up to msec when there are none.
// With Options.BusyPoll it first polls without sleeping for up to that
// long: when a response is due within microseconds, polling catches it
// without the client going to sleep, and the server's core is spared the
// wake-up (on loopback the sender's CPU does the receiver's wake-up).
func (l *ploop) wait(msec int) (int, error) {
	if spin := l.r.opts.BusyPoll; spin > 0 && msec > 0 {
		start := time.Now()
		for {
			n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(unsafe.SliceData(l.events))),
				uintptr(len(l.events)), 0, 0, 0)
			if e != 0 && e != unix.EINTR {
				return 0, e
			}
			if n > 0 {
				return int(n), nil
			}
			if time.Since(start) >= spin {
				break
			}
		}
	}
	if l.rawWait {
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(unsafe.SliceData(l.events))),
			uintptr(len(l.events)), uintptr(min(msec, int(rawWaitMax/time.Millisecond))), 0, 0)
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
	return unix.EpollWait(l.epfd, l.events, msec)
}

// park collects ready events; when there are none, it parks the loop's
// goroutine in the Go runtime's poller until the epoll instance is
// readable: an event, halt's wake-up, or the timer, armed for the next
// scheduled send or at most d from now. Sleeping in epoll_wait instead
// holds a thread in a system call: with no spare P, the runtime's monitor
// hands its P (Go's processor) to another thread, which wakes, finds
// nothing to run and sleeps again, on every wait (at -R 2000, that
// hand-off cost more CPU than the requests). A parked loop leaves its P
// idle, and with every P idle the monitor sleeps too
// (docs/performance.md#the-open-loops-own-cost).
func (l *ploop) park(now, d time.Duration) (int, error) {
	// A stable bound (the next timeout scan, the end of the load) keeps
	// the timer armed across waits rather than set on each.
	by := l.scan
	if r := l.r; r.hasEnd {
		by = min(by, r.endOff)
	}
	if by > now+d {
		by = now + d
	}
	l.armTimer(now, by)
	var n int
	var errno error
	// Read polls first, and parks only when nothing is ready.
	err := l.epConn.Read(func(uintptr) bool {
		n, errno = l.poll()
		return n > 0 || errno != nil
	})
	if errno != nil {
		return 0, errno
	}
	return n, err
}

// poll collects ready events without waiting.
func (l *ploop) poll() (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(unsafe.SliceData(l.events))),
		uintptr(len(l.events)), 0, 0, 0)
	switch e {
	case 0:
		return int(n), nil
	case unix.EINTR:
		return 0, nil
	}
	return 0, e
}

// rawWrite and rawRead are write(2) and read(2) on a non-blocking socket
// without the scheduler hand-off of syscall.Syscall: they never block.
func rawWrite(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawRead(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// sockRead and sockWrite are the goroutine engine's socket reads and
// writes (rawSock): rawRead and rawWrite here.
func sockRead(fd int, b []byte) (int, error)  { return rawRead(fd, b) }
func sockWrite(fd int, b []byte) (int, error) { return rawWrite(fd, b) }

// slotHeap is a min-heap of slots by due time (the open-loop schedule).
type slotHeap []*pslot

func (h *slotHeap) push(s *pslot) {
	*h = append(*h, s)
	hh := *h
	i := len(hh) - 1
	for i > 0 {
		p := (i - 1) / 2
		if hh[p].due <= hh[i].due {
			break
		}
		hh[p], hh[i] = hh[i], hh[p]
		i = p
	}
}

func (h *slotHeap) pop() *pslot {
	hh := *h
	top := hh[0]
	last := len(hh) - 1
	hh[0] = hh[last]
	hh[last] = nil
	hh = hh[:last]
	i := 0
	for {
		l, m := 2*i+1, i
		if l < len(hh) && hh[l].due < hh[m].due {
			m = l
		}
		if l+1 < len(hh) && hh[l+1].due < hh[m].due {
			m = l + 1
		}
		if m == i {
			break
		}
		hh[m], hh[i] = hh[i], hh[m]
		i = m
	}
	*h = hh
	return top
}
