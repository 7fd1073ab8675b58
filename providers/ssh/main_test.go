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
	os.Exit(m.Run())
}
