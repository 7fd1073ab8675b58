package tune

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps the tests' journals out of the machine's state folder.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "benchflow-tune-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("BENCHFLOW_STATE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
