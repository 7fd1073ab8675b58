// Package clock waits until a point in time within the kernel's timer
// precision, not Go's.
//
// A Go timer in a process with nothing else to run fires when the
// runtime's network poller wakes, and the poller sleeps in whole
// milliseconds (epoll_wait's timeout, rounded down, then at least 1 ms):
// such a timer fires up to a millisecond late, half a millisecond on
// average. benchflow serve's --delay was served that much late, and the
// load's schedule (open loop) sent requests that much late, which the
// corrected latency then counted as the server's.
//
// On Linux a Sleeper's wait ends by whichever fires first of Go's timer
// and a timerfd (clock_linux.go): in an idle process the timerfd, in a
// busy one Go's timer, which every scheduler P runs as it schedules,
// while the timerfd's goroutine may wait for a P behind busy ones. One
// goroutine reads the timerfd while waits are pending and ends, closing
// it, once none has been for 20 ms, so an idle process holds neither.
// Elsewhere a Sleeper is Go's timer.
package clock
