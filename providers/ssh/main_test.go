package ssh

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain lets the test binary be its own remote helper: the provider
// copies os.Executable to the host and runs it with HelperCommand, as it
// runs benchflow's binary outside tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HelperCommand {
		fs := flag.NewFlagSet(HelperCommand, flag.ExitOnError)
		owner := fs.String("owner", "", "")
		idle := fs.Duration("idle", time.Minute, "")
		fs.Parse(os.Args[2:])
		if err := Serve(context.Background(), os.Stdin, os.Stdout, HelperOptions{Owner: *owner, Idle: *idle}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	linger = 0 // tests check the host right after teardown
	// Host records go to a folder of the tests' own, not the machine's.
	state, err := os.MkdirTemp("", "benchflow-ssh-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("BENCHFLOW_STATE_DIR", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}
