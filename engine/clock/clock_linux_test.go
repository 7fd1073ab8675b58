//go:build linux

package clock

import (
	"testing"
	"time"
)

// TestLoopEnds: once no wait is pending — the last one cancelled, which
// wakes the loop at once — the loop has closed its timerfd and ended, so
// an idle process holds neither.
func TestLoopEnds(t *testing.T) {
	var s Sleeper
	s.Sleep(time.Millisecond, nil, nil)
	stop := make(chan struct{})
	go func() { time.Sleep(time.Millisecond); close(stop) }()
	s.Sleep(time.Hour, stop, nil)
	for i := 0; ; i++ {
		shared.mu.Lock()
		fd, n := shared.fd, len(shared.waits)
		shared.mu.Unlock()
		if fd == 0 && n == 0 {
			return
		}
		if i == 500 {
			t.Fatalf("timerfd %d still open with %d waits pending, nothing left to wait for", fd, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
