package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
)

// serviceDirPrefix names a trial's service folder. It carries the owning
// benchflow's pid so that gc can tell a folder of a killed run (whose
// teardown never ran) from one in use.
func serviceDirPrefix(runID, trialID, service string) string {
	return fmt.Sprintf("benchflow-%s-%s-%s-p%d-", runID, trialID, service, os.Getpid())
}

var serviceDirRe = regexp.MustCompile(`^benchflow-.+-p(\d+)-\d+$`)

// gcTempDirs removes service folders whose owning process is gone and
// returns their paths.
func gcTempDirs() ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(tempRoot(), "benchflow-*-p*-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, m := range matches {
		sm := serviceDirRe.FindStringSubmatch(filepath.Base(m))
		if sm == nil {
			continue
		}
		pid, err := strconv.Atoi(sm[1])
		if err != nil || pid <= 0 || ownerAlive(pid) {
			continue
		}
		if err := os.RemoveAll(m); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, m)
	}
	return removed, errors.Join(errs...)
}

func ownerAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
