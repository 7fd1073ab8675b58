//go:build linux

package serve

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// preciseClock ends --delay and stall waits by a timerfd: within the
// kernel's timer precision (tens of microseconds here), not Go's. A Go
// timer in a process with nothing else to run fires when the runtime's
// network poller wakes, and it sleeps in whole milliseconds (epoll_wait's
// timeout): a 20 ms delay was served in 20–21 ms, half a millisecond late
// on average, and the yardstick server's service time was that much off.
//
// One goroutine waits on the timerfd (a blocking read, so one thread)
// while any wait is pending, and wakes every wait that is due; it closes
// the timerfd and ends when none is left, so an idle server holds neither.
var preciseClock clock

type clock struct {
	mu    sync.Mutex
	fd    int // the timerfd; 0 when no loop runs
	waits clockHeap
}

// clockWait is one pending wait: ch is closed at (CLOCK_MONOTONIC ns).
type clockWait struct {
	at int64
	ch chan struct{}
	i  int // index in the heap, -1 once woken or removed
}

// monoNow is CLOCK_MONOTONIC in nanoseconds.
func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// sleepUntil waits until end: true then, false when ctx or stop ended
// first.
func sleepUntil(ctx context.Context, stop <-chan struct{}, end time.Time) bool {
	d := time.Until(end)
	if d <= 0 {
		return true
	}
	w := preciseClock.add(monoNow() + int64(d))
	if w == nil {
		return sleepTimer(ctx, stop, d) // no timerfd: Go's timer
	}
	select {
	case <-w.ch:
		return true
	case <-ctx.Done():
	case <-stop:
	}
	preciseClock.remove(w)
	return false
}

// add registers a wait ending at at; nil when no timerfd can be had.
func (c *clock) add(at int64) *clockWait {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd == 0 {
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
		if err != nil {
			return nil
		}
		c.fd = fd
		go c.loop(fd)
	}
	w := &clockWait{at: at, ch: make(chan struct{})}
	heap.Push(&c.waits, w)
	if w.i == 0 {
		c.arm(at)
	}
	return w
}

// remove drops a wait that ended otherwise; with none left, the loop is
// woken to end.
func (c *clock) remove(w *clockWait) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.i < 0 {
		return
	}
	heap.Remove(&c.waits, w.i)
	w.i = -1
	if len(c.waits) == 0 {
		c.arm(1) // long past: fires at once
	}
}

// arm sets the timerfd to fire at at (c.mu held).
func (c *clock) arm(at int64) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	unix.TimerfdSettime(c.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

// loop wakes the waits that are due each time the timerfd fires, and
// ends, closing it, when no wait is left.
func (c *clock) loop(fd int) {
	var buf [8]byte
	for {
		if _, err := unix.Read(fd, buf[:]); err != nil && err != unix.EINTR && err != unix.EAGAIN {
			// Cannot happen with a valid timerfd; wake everyone rather
			// than leave them waiting.
			c.mu.Lock()
			for len(c.waits) > 0 {
				w := heap.Pop(&c.waits).(*clockWait)
				w.i = -1
				close(w.ch)
			}
			unix.Close(fd)
			c.fd = 0
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		now := monoNow()
		for len(c.waits) > 0 && c.waits[0].at <= now {
			w := heap.Pop(&c.waits).(*clockWait)
			w.i = -1
			close(w.ch)
		}
		if len(c.waits) == 0 {
			unix.Close(fd)
			c.fd = 0
			c.mu.Unlock()
			return
		}
		c.arm(c.waits[0].at)
		c.mu.Unlock()
	}
}

// clockHeap is a min-heap of waits by end.
type clockHeap []*clockWait

func (h clockHeap) Len() int           { return len(h) }
func (h clockHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h clockHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *clockHeap) Push(x any) {
	w := x.(*clockWait)
	w.i = len(*h)
	*h = append(*h, w)
}
func (h *clockHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}
