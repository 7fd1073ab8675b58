// Package procfstest points procfs at a synthetic /proc for a test.
package procfstest

import (
	"testing"

	"github.com/benchflow/benchflow/engine/procfs"
)

// Root makes dir (a new empty folder when dir is "") the /proc that
// procfs reads until the test ends, and returns it.
func Root(t testing.TB, dir string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	old := procfs.Root
	procfs.Root = dir
	t.Cleanup(func() { procfs.Root = old })
	return dir
}
