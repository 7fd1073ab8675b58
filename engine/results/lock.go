package results

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrRunLocked is returned (wrapped) by Resume when another process is
// writing the run folder.
var ErrRunLocked = errors.New("another benchflow process is writing this run")

// lockRun takes an exclusive flock(2) on the run folder, held while this
// process writes it: two `apply --resume` of one run would both run every
// pending trial. The lock is released by unlockRun or when the process
// ends, however it ends.
func lockRun(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (wait for it to end, or stop it); the run folder is locked while a process writes it", ErrRunLocked)
		}
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return f, nil
}

func unlockRun(f *os.File) {
	if f != nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
