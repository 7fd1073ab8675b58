package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseLatency parses a latency bound: a duration with its unit ("250us",
// "250µs", "10ms", "1.5s"). Unlike ParseDuration it refuses a bare number:
// a latency bound is read by people who think in ms, µs or s, and a bare
// "250" has meant µs in one place and seconds in another. Claims and SLOs
// read their latencies through it. It is never negative.
func ParseLatency(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return 0, fmt.Errorf("%q is a latency without its unit: write %sus, %sms or %ss", s, t, t, t)
	}
	d, err := time.ParseDuration(strings.ReplaceAll(t, "µs", "us"))
	if err != nil {
		return 0, fmt.Errorf("%q is not a latency (examples: 250us, 10ms, 1.5s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return d, nil
}
