package steps

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// execKind is `step "exec"`: a command run on the host.
var execKind = KindOf(Spec[pipeline.ExecConfig]{
	Name:  pipeline.KindExec,
	Phase: 2,
	Validate: func(st *pipeline.Step, c *pipeline.ExecConfig) hcl.Diagnostics {
		var diags diagList
		diags.add(CheckDuration(st.Body, "timeout", c.Timeout))
		if len(c.Command) == 0 {
			diags.add(AttrErr(st.Body, "command", "Empty command", "command needs at least the program to run."))
		}
		return hcl.Diagnostics(diags)
	},
})
