//go:build !linux

package load

import (
	"errors"
	"sync"
	"syscall"
)

// sockRead and sockWrite are the goroutine engine's socket reads and
// writes (rawSock).
func sockRead(fd int, b []byte) (int, error)  { return syscall.Read(fd, b) }
func sockWrite(fd int, b []byte) (int, error) { return syscall.Write(fd, b) }

// Elsewhere than Linux every load runs on the goroutine engine (conn.go).

type pollEndpoint struct{}

func (r *runner) resolveForPoll() ([]pollEndpoint, bool) { return nil, false }

func (r *runner) startPoll([]pollEndpoint, *sync.WaitGroup) (string, func(), bool) {
	return "", nil, false
}

// UringAvailable reports why the io_uring engine cannot run: it is Linux
// only.
func UringAvailable() error { return errors.New("io_uring is Linux only") }
