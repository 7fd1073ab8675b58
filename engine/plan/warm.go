package plan

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// checkWarmUntil validates until/window/tolerance of a load or warm step:
// until is "steady" or unset, and only on warm steps; window is a duration
// shorter than the step's duration; tolerance a percentage.
func checkWarmUntil(st *pipeline.Step, c *pipeline.LoadConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	body := st.Body
	if c.Until == "" {
		for _, name := range []string{"window", "tolerance"} {
			if (name == "window" && c.Window != "") || (name == "tolerance" && c.Tolerance != "") {
				diags = append(diags, attrErr(body, name, "Setting needs until", fmt.Sprintf("%s only applies with until = \"steady\" on a warm step.", name)))
			}
		}
		return diags
	}
	if c.Until != "steady" {
		return append(diags, attrErr(body, "until", "Invalid until", fmt.Sprintf("until must be \"steady\" (warm until req/s and p50 are stable), not %q.", c.Until)))
	}
	if st.Kind != pipeline.KindWarm {
		return append(diags, attrErr(body, "until", "until on a load step", "until = \"steady\" is for warm steps: a load step measures for its whole duration."))
	}
	if c.Requests > 0 {
		diags = append(diags, attrErr(body, "requests", "Conflicting settings", "A warm step with until = \"steady\" is bounded by duration, not requests."))
	}
	if d := checkDuration(body, "window", c.Window); d != nil {
		diags = append(diags, d)
	}
	if c.Tolerance != "" {
		if _, err := pipeline.ParsePercent(c.Tolerance); err != nil {
			diags = append(diags, attrErr(body, "tolerance", "Invalid tolerance", err.Error()+"."))
		}
	}
	if c.Window != "" && c.Duration != "" {
		w, err1 := pipeline.ParseDuration(c.Window)
		d, err2 := pipeline.ParseDuration(c.Duration)
		if err1 == nil && err2 == nil && w*3 > d {
			diags = append(diags, attrErr(body, "window", "Window too long", fmt.Sprintf("until = \"steady\" compares 3 windows: window = %q must fit 3 times in duration = %q (the maximum).", c.Window, c.Duration)))
		}
	}
	return diags
}
