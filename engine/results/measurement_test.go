package results

import "testing"

func TestTrialRowIsMeasurement(t *testing.T) {
	for kind, want := range map[string]bool{"warm": false, "load": true, "": true} {
		if got := (&TrialRow{StepKind: kind}).IsMeasurement(); got != want {
			t.Errorf("step_kind %q: IsMeasurement() = %v, want %v", kind, got, want)
		}
	}
}
