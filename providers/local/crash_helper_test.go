package local

import "runtime"

// lockAndExit ends its goroutine while locked to its OS thread, which makes
// the Go runtime terminate that thread.
func lockAndExit() {
	runtime.LockOSThread()
}
