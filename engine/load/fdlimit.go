//go:build unix

package load

import (
	"fmt"
	"syscall"

	"github.com/benchflow/benchflow/engine/procfs"
)

// fdReserve is what the generator needs besides its connections: event
// loop descriptors, wake-up pipes, the results files, the Go runtime.
const fdReserve = 32

// checkFDLimit refuses, before any connection is made, a load whose
// connections cannot all be open at once under RLIMIT_NOFILE: past the
// limit every connect fails at once and the load would only spin on
// connect errors.
func checkFDLimit(conns, endpoints int) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == ^uint64(0) {
		return nil
	}
	open := 0
	if n, err := procfs.OpenFiles(procfs.Self); err == nil {
		open = n
	}
	need := uint64(conns)*uint64(max(endpoints, 1)) + uint64(open) + fdReserve
	if need <= rl.Cur {
		return nil
	}
	return fmt.Errorf("%d connections need %d file descriptors (with %d open and %d in reserve), but this process may open %d (RLIMIT_NOFILE, `ulimit -n`): raise the limit (ulimit -n %d) or use at most %d connections",
		conns, need, open, fdReserve, rl.Cur, need, max(int64(rl.Cur)-int64(open)-fdReserve, 0)/int64(max(endpoints, 1)))
}
