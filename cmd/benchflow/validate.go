package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/diag"
)

func init() { rootCmd.AddCommand(newValidateCmd()) }

// newValidateCmd builds `benchflow validate`.
func newValidateCmd() *cobra.Command {
	var vf varFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a pipeline without running anything",
		Long: `Validate parses a pipeline (.hcl or .star), resolves its variables, expands
its matrix and evaluates every trial's services and steps as far as possible
without provisioning anything. It exits 0 when the pipeline is valid and 1
otherwise, printing each problem as FILE:LINE,COL: Summary followed by a
sentence of detail and the offending line.`,
		Example: `  benchflow validate pipelines/quickstart.hcl
  benchflow validate study.hcl --var duration=5s
  benchflow validate study.hcl --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			pl, diags, err := buildPlan(stderr, args[0], &vf, asJSON)
			if asJSON {
				if e := diag.WriteJSON(out, diags); e != nil {
					return e
				}
				if err != nil {
					return &exitError{code: 1}
				}
				return nil
			}
			if err != nil {
				return err
			}
			off := ""
			if len(pl.ClaimsOff) > 0 {
				var names []string
				for _, c := range pl.ClaimsOff {
					names = append(names, c.Name)
				}
				off = "; claims off (enabled = false): " + strings.Join(names, ", ")
			}
			fmt.Fprintf(out, "%s: valid (%d trials, %d steps%s)\n", args[0], len(pl.Trials), len(pl.Steps), off)
			return nil
		},
	}
	vf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print diagnostics as JSON")
	return cmd
}
