//go:build linux

package load

import (
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// h2Spin is --busy-poll (Options.BusyPoll) on the HTTP/2 client, whose
// connections are goroutines parked in the runtime's netpoller: a
// connection that finds nothing to read does not park at once but, for up
// to BusyPoll, lets the other connections run and looks again. A client
// that keeps running spares the server under test the wake-ups of a
// sleeping one (on one machine the server's writes pay for them), as the
// event loops' busy poll does.
//
// It looks through an epoll instance of its own in which every socket of
// the load is registered (level-triggered, so that it reports what is
// waiting, not what arrived since the last look): one epoll_wait(0)
// answers both "has my socket data?" and "has a connection that went to
// sleep data waiting?". The second stops the spin: a goroutine parked in
// the netpoller is woken only when the runtime polls, which it does when
// nothing else is runnable, so a spin that went on would delay it.
type h2Spin struct {
	epfd  int
	limit time.Duration
}

func newH2Spin(limit time.Duration) *h2Spin {
	if limit <= 0 {
		return nil
	}
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil // no busy poll: connections park as without it
	}
	return &h2Spin{epfd: fd, limit: limit}
}

func (sp *h2Spin) close() {
	if sp != nil {
		unix.Close(sp.epfd)
	}
}

// add registers w's socket, on slot id.
func (sp *h2Spin) add(w *h2Wire, id int) {
	if sp == nil || w.fd < 0 {
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: w.fd, Pad: int32(id)}
	if unix.EpollCtl(sp.epfd, unix.EPOLL_CTL_ADD, int(w.fd), &ev) == nil {
		w.events = make([]h2Event, 32)
	}
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
// (read again) or not (park): the limit passed, or a parked connection
// has data waiting.
func (w *h2Wire) spin(r *runner) bool {
	sp := r.h2spin
	if sp == nil || w.events == nil {
		return false
	}
	start := time.Since(r.start)
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
		if parkedReady || time.Since(r.start)-start >= sp.limit {
			return false
		}
		runtime.Gosched()
	}
}

// h2Event is an epoll event (h2Wire.events).
type h2Event = unix.EpollEvent
