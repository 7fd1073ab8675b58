//go:build !linux

package clock

import "time"

// Sleeper is one goroutine's wait: Go's timer here (Linux's is a
// timerfd: clock_linux.go). It is not for concurrent use.
type Sleeper struct {
	t *time.Timer
}

// Sleep waits d: true then, false when a or b (nil: never) closed first.
func (s *Sleeper) Sleep(d time.Duration, a, b <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	if s.t == nil {
		s.t = time.NewTimer(d)
	} else {
		s.t.Reset(d)
	}
	select {
	case <-s.t.C:
		return true
	case <-a:
	case <-b:
	}
	s.t.Stop()
	return false
}

// Until waits until t (see Sleep).
func (s *Sleeper) Until(t time.Time, a, b <-chan struct{}) bool {
	return s.Sleep(time.Until(t), a, b)
}
