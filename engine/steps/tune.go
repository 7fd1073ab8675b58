package steps

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/tune"
)

// tuneKind is `step "tune"`: sysctls, rlimits, CPU pinning and nice,
// applied before checks and loads and undone when the trial ends.
var tuneKind = KindOf(Spec[pipeline.TuneConfig]{
	Name:     pipeline.KindTune,
	Phase:    1,
	Validate: validateTune,
	Refs:     func(c *pipeline.TuneConfig) Refs { return Refs{Services: c.Services} },
})

func validateTune(st *pipeline.Step, c *pipeline.TuneConfig) hcl.Diagnostics {
	var diags diagList
	body := st.Body
	for _, kv := range []struct{ name, v string }{{"service_cpus", c.ServiceCPUs}, {"loader_cpus", c.LoaderCPUs}} {
		if kv.v != "" {
			if _, err := tune.ParseCPUList(kv.v); err != nil {
				diags.add(AttrErr(body, kv.name, "Invalid CPU list", err.Error()+"."))
			}
		}
	}
	if c.Nice != nil && (*c.Nice < -20 || *c.Nice > 19) {
		diags.add(AttrErr(body, "nice", "Invalid nice value", fmt.Sprintf("nice must be between -20 and 19, not %d.", *c.Nice)))
	}
	if c.Nofile < 0 {
		diags.add(AttrErr(body, "nofile", "Invalid nofile", "nofile must be a positive number of file descriptors."))
	}
	for k := range c.Sysctl {
		if k == "" || strings.ContainsAny(k, " /\\") && !strings.Contains(k, ".") {
			diags.add(AttrErr(body, "sysctl", "Invalid sysctl name", fmt.Sprintf("%q is not a sysctl name like net.core.somaxconn.", k)))
		}
	}
	return hcl.Diagnostics(diags)
}
