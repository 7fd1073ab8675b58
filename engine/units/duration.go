package units

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// ParseDuration parses a duration: a Go duration
// ("30s", "1m30s") or a bare number of seconds ("30", as wrk takes it).
// Validation, the executor and every flag use it, so what validates also
// runs. It is never negative and at most about 292 years.
func ParseDuration(s string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%q must not be negative", s)
		}
		// Checked before converting: a float beyond int64's range
		// converts to an arbitrary duration.
		if v := n * float64(time.Second); math.IsInf(v, 0) || math.IsNaN(v) || v >= float64(math.MaxInt64) {
			return 0, fmt.Errorf("%q is longer than the longest duration (about 292 years)", s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (examples: 500ms, 30s, 2m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return d, nil
}
