package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/providers/ssh"
)

// remote-helper is the ssh provider's other end: the controller copies
// this binary to a host and runs it there in an SSH session, driving it
// over stdin and stdout (providers/ssh). Not for people: hidden.
func init() { rootCmd.AddCommand(newRemoteHelperCmd()) }

// newRemoteHelperCmd builds `benchflow remote-helper`.
func newRemoteHelperCmd() *cobra.Command {
	var owner string
	var idle time.Duration
	cmd := &cobra.Command{
		Use:    ssh.HelperCommand,
		Short:  "Run services on this host for a benchflow on another (started by the ssh provider over SSH)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer cancel()
			err := ssh.Serve(ctx, os.Stdin, os.Stdout, ssh.HelperOptions{Owner: owner, Idle: idle})
			if err != nil && ctx.Err() == nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&owner, "owner", "", "the benchflow process driving this helper")
	cmd.Flags().DurationVar(&idle, "idle", time.Minute, "stop everything and exit after this long without a request")
	return cmd
}
