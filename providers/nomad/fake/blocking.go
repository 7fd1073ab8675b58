package fake

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// notifier implements the raft-index part of blocking queries: an index
// that grows on every write and a channel closed on every change.
type notifier struct {
	mu      sync.Mutex
	index   uint64
	changed chan struct{}
}

func (n *notifier) init() {
	n.index = 1
	n.changed = make(chan struct{})
}

// bumpLocked advances the index and wakes blocked readers. n.mu is held.
func (n *notifier) bumpLocked() uint64 {
	n.index++
	close(n.changed)
	n.changed = make(chan struct{})
	return n.index
}

// block waits while the caller's index is current, as Consul and Nomad do
// for ?index=N: it returns when the index moves past N, after wait, or when
// the request ends.
func (n *notifier) block(ctx context.Context, index uint64, wait time.Duration) {
	n.blockOn(ctx, index, wait, func() uint64 { return n.index })
}

// blockOn is block for an index of its own (a table's, in Nomad: each
// endpoint reports and waits on the index of the table it reads). cur is
// called with n.mu held.
func (n *notifier) blockOn(ctx context.Context, index uint64, wait time.Duration, cur func() uint64) {
	if index == 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		n.mu.Lock()
		c, ch := cur(), n.changed
		n.mu.Unlock()
		if c > index {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// parseWait reads the wait query parameter: Consul takes "10s", "100ms",
// "5m"; the Nomad client sends milliseconds as "100ms". A bare number is
// seconds. The default is 5 minutes and the maximum 10 minutes, as
// documented for both products.
func parseWait(r *http.Request) time.Duration {
	w := r.URL.Query().Get("wait")
	d := 5 * time.Minute
	if w != "" {
		if v, err := time.ParseDuration(w); err == nil {
			d = v
		} else if v, err := strconv.Atoi(w); err == nil {
			d = time.Duration(v) * time.Second
		}
	}
	if d > 10*time.Minute {
		d = 10 * time.Minute
	}
	// Both products add up to wait/16 of jitter; the fake adds none.
	return d
}

func parseIndex(r *http.Request) uint64 {
	v, _ := strconv.ParseUint(r.URL.Query().Get("index"), 10, 64)
	return v
}

// boolParam reports a flag parameter that is present without a value
// ("?passing") or set to true.
func boolParam(r *http.Request, name string) bool {
	q := r.URL.Query()
	if !q.Has(name) {
		return false
	}
	v := strings.ToLower(q.Get(name))
	return v == "" || v == "true" || v == "1"
}
