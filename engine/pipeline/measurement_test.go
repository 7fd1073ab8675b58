package pipeline

import "testing"

func TestIsMeasurement(t *testing.T) {
	for kind, want := range map[string]bool{KindWarm: false, KindLoad: true, "": true, KindCollect: true} {
		if got := IsMeasurement(kind); got != want {
			t.Errorf("IsMeasurement(%q) = %v, want %v", kind, got, want)
		}
	}
}
