//go:build linux

package load

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// h2Spin is --busy-poll (Options.BusyPoll) and --nap (Options.Nap) on the
// HTTP/2 client, whose connections are goroutines parked in the runtime's
// netpoller: a connection that finds nothing to read does not park at
// once but, for up to BusyPoll, lets the other connections run and looks
// again; then, with Nap, it sleeps Nap once by nanosleep and looks again.
// A client that keeps running, or that sleeps by the clock rather than on
// its sockets, spares the server under test the wake-ups of a client
// asleep in epoll_wait: on one machine the server's writes pay for them
// (docs/performance.md, "Naps"). A busy poll spends the client's CPU to
// do so; a nap spends none but reads what arrives during it up to one nap
// late. The nap is a RawSyscall: it keeps the scheduler's P, so nothing
// else of the client runs meanwhile — which is why naps are refused in
// open loop, whose sender would be delayed.
//
// It looks through an epoll instance of its own in which every socket of
// the load is registered (level-triggered, so that it reports what is
// waiting, not what arrived since the last look): one epoll_wait(0)
// answers both "has my socket data?" and "has a connection that went to
// sleep data waiting?". The second stops the spin: a goroutine parked in
// the netpoller is woken only when the runtime polls, which it does when
// nothing else is runnable, so a spin that went on would delay it.
type h2Spin struct {
	epfd       int
	limit, nap time.Duration
}

func newH2Spin(limit, nap time.Duration) *h2Spin {
	if limit <= 0 && nap <= 0 {
		return nil
	}
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil // no busy poll nor nap: connections park as without them
	}
	return &h2Spin{epfd: fd, limit: limit, nap: nap}
}

func (sp *h2Spin) close() {
	if sp != nil {
		unix.Close(sp.epfd)
	}
}

// add registers w's socket, on slot id. With naps, it also asks the
// kernel for each read's receive time (SO_TIMESTAMPNS: h2Stamp).
func (sp *h2Spin) add(w *h2Wire, id int) {
	if sp == nil || w.fd < 0 {
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: w.fd, Pad: int32(id)}
	if unix.EpollCtl(sp.epfd, unix.EPOLL_CTL_ADD, int(w.fd), &ev) == nil {
		w.events = make([]h2Event, 32)
	}
	if sp.nap > 0 && unix.SetsockoptInt(int(w.fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil {
		w.stamp = new(h2Stamp)
	}
}

// h2Stamp is a socket's reads with their kernel receive times
// (SO_TIMESTAMPNS), the clock naps need: a response that arrives while
// the client naps is read up to one nap late, and its latency ends when
// the kernel received it, not when the client woke (h2Session.complete).
// For TCP the kernel reports the receive time of the last segment a read
// consumed, so a response ends at the arrival of the last segment read
// with it: at most the read's time, at least its own arrival.
type h2Stamp struct {
	msg unix.Msghdr
	iov unix.Iovec
	oob [64]byte
	// at is the receive time of the last read's data (Unix nanoseconds;
	// 0 before any). Written by the reader, read by complete, which runs
	// on the reader's goroutine — atomic only for the race detector's
	// sake when a timeout completes a stream elsewhere.
	at atomic.Int64
}

// stampedRead is rawRead by recvmsg, keeping the receive time the kernel
// attached to the data (w.stamp.at).
func (w *h2Wire) stampedRead(fd uintptr) bool {
	st := w.stamp
	st.iov.Base = unsafe.SliceData(w.p)
	st.iov.SetLen(len(w.p))
	st.msg.Iov = &st.iov
	st.msg.Iovlen = 1
	st.msg.Control = &st.oob[0]
	for {
		st.msg.SetControllen(len(st.oob))
		n, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&st.msg)), 0)
		if e == unix.EINTR {
			continue
		}
		st.iov.Base = nil // do not keep the caller's buffer
		if e != 0 {
			w.n, w.rerr = 0, e
			return e != unix.EAGAIN
		}
		w.n, w.rerr = int(n), nil
		if n > 0 {
			// 0 when the data came without a time (the kernel turns
			// receive times on for the whole machine asynchronously,
			// so the first segments after the first socket asks may
			// have none): then the read's own time, never an earlier
			// read's.
			st.at.Store(cmsgTimestampNS(st.oob[:st.msg.Controllen]))
		}
		return true
	}
}

// cmsgTimestampNS is the SCM_TIMESTAMPNS time in a control message
// buffer (Unix nanoseconds), 0 when there is none.
func cmsgTimestampNS(b []byte) int64 {
	const hdr = int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(b) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hdr || l > len(b) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
			return ts.Nano()
		}
		b = b[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(b)):]
	}
	return 0
}

// receivedAt is when the kernel received the data of the socket's last
// read, as an offset from the load's start, clamped to [from, now]; now
// without receive times.
func (w *h2Wire) receivedAt(r *runner, from, now time.Duration) time.Duration {
	if w == nil || w.stamp == nil {
		return now
	}
	at := w.stamp.at.Load()
	if at == 0 {
		return now
	}
	d := time.Duration(at - r.startWall.UnixNano())
	return max(from, min(d, now))
}

// remove unregisters w's socket (before it is closed).
func (sp *h2Spin) remove(w *h2Wire) {
	if sp == nil || w.events == nil {
		return
	}
	unix.EpollCtl(sp.epfd, unix.EPOLL_CTL_DEL, int(w.fd), nil)
	w.events = nil
}

// spin reports whether w's socket became readable within the busy poll
// or after the nap (read again) or not (park): the limit passed and the
// nap was taken, or a parked connection has data waiting.
func (w *h2Wire) spin(c *conn) bool {
	r := c.r
	sp := r.h2spin
	if sp == nil || w.events == nil {
		return false
	}
	start := time.Since(r.start)
	napped := false
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(sp.epfd),
			uintptr(unsafe.Pointer(unsafe.SliceData(w.events))), uintptr(len(w.events)), 0, 0, 0)
		if e != 0 && e != unix.EINTR {
			return false
		}
		parkedReady := false
		for _, ev := range w.events[:n] {
			if ev.Fd == w.fd {
				return true
			}
			if id := int(ev.Pad); id >= 0 && id < len(r.conns) {
				if o := r.conns[id].h2wire.Load(); o != nil && o.fd == ev.Fd && o.parked.Load() {
					parkedReady = true
				}
			}
		}
		if parkedReady {
			return false
		}
		if now := time.Since(r.start); now-start >= sp.limit {
			if napped || sp.nap <= 0 {
				return false
			}
			sp.sleep()
			napped = true
			c.naps.Add(1)
			c.napTime.Add(int64(time.Since(r.start) - now))
		}
		runtime.Gosched()
	}
}

// sleep naps for sp.nap by nanosleep, keeping the scheduler's P.
func (sp *h2Spin) sleep() {
	// The thread's timer slack (50µs by default) would lengthen every nap
	// by up to that much: 1ns asks for the nap as set. Per nap, since the
	// goroutine may run on any thread.
	unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_TIMERSLACK, 1, 0)
	// A signal (the runtime's preemption, at most once per 10ms)
	// interrupts it: sleep what is left.
	ts := unix.NsecToTimespec(int64(sp.nap))
	for {
		_, _, e := unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&ts)), 0)
		if e != unix.EINTR {
			return
		}
	}
}

// h2Event is an epoll event (h2Wire.events).
type h2Event = unix.EpollEvent
