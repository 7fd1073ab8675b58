package main

import (
	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/run"
)

func init() { rootCmd.AddCommand(newRenderCmd()) }

// newRenderCmd builds `benchflow render`.
func newRenderCmd() *cobra.Command {
	var vf varFlags
	var provider, trial string
	cmd := &cobra.Command{
		Use:   "render FILE",
		Short: "Print what a trial gives its providers: commands, rendered files, manifests",
		Long: `Render evaluates one trial of a pipeline (the first, or --trial) as apply
does and prints what the providers of its services are given, without
starting or contacting anything: for local and docker the command, image,
env, ports, health check, provider settings and every rendered file; for
k8s the Kubernetes manifests, for nomad the job (JSON).`,
		Example: `  benchflow render pipelines/nginx-local.hcl --trial c02-r1
  benchflow render pipelines/k8s-ingress.hcl --provider k8s
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
	return cmd
}
