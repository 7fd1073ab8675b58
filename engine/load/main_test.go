package load

import (
	"fmt"
	"os"
	"testing"
)

// TestMain skips the whole package when BENCHFLOW_LOAD_ENGINE=uring asks
// for an engine this machine refuses (make test's uring pass on a kernel
// or sandbox without io_uring), saying why, rather than failing every load.
func TestMain(m *testing.M) {
	if os.Getenv(pollEngineEnv) == EngineUring {
		if err := UringAvailable(); err != nil {
			fmt.Printf("skipping the uring pass: %v\n", err)
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}
