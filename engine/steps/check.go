package steps

import (
	"fmt"
	"regexp"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// checkKind is `step "check"`: one request whose response must match
// before any load runs.
var checkKind = KindOf(Spec[pipeline.CheckConfig]{
	Name:     pipeline.KindCheck,
	Phase:    2,
	Validate: validateCheck,
})

func validateCheck(st *pipeline.Step, c *pipeline.CheckConfig) hcl.Diagnostics {
	var diags diagList
	body := st.Body
	diags.add(CheckURL(body, "url", c.URL), CheckDuration(body, "timeout", c.Timeout))
	if c.BodyMatches != "" {
		if _, err := regexp.Compile(c.BodyMatches); err != nil {
			diags.add(AttrErr(body, "body_matches", "Invalid regular expression", err.Error()+"."))
		}
	}
	if c.Status != 0 && (c.Status < 100 || c.Status > 599) {
		diags.add(AttrErr(body, "status", "Invalid status", fmt.Sprintf("status must be an HTTP status code, not %d.", c.Status)))
	}
	return hcl.Diagnostics(diags)
}
