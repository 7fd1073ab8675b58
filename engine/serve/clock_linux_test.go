//go:build linux

package serve

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// TestPreciseClock: waits of many lengths, started together, each end no
// earlier than asked; a wait whose context ends first reports false; and
// once none is pending the clock's loop has closed its timerfd and ended.
func TestPreciseClock(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end := time.Now().Add(time.Duration(rand.Intn(30)+1) * time.Millisecond)
			if !sleepUntil(context.Background(), nil, end) {
				errs <- "a wait without a cancellation reported false"
			}
			if now := time.Now(); now.Before(end) {
				errs <- "woke " + end.Sub(now).String() + " early"
			}
			if i%10 == 0 {
				// One that is cancelled, and one already over.
				ctx, cancel := context.WithCancel(context.Background())
				go func() { time.Sleep(time.Millisecond); cancel() }()
				if sleepUntil(ctx, nil, time.Now().Add(time.Hour)) {
					errs <- "a cancelled wait reported true"
				}
				if !sleepUntil(context.Background(), nil, time.Now().Add(-time.Second)) {
					errs <- "a wait that was already over reported false"
				}
			}
		}()
	}
	stop := make(chan struct{})
	stopped := make(chan bool)
	go func() { stopped <- sleepUntil(context.Background(), stop, time.Now().Add(time.Hour)) }()
	time.Sleep(time.Millisecond)
	close(stop)
	if <-stopped {
		t.Error("a wait whose stop channel closed reported true")
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// The loop closes its timerfd once it finds nothing pending: after
	// the last removal it is woken at once.
	for i := 0; ; i++ {
		preciseClock.mu.Lock()
		fd, n := preciseClock.fd, len(preciseClock.waits)
		preciseClock.mu.Unlock()
		if fd == 0 && n == 0 {
			break
		}
		if i == 500 {
			t.Fatalf("timerfd %d still open with %d waits pending, nothing left to wait for", fd, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
