//go:build !linux

package serve

import (
	"context"
	"time"
)

// sleepUntil waits until end by Go's timer (Linux ends it by a timerfd:
// clock_linux.go); false when ctx or stop ended first.
func sleepUntil(ctx context.Context, stop <-chan struct{}, end time.Time) bool {
	d := time.Until(end)
	if d <= 0 {
		return true
	}
	return sleepTimer(ctx, stop, d)
}
