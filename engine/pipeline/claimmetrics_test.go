package pipeline

import (
	"strings"
	"testing"
)

// TestClaimMetricsText: the sentence an unknown claim metric's error
// gives names every claim metric, and each derived one (not a trials
// column) with what it is, so a metric added to ClaimMetrics is named
// without editing the message.
func TestClaimMetricsText(t *testing.T) {
	s := ClaimMetricsText()
	for _, k := range ClaimMetricNames() {
		if !strings.Contains(s, k) {
			t.Errorf("the claim metrics text lacks %s: %s", k, s)
		}
	}
	for k, d := range DerivedClaimMetrics {
		if _, ok := ClaimMetrics[k]; !ok {
			t.Errorf("derived claim metric %s is not in ClaimMetrics", k)
		}
		if !strings.Contains(s, k+" ("+d+")") {
			t.Errorf("the claim metrics text does not say what %s is: %s", k, s)
		}
	}
	if !strings.Contains(s, "cpu_stack_us_per_req") || !strings.HasPrefix(s, "the trials columns (") {
		t.Errorf("claim metrics text: %s", s)
	}
}
