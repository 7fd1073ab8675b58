//go:build !linux

package load

import "time"

// h2Spin is --busy-poll and --nap on the HTTP/2 client: Linux only
// (h2spin_linux.go); elsewhere connections park at once.
type h2Spin struct{}

func newH2Spin(_, _ time.Duration) *h2Spin { return nil }
func (sp *h2Spin) close()                  {}
func (sp *h2Spin) add(*h2Wire, int)        {}
func (sp *h2Spin) remove(*h2Wire)          {}
func (w *h2Wire) spin(*conn) bool          { return false }

// h2Stamp stands for a socket's kernel receive times (Linux only).
type h2Stamp struct{}

func (w *h2Wire) stampedRead(fd uintptr) bool { return w.rawRead(fd) }

func (w *h2Wire) receivedAt(_ *runner, _, now time.Duration) time.Duration { return now }

// h2Event stands for an epoll event (h2Wire.events).
type h2Event struct{}
