package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/run"
	"github.com/benchflow/benchflow/providers/k8s"
)

func init() { rootCmd.AddCommand(newGCCmd()) }

// newGCCmd builds `benchflow gc`.
func newGCCmd() *cobra.Command {
	var runID string
	var only []string
	var timeout time.Duration
	var verbose bool
	var kubeconfig, kubeContext string
	var outDir string
	var vf varFlags
	cmd := &cobra.Command{
		Use:   "gc [FILE]",
		Short: "Remove what crashed runs left behind (containers, processes, cluster objects)",
		Long: `Every process, container, network, Kubernetes object and Nomad job benchflow
creates carries the label dev.benchflow.managed=true and the run id. A run
that was killed (SIGKILL, power loss) cannot tear down; gc finds those
leftovers through each provider's API and removes them, along with the
rendered service folders in $TMPDIR whose benchflow process is gone, and
restores the sysctls a killed run changed (tune steps journal each original
value in the state folder before changing it; see docs/cli.md), and removes
the staging folders and temporary files a killed run left in its results
folder (--out, default ./results) and marks such a run "interrupted" instead
of "running", and removes what a killed publish, reproduce or export left
outside a run (a .DIR.tmp-N beside a bundle, $TMPDIR/benchflow-reproduce-N).
benchflow deletes only what it recorded creating, and never through a
symlink: each of those paths is recorded in a journal before it is made, gc
removes only recorded paths whose process is gone, opening every component
without following a symlink, and a recorded path that is not exactly what
the record says (a symlink at it or on its way, another kind of file, gone)
is left alone with a warning naming it and why. Only run folders that no
process writes are cleaned; nothing a journal does not name is touched. The sysctls, service folders and results are the local
machine's part: gc does them without --provider or with --provider local.
apply runs gc for the providers a pipeline uses before starting (unless
--no-gc).

Only what crashed runs left is removed: every object also records the
benchflow process that created it (host, pid, start time), and objects whose
process still runs — another apply in progress — are kept, as are objects
created on another host (nothing here can tell whether that run is alive).
--run removes what the named run left, whoever owns it.

With a pipeline FILE (and its --var flags), gc reaches the engines and
clusters that pipeline's provider blocks name (docker host, kubeconfig and
context, Nomad address) and only its provider types; without one it uses each
type's defaults from the environment. --kubeconfig and --context name a
Kubernetes cluster directly (gc then looks only at k8s, unless a FILE or
--provider says more).

Backends that cannot be reached (no Docker engine, no kubeconfig) are
skipped; the note "skipped k8s: …" is printed only with -v, with --provider
naming that backend, or for a backend the pipeline FILE configures.`,
		Example: `  benchflow gc
  benchflow gc --provider docker
  benchflow gc --provider local -o results
  benchflow gc --run 20261130T044500Z-3f9c
  benchflow gc pipelines/k8s-ingress.hcl --var kubeconfig=$HOME/.kube/lab -v
  benchflow gc --kubeconfig /run/benchflow-cluster/admin.kubeconfig`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return &exitError{code: 1, err: fmt.Errorf("--timeout %s: must be positive", timeout)}
			}
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
			defer cancel()
			ctx, cancel2 := context.WithTimeout(ctx, timeout)
			defer cancel2()
			o := run.GCOptions{RunID: runID, Only: only, Verbose: verbose, ResultsDir: outDir}
			if len(args) == 1 {
				pl, _, err := buildPlan(cmd.ErrOrStderr(), args[0], &vf, false)
				if err != nil {
					return err
				}
				o.Configs = run.ProviderConfigs(pl)
				if outDir == "" {
					o.ResultsDir = pl.Pipeline.Output.Dir
				}
			}
			if o.ResultsDir == "" {
				o.ResultsDir = "results"
			}
			if kubeconfig != "" || kubeContext != "" {
				if o.Configs == nil {
					o.Configs = map[string][]any{}
				}
				o.Configs["k8s"] = append(o.Configs["k8s"], &k8s.Config{Kubeconfig: kubeconfig, Context: kubeContext})
			}
			if err := run.GC(ctx, cmd.OutOrStdout(), o); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "only remove what this run id left (default: every benchflow-managed object)")
	cmd.Flags().StringSliceVar(&only, "provider", nil, "only these provider types (repeatable)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this long")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the k8s cluster of this kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	cmd.Flags().StringVar(&kubeContext, "context", "", "the k8s cluster of this kubeconfig context (default: the current one)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list the objects kept because their run is alive, and the backends skipped because they cannot be reached")
	cmd.Flags().StringVarP(&outDir, "out", "o", "", "results folder to clean of unfinished writes of killed runs (default: the pipeline's output dir, or \"results\")")
	vf.registerVars(cmd)
	return cmd
}
