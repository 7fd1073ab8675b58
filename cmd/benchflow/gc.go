package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/run"
)

func init() {
	var runID string
	var only []string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove what crashed runs left behind (containers, processes, cluster objects)",
		Long: `Every process, container, network, Kubernetes object and Nomad job benchflow
creates carries the label dev.benchflow.managed=true and the run id. A run
that was killed (SIGKILL, power loss) cannot tear down; gc finds those
leftovers through each provider's API and removes them, along with the
rendered service folders in $TMPDIR whose benchflow process is gone. apply runs it for
the providers a pipeline uses before starting (unless --no-gc).

Backends that cannot be reached (no Docker engine, no kubeconfig) are
skipped with a note.`,
		Example: `  benchflow gc
  benchflow gc --provider docker
  benchflow gc --run 20261130T044500Z-3f9c`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return &exitError{code: 1, err: fmt.Errorf("--timeout %s: must be positive", timeout)}
			}
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
			defer cancel()
			ctx, cancel2 := context.WithTimeout(ctx, timeout)
			defer cancel2()
			if err := run.GC(ctx, cmd.OutOrStdout(), runID, only); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "only remove what this run id left (default: every benchflow-managed object)")
	cmd.Flags().StringSliceVar(&only, "provider", nil, "only these provider types (repeatable)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this long")
	rootCmd.AddCommand(cmd)
}
