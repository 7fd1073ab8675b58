//go:build linux

package clock

import (
	"container/heap"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Sleeper is one goroutine's wait, reused from one to the next. The zero
// value is ready; it is not for concurrent use.
//
// A wait ends by whichever fires first of Go's timer and the shared
// timerfd: in an idle process the timerfd (Go's timer is up to 1 ms
// late), in a busy one Go's timer — the timerfd's goroutine, back from
// its read, needs a scheduler P like any other and can wait for one
// behind busy goroutines, while Go's timers are run by every P as it
// schedules.
type Sleeper struct {
	w wait
	t *time.Timer
}

// wait is one pending wait: a token is sent on ch at at (CLOCK_MONOTONIC
// nanoseconds).
type wait struct {
	at int64
	ch chan struct{} // buffered 1, made once
	i  int           // index in the heap, -1 when not in it
}

// Sleep waits d: true then, false when a or b (nil: never) closed first.
func (s *Sleeper) Sleep(d time.Duration, a, b <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	w := &s.w
	if w.ch == nil {
		w.ch, w.i = make(chan struct{}, 1), -1
		s.t = time.NewTimer(d)
	} else {
		s.t.Reset(d)
	}
	precise := shared.add(w, monoNow()+int64(d))
	var tick <-chan struct{}
	if precise {
		tick = w.ch
	}
	ok := false
	select {
	case <-tick:
		ok = true
	case <-s.t.C:
		ok = true
	case <-a:
	case <-b:
	}
	s.t.Stop()
	if precise {
		shared.remove(w)
	}
	return ok
}

// Until waits until t (see Sleep).
func (s *Sleeper) Until(t time.Time, a, b <-chan struct{}) bool {
	return s.Sleep(time.Until(t), a, b)
}

// monoNow is CLOCK_MONOTONIC in nanoseconds.
func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// shared is the process's timerfd and its pending waits.
var shared clock

type clock struct {
	mu    sync.Mutex
	fd    int // the timerfd; 0 when no loop runs
	armed int64
	waits waitHeap
	// idleUntil, with no wait pending, is when the loop ends (0 while
	// waits are pending).
	idleUntil int64
}

// linger is how long the loop stays with no wait pending before it ends:
// a client or server that waits again and again keeps one goroutine and
// one timerfd rather than making them anew for each wait.
const linger = 20 * time.Millisecond

// add makes w pending until at; false when no timerfd can be had.
func (c *clock) add(w *wait, at int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd == 0 {
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
		if err != nil {
			return false
		}
		c.fd, c.armed = fd, 0
		go c.loop(fd)
	}
	select {
	case <-w.ch: // a token left by a wait removed as it fired
	default:
	}
	w.at = at
	c.idleUntil = 0
	heap.Push(&c.waits, w)
	if w.i == 0 && (c.armed == 0 || at < c.armed) {
		c.arm(at)
	}
	return true
}

// remove drops a wait that ended otherwise; with none left, the loop is
// woken to end.
func (c *clock) remove(w *wait) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.i < 0 {
		return // it fired meanwhile: add drains the token
	}
	heap.Remove(&c.waits, w.i)
	w.i = -1
	if len(c.waits) == 0 {
		c.idleUntil = monoNow() + int64(linger)
		c.arm(c.idleUntil)
	}
}

// arm sets the timerfd to fire at at (c.mu held).
func (c *clock) arm(at int64) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(at)}
	unix.TimerfdSettime(c.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
	c.armed = at
}

// loop wakes the waits that are due each time the timerfd fires, and
// ends, closing it, once no wait has been pending for linger.
func (c *clock) loop(fd int) {
	var buf [8]byte
	for {
		_, err := unix.Read(fd, buf[:])
		broken := err != nil && err != unix.EINTR && err != unix.EAGAIN
		c.mu.Lock()
		c.armed = 0
		now := monoNow()
		for len(c.waits) > 0 && (broken || c.waits[0].at <= now) {
			// A broken timerfd cannot happen; if it did, everyone
			// is woken rather than left waiting.
			w := heap.Pop(&c.waits).(*wait)
			w.i = -1
			select {
			case w.ch <- struct{}{}:
			default:
			}
		}
		switch {
		case len(c.waits) > 0:
			c.arm(c.waits[0].at)
		case broken || c.idleUntil != 0 && now >= c.idleUntil:
			unix.Close(fd)
			c.fd, c.idleUntil = 0, 0
			c.mu.Unlock()
			return
		case c.idleUntil == 0:
			c.idleUntil = now + int64(linger)
			c.arm(c.idleUntil)
		default:
			c.arm(c.idleUntil)
		}
		c.mu.Unlock()
	}
}

// waitHeap is a min-heap of waits by end.
type waitHeap []*wait

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *waitHeap) Push(x any) {
	w := x.(*wait)
	w.i = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}
