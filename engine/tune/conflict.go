package tune

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Two benchflow processes that tune the same sysctl would restore it under
// each other: the second records the first one's value as the original,
// the first puts the true original back while the second's trial still
// runs, and the second finally leaves the first one's value on the
// machine. The journals say who changed what, so the second is refused.

// ErrTunedElsewhere is returned (wrapped, in a SettingError) when another
// benchflow process has changed a sysctl and not yet restored it.
var ErrTunedElsewhere = errors.New("another benchflow process changed this sysctl and has not restored it")

// lockJournals takes an exclusive flock(2) on the journal folder (made if
// missing) and returns its release.
func lockJournals() (func(), error) {
	dir := journalDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// tunedElsewhere reports, as an error naming the process, a journal of
// another process that holds path (a net.* sysctl only in this network
// namespace: another namespace has its own). alive tells a live process's
// journal from a killed one's (nil: every one is live).
func tunedElsewhere(path string, alive func(map[string]string) bool) error {
	files, err := filepath.Glob(filepath.Join(journalDir(), "*.json"))
	if err != nil {
		return err
	}
	own := filepath.Base(ownJournal())
	netPath := strings.HasPrefix(filepath.Clean(path), filepath.Join(procfs.Root, "sys", "net")+"/")
	for _, f := range files {
		if filepath.Base(f) == own {
			continue
		}
		j, err := readJournal(f)
		if err != nil {
			continue // unreadable: RestoreJournals reports it
		}
		if netPath && j.NetNS != "" && j.NetNS != netNS() {
			continue
		}
		for _, e := range j.Sysctls {
			if filepath.Clean(e.Path) != filepath.Clean(path) {
				continue
			}
			pid := j.Owner["dev.benchflow.pid"]
			if pid == "" {
				pid = strings.TrimSuffix(filepath.Base(f), ".json")
			}
			if alive == nil || alive(j.Owner) {
				return fmt.Errorf("%w: benchflow pid %s changed it from %s (journal %s); two runs tuning the same sysctl restore it under each other, so run them one after the other", ErrTunedElsewhere, pid, e.Original, f)
			}
			return fmt.Errorf("%w: a killed benchflow (pid %s) changed it from %s (journal %s); `benchflow gc` restores it", ErrTunedElsewhere, pid, e.Original, f)
		}
	}
	return nil
}
