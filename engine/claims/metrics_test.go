package claims

import (
	"strings"
	"testing"
)

// TestMetricsText: the sentence an unknown claim metric's error
// gives names every claim metric, and each derived one (not a trials
// column) with what it is, so a metric added to Metrics is named
// without editing the message.
func TestMetricsText(t *testing.T) {
	s := MetricsText()
	for _, k := range MetricNames() {
		if !strings.Contains(s, k) {
			t.Errorf("the claim metrics text lacks %s: %s", k, s)
		}
	}
	for _, m := range Metrics {
		k, d := m.Name, m.Derived
		if d == "" {
			continue
		}
		if !strings.Contains(s, k+" ("+d+")") {
			t.Errorf("the claim metrics text does not say what %s is: %s", k, s)
		}
	}
	if !strings.Contains(s, "cpu_stack_us_per_req") || !strings.HasPrefix(s, "the trials columns (") {
		t.Errorf("claim metrics text: %s", s)
	}
}
