package clock

import (
	"math/rand"
	"sync"
	"testing"
	"time"
)

// TestSleeper: waits of many lengths, started together, each end no
// earlier than asked, and a Sleeper reused after a cancelled wait still
// waits its whole length; a wait whose channel closes first reports
// false; one already over reports true at once.
func TestSleeper(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 400)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s Sleeper
			for range 3 {
				d := time.Duration(rand.Intn(20)+1) * time.Millisecond
				begin := time.Now()
				if !s.Sleep(d, nil, nil) {
					errs <- "a wait without a cancellation reported false"
				}
				if got := time.Since(begin); got < d {
					errs <- "woke " + (d - got).String() + " early"
				}
				if i%10 == 0 {
					stop := make(chan struct{})
					go func() { time.Sleep(time.Millisecond); close(stop) }()
					if s.Sleep(time.Hour, nil, stop) {
						errs <- "a cancelled wait reported true"
					}
					if !s.Until(time.Now().Add(-time.Second), nil, nil) {
						errs <- "a wait that was already over reported false"
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
