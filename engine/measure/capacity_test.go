package measure

import (
	"strings"
	"testing"
	"time"
)

func TestParseSLO(t *testing.T) {
	slo, err := ParseSLO("p99<10ms, p99.9<50ms,errors<0.1%")
	if err != nil {
		t.Fatal(err)
	}
	if len(slo.Latency) != 2 || slo.Latency[0] != (LatencyBound{Percentile: 99, Max: 10 * time.Millisecond}) ||
		slo.Latency[1] != (LatencyBound{Percentile: 99.9, Max: 50 * time.Millisecond}) || slo.MaxErrorRatio != 0.001 {
		t.Fatalf("ParseSLO = %+v", slo)
	}
	if got := slo.String(); got != "p99<10ms,p99.9<50ms,errors<0.1%" {
		t.Errorf("String() = %q", got)
	}
	if s, err := ParseSLO("errors<=0.05"); err != nil || s.MaxErrorRatio != 0.05 || len(s.Latency) != 0 {
		t.Errorf(`ParseSLO("errors<=0.05") = %+v, %v`, s, err)
	}
	for in, want := range map[string]string{
		"":         "empty SLO",
		"p99":      "want NAME<BOUND",
		"p100<1ms": "not a percentile",
		"p99<fast": `"fast" is not a latency (examples: 250us, 10ms, 1.5s)`,
		"p99<-1ms": "must not be negative",
		"p99<0ms":  "not a positive latency",
		// A bare number once meant seconds here and µs in a claim.
		"p99<10":       `"10" is a latency without its unit: write 10us, 10ms or 10s`,
		"errors<150%":  "more than 100%",
		"errors<x":     "not a non-negative number",
		"latency<10ms": "unknown measure",
		"p99<10ms,,":   "want NAME<BOUND",
	} {
		if _, err := ParseSLO(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSLO(%q) error = %v, want it to contain %q", in, err, want)
		}
	}
}
