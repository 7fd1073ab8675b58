package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/results"
)

func init() { rootCmd.AddCommand(newCompactCmd()) }

// newCompactCmd builds `benchflow compact`.
func newCompactCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compact RUN...",
		Short: "Merge a killed run's per-trial part files into its tables",
		Long: `While a run executes, each trial is committed as its own folder of part files
(RUN/parts/<trial-id>/trials.parquet, latency.parquet, …, trial.json), so a
commit costs the same at trial 10,000 as at trial 1. When the run finishes,
apply merges them into the run's single-file tables (trials.parquet,
latency.parquet, …) and removes parts/. A run that was killed (SIGKILL, power
loss) keeps its parts: report, compare and apply --resume read them as they
are, and compact merges them into the tables, as the end of the run would
have.

compact takes the run folder's lock: a run another benchflow process is
writing is refused. A run without parts is left as it is. Compacting again
after a kill during compaction is safe: every table is written whole before
it replaces the old one, and the parts go last. compact does not change the
run's status in manifest.json. What a killed writer of the run recorded
making (staging folders, temporary files) is removed first, exactly as
recorded; a recorded path that is not (a symlink on the way, another kind
of file) is left alone with a warning naming it: benchflow deletes only
what it recorded creating, and never through a symlink (docs/results.md).

RUN is a run directory (results/<run-id>) or a results folder, whose
"latest" run is used. docs/results.md describes both forms.`,
		Example: `  benchflow compact results/latest
  benchflow compact results/20261130T044500Z-3f9c results/20261201T101500Z-a1b2`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			failed := 0
			for _, a := range args {
				dir := a
				if real, err := filepath.EvalSymlinks(filepath.Join(a, "latest")); err == nil {
					if _, err := os.Stat(filepath.Join(a, "manifest.json")); err != nil {
						dir = real
					}
				}
				names, _ := filepath.Glob(filepath.Join(dir, results.PartsDir, "[^.]*"))
				c, err := results.Compact(dir)
				if c != nil {
					for _, x := range c.Removed {
						fmt.Fprintf(cmd.OutOrStdout(), "removed unfinished results file: %s\n", x)
					}
					for _, l := range c.Left {
						fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", l)
					}
				}
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "Error: %v\n", err)
					failed++
					continue
				}
				if len(names) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: no parts, nothing to compact\n", dir)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d trial part(s) merged into the tables\n", dir, len(names))
				}
			}
			if failed > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d of %d run(s) not compacted", failed, len(args))}
			}
			return nil
		},
	}
	return cmd
}
