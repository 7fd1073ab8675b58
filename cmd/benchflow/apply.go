package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/run"
	"github.com/benchflow/benchflow/engine/starconf/script"
)

func init() { rootCmd.AddCommand(newApplyCmd()) }

// newApplyCmd builds `benchflow apply`.
func newApplyCmd() *cobra.Command {
	var vf varFlags
	var out, resume string
	var force, quiet, verbose, noGC bool
	var metricsAddr string
	cmd := &cobra.Command{
		Use:   "apply FILE",
		Short: "Run a pipeline and write its results",
		Long: `Apply runs every trial of a pipeline: it provisions the services, runs the
steps (tune, check, warm, load, collect, exec), tears everything down and
records the trial in DIR/<run-id>/ (manifest.json, trials.parquet, …), with
DIR/latest pointing at the run. Each trial is committed when it ends, so an
interrupted run keeps its finished trials and can be completed with --resume.

Ctrl-C (SIGINT) or SIGTERM stops the current trial, tears it down and marks
it interrupted; a second Ctrl-C exits at once after killing every process
and container the run started. Exit status: 0 when every trial completed,
1 when a trial failed, the pipeline is invalid or a flag is wrong, 130 when
interrupted.`,
		Example: `  benchflow apply pipelines/quickstart.hcl
  benchflow apply study.hcl --var duration=5s --out /data/results
  benchflow apply study.hcl --resume results/20261130T044500Z-3f9c`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if quiet && verbose {
				return &exitError{code: 1, err: errors.New("--quiet and --verbose cannot be used together")}
			}
			pl, _, err := buildPlan(stderr, args[0], &vf, false)
			if err != nil {
				return err
			}
			ro := run.Options{Resume: resume, Force: force, NoGC: noGC, OutDir: out}
			stopMetrics, err := applyMetrics(&ro, metricsAddr)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer stopMetrics()
			_, err = applyPlan(pl, ro, quiet, verbose)
			return err
		},
	}
	vf.register(cmd)
	cmd.Flags().StringVarP(&out, "out", "o", "", "results directory (default: the pipeline's output dir, or \"results\")")
	cmd.Flags().StringVar(&resume, "resume", "", "complete an interrupted run: the run directory DIR/<run-id>")
	cmd.Flags().BoolVar(&force, "force", false, "with --resume: continue even if the pipeline or its variables changed")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only warnings, failures and the final summary")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every step and provider action")
	cmd.Flags().BoolVar(&noGC, "no-gc", false, "do not remove leftovers of crashed runs before starting")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "", "serve live Prometheus metrics of each load at http://`ADDR`/metrics, trial by trial (labels run, trial, step); port 0 picks a free one, printed on stderr")
	return cmd
}

// applyPlan runs a plan as apply does (console, Ctrl-C handling, exit
// status): apply and reproduce share it. The summary is returned also when
// trials failed (its Dir names the run); the error is an *exitError.
func applyPlan(pl *plan.Plan, opts run.Options, quiet, verbose bool) (*run.Summary, error) {
	console := &Console{W: stderr, TTY: isTerminal(os.Stderr), Quiet: quiet, Verbose: verbose}
	opts.Version, opts.Reporter = version, console
	if opts.Requesters == nil {
		// Load steps with script = "…" use Starlark request scripts.
		opts.Requesters = script.NewRequester
	}
	runner := run.New(pl, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for range sigs {
			n++
			if n == 1 {
				fmt.Fprintln(stderr, "\ninterrupt: stopping the current trial and tearing down (Ctrl-C again to force)")
				cancel()
				continue
			}
			fmt.Fprintln(stderr, "\nforced exit: killing everything the run started")
			runner.Kill()
			os.Exit(130)
		}
	}()
	s, err := runner.Apply(ctx)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, run.ErrInterrupted):
		return s, &exitError{code: 130, err: err}
	default:
		return s, &exitError{code: 1, err: err}
	}
}
