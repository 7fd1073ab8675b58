package plan

import (
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// maxQuietCheck bounds a collect step's quiet_check window.
const maxQuietCheck = time.Minute

// checkCollectMachine validates the whole-machine accounting attributes of
// a collect step (threshold, quiet_check).
func checkCollectMachine(body hcl.Body, c *pipeline.CollectConfig) *hcl.Diagnostic {
	if t := c.Threshold; t != nil && (*t < 0 || *t > 10000 || math.IsNaN(*t)) {
		return attrErr(body, "threshold", "Invalid threshold",
			fmt.Sprintf("threshold is a CPU percentage of one core (1 = 1%% of a core) between 0 and 10000, not %v.", *t))
	}
	if c.QuietCheck != "" {
		d, err := ParseDuration(c.QuietCheck)
		if err != nil {
			return attrErr(body, "quiet_check", "Invalid duration", err.Error()+".")
		}
		if d < 0 || d > maxQuietCheck {
			return attrErr(body, "quiet_check", "Invalid quiet check", fmt.Sprintf("quiet_check must be between 0s and %s, not %s.", maxQuietCheck, c.QuietCheck))
		}
	}
	return nil
}
