package steps

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// provisionKind is `step "provision"`: provisioning of the named services
// as an explicit DAG node. Services no provision step names are
// provisioned before all other steps.
var provisionKind = KindOf(Spec[pipeline.ProvisionConfig]{
	Name:  pipeline.KindProvision,
	Phase: 0,
	Validate: func(st *pipeline.Step, c *pipeline.ProvisionConfig) hcl.Diagnostics {
		if len(c.Services) == 0 {
			return hcl.Diagnostics{AttrErr(st.Body, "services", "No services", "A provision step names at least one service.")}
		}
		return nil
	},
	Refs:    func(c *pipeline.ProvisionConfig) Refs { return Refs{Services: c.Services} },
	Deploys: func(c *pipeline.ProvisionConfig) []string { return c.Services },
})
