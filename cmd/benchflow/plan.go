package main

import (
	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/diag"
)

func init() { rootCmd.AddCommand(newPlanCmd()) }

// newPlanCmd builds `benchflow plan`.
func newPlanCmd() *cobra.Command {
	var vf varFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Print the trials and the step DAG a pipeline would run",
		Long: `Plan prints the trials of a pipeline in execution order with their matrix
parameters and the provider of each service, then the step DAG, without
touching anything. Values known only after provisioning (service URLs) are
shown as ${service.<name>.url}. With --json it prints the same as JSON,
including each trial's evaluated service and step settings.`,
		Example: `  benchflow plan pipelines/quickstart.hcl
  benchflow plan pipelines/quickstart.hcl --repetitions 5 --json | jq '.trials[].params'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			pl, diags, err := buildPlan(stderr, args[0], &vf, asJSON)
			if err != nil {
				if asJSON {
					_ = diag.WriteJSON(out, diags)
				}
				return err
			}
			if asJSON {
				return pl.WriteJSON(out)
			}
			return pl.WriteText(out)
		},
	}
	vf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}
