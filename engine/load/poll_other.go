//go:build !linux

package load

import "sync"

// Elsewhere than Linux every load runs on the goroutine engine (conn.go).

type pollEndpoint struct{}

func (r *runner) resolveForPoll() ([]pollEndpoint, bool) { return nil, false }

func (r *runner) startPoll([]pollEndpoint, *sync.WaitGroup) (func(), bool) { return nil, false }
