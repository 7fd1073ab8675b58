package steps

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// collectKind is `step "collect"`: sampling of processes and the machine
// during the load or warm step its during names. It does not run on its
// own: engine/run starts it with that step.
var collectKind = KindOf(Spec[pipeline.CollectConfig]{
	Name:      pipeline.KindCollect,
	Phase:     4,
	Behaviour: Behaviour{During: true},
	Validate:  validateCollect,
	Refs:      func(c *pipeline.CollectConfig) Refs { return Refs{Services: c.Services} },
})

func validateCollect(st *pipeline.Step, c *pipeline.CollectConfig) hcl.Diagnostics {
	var diags diagList
	body := st.Body
	diags.add(CheckDuration(body, "interval", c.Interval), checkCollectInterval(body, c.Interval), checkCollectMachine(body, c))
	for _, p := range c.Processes {
		if len(p) > 1 && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") {
			if _, err := regexp.Compile(p[1 : len(p)-1]); err != nil {
				diags.add(AttrErr(body, "processes", "Invalid process pattern", fmt.Sprintf("%s: %s.", p, err)))
			}
		}
	}
	return hcl.Diagnostics(diags)
}

// checkCollectInterval refuses a sampling interval below pipeline.MinCollectInterval
// at validate, where sampling would refuse it only when the step runs.
func checkCollectInterval(body hcl.Body, v string) *hcl.Diagnostic {
	d, err := pipeline.ParseDuration(v)
	if v == "" || err != nil || d == 0 || d >= pipeline.MinCollectInterval {
		return nil // a parse error is CheckDuration's
	}
	return AttrErr(body, "interval", "Invalid interval",
		fmt.Sprintf("interval = %q: a collect step samples at most every %s (0 or leaving it out takes the default, 1s).", v, pipeline.MinCollectInterval))
}

// maxQuietCheck bounds a collect step's quiet_check window.
const maxQuietCheck = time.Minute

// checkCollectMachine validates the whole-machine accounting attributes of
// a collect step (threshold, quiet_check).
func checkCollectMachine(body hcl.Body, c *pipeline.CollectConfig) *hcl.Diagnostic {
	if t := c.Threshold; t != nil && (*t < 0 || *t > 10000 || math.IsNaN(*t)) {
		return AttrErr(body, "threshold", "Invalid threshold",
			fmt.Sprintf("threshold is a CPU percentage of one core (1 = 1%% of a core) between 0 and 10000, not %v.", *t))
	}
	if c.QuietCheck != "" {
		d, err := pipeline.ParseDuration(c.QuietCheck)
		if err != nil {
			return AttrErr(body, "quiet_check", "Invalid duration", err.Error()+".")
		}
		if d < 0 || d > maxQuietCheck {
			return AttrErr(body, "quiet_check", "Invalid quiet check", fmt.Sprintf("quiet_check must be between 0s and %s, not %s.", maxQuietCheck, c.QuietCheck))
		}
	}
	return nil
}
