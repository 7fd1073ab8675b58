package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/agent"
)

func init() {
	var (
		listen string
		index  int
		idle   time.Duration
		linger bool
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a load agent: one share of a distributed load step",
		Long: `agent runs one load generator of a load or warm step with an agents block
(see docs/distributed.md). Pipelines start agents themselves, through a provider
(local processes, Kubernetes pods, a Nomad raw_exec job); you rarely run it by hand.

The agent listens on --listen and speaks a small HTTP+JSON protocol with the
benchflow that runs the pipeline (the controller): hello, clock probes (the
controller measures the agent's clock offset and corrects the start instant by
it), a start command with the agent's share of the load and the common start
instant, and the result (HDR histograms encoded losslessly, counters, its own
CPU time and open-loop lag). It prints "agent listening on ADDR" once ready.

An agent runs loads one after another (a capacity search sends one per
probe), each bounded like every load (requests and duration), and exits when the controller stops it or after --idle without a controller
(nothing open and no request), which also cancels a running load. With
--linger, a stop from the controller only cancels the load: the agent exits on
SIGTERM/SIGINT or after --idle, so a scheduler that counts a task ending on its
own as a failure (a Nomad service job) sees it stopped instead (Nomad agents
run with it).`,
		Example: `  benchflow agent --listen 127.0.0.1:0
  benchflow agent --listen :7700 --idle 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			shift, err := agent.ParseClockShift(os.Getenv(agent.ClockShiftEnv), index)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			errw := cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return agent.Serve(ctx, agent.ServeOptions{
				Listen: listen, Index: index, Version: version, Idle: idle, Linger: linger, ClockShift: shift,
				Ready: func(a string) { fmt.Fprintf(out, "agent listening on %s\n", a) },
				Logf: func(format string, args ...any) {
					fmt.Fprintf(errw, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
				},
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	f.IntVar(&index, "index", 0, "the agent's position in its group (0-based), for its log and messages")
	f.DurationVar(&idle, "idle", 60*time.Second, "exit after this long without a controller")
	f.BoolVar(&linger, "linger", false, "when the controller stops the agent, cancel the load but keep running until SIGTERM or --idle")
	rootCmd.AddCommand(cmd)
}
