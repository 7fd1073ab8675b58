package units

import (
	"strings"
	"testing"
	"time"
)

func TestParseLatency(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"250us": 250 * time.Microsecond, "250µs": 250 * time.Microsecond,
		"10ms": 10 * time.Millisecond, " 1.5s ": 1500 * time.Millisecond,
	} {
		got, err := ParseLatency(in)
		if err != nil || got != want {
			t.Errorf("ParseLatency(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"250":   "without its unit: write 250us, 250ms or 250s",
		"fast":  "is not a latency (examples: 250us",
		"-10ms": "must not be negative",
		"":      "is not a latency",
	} {
		_, err := ParseLatency(in)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseLatency(%q) error = %v; want it to contain %q", in, err, msg)
		}
	}
}
