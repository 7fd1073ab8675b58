package main

import (
	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/run"
)

func init() {
	var vf varFlags
	var provider, trial string
	cmd := &cobra.Command{
		Use:   "render FILE",
		Short: "Print what a provider would create for a trial (e.g. Kubernetes YAML)",
		Long: `Render evaluates one trial of a pipeline (the first, or --trial) and prints
what the providers of its services would create, without contacting any
cluster: Kubernetes manifests for the k8s provider, the job for nomad.`,
		Example: `  benchflow render pipelines/k8s-ingress.hcl --provider k8s
  benchflow render study.hcl --provider k8s --trial c03-r1 > manifests.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pl, _, err := buildPlan(stderr, args[0], &vf, false)
			if err != nil {
				return err
			}
			if err := run.Render(cmd.OutOrStdout(), pl, trial, provider); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	vf.register(cmd)
	cmd.Flags().StringVar(&provider, "provider", "", "only services deployed by this provider type or name (e.g. k8s)")
	cmd.Flags().StringVar(&trial, "trial", "", "the trial to render (default: the first in execution order)")
	rootCmd.AddCommand(cmd)
}
