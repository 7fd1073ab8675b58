package results

import "testing"

// TestTrialNumber: a numeric trials column reads as a float64 by name,
// int64 and float64 alike; a string column or an unknown name has none.
func TestTrialNumber(t *testing.T) {
	row := &TrialRow{RPS: 1234.5, Requests: 42, CPUServicePct: 87.5, Connects: 9}
	for name, want := range map[string]float64{"rps": 1234.5, "requests": 42, "cpu_service_pct": 87.5, "connects": 9} {
		get := TrialNumber(name)
		if get == nil {
			t.Errorf("TrialNumber(%q) = nil", name)
			continue
		}
		if got := get(row); got != want {
			t.Errorf("TrialNumber(%q) = %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"trial_id", "verdict", "no_such_column"} {
		if TrialNumber(name) != nil {
			t.Errorf("TrialNumber(%q) is not nil", name)
		}
	}
}
