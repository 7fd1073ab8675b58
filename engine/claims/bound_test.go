package claims

import (
	"strings"
	"testing"
)

// TestParseBoundLatency: a latency bound with a unit reads as SLOs read
// it (units.ParseLatency) and is held in the column's µs; a bare number
// is already µs, the column's unit; a negative latency is refused.
func TestParseBoundLatency(t *testing.T) {
	for in, want := range map[string]float64{"< 10ms": 10000, "<= 250us": 250, "< 250µs": 250, "> 1.5s": 1.5e6, "< 250": 250} {
		b, err := ParseBound(in, UnitLatency)
		if err != nil || b.Value != want {
			t.Errorf("ParseBound(%q) = %+v, %v; want %v µs", in, b, err, want)
		}
	}
	for in, want := range map[string]string{"< fast": `"< fast": "fast" is not a latency (examples: 250us, 10ms, 1.5s), or a bare number of µs`, "< -1ms": `"-1ms" must not be negative`} {
		if _, err := ParseBound(in, UnitLatency); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBound(%q) error %v, want %q", in, err, want)
		}
	}
}
