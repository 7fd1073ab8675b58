package load

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// firstOutcome is told each slot's first outcome. When the first connect
// of every slot was refused by the load's one address — nothing listens
// there — the load stops at
// once instead of counting refusals for its whole duration (as h2load
// gives up; wrk would count them to the end).
func (r *runner) firstOutcome(o outcome) {
	if o.err == nil || o.class != classConnect || !errors.Is(o.err, syscall.ECONNREFUSED) {
		return
	}
	if len(r.addrs()) > 1 {
		return // another address may answer: the load goes on
	}
	if r.refused.Add(1) == int64(len(r.conns)) {
		r.allRefused.Store(true)
		go r.halt()
	}
}

// refusedHint is what a load stopped because every first connect was
// refused adds to its error.
func (r *runner) refusedHint() string {
	if !r.allRefused.Load() {
		return ""
	}
	return fmt.Sprintf("; stopped at once: the first connect of every connection was refused (is a server listening on %s?)", strings.Join(r.addrs(), ", "))
}

// addrs are the distinct addresses of the load's endpoints.
func (r *runner) addrs() []string {
	seen := map[string]bool{}
	var addrs []string
	for _, e := range r.endpoints {
		if !seen[e.addr] {
			seen[e.addr] = true
			addrs = append(addrs, e.addr)
		}
	}
	return addrs
}
