package steps

import (
	"context"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// provisionKind is `step "provision"`: provisioning of the named services
// as an explicit DAG node. Services no provision step names are
// provisioned before all other steps.
var provisionKind = &Kind{
	Name:      pipeline.KindProvision,
	Phase:     0,
	NewConfig: func() any { return &pipeline.ProvisionConfig{} },
	Validate: func(st *pipeline.Step, cfg any) hcl.Diagnostics {
		if len(cfg.(*pipeline.ProvisionConfig).Services) == 0 {
			return hcl.Diagnostics{AttrErr(st.Body, "services", "No services", "A provision step names at least one service.")}
		}
		return nil
	},
	Refs: func(cfg any) Refs { return Refs{Services: cfg.(*pipeline.ProvisionConfig).Services} },
	Run: func(ctx context.Context, t Trial, st *pipeline.Step, cfg any) error {
		return t.Provision(ctx, cfg.(*pipeline.ProvisionConfig).Services)
	},
}
