package envinfo

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLoadAvg(t *testing.T) {
	for in, want := range map[string][]float64{
		"24.10 18.52 9.60 31/230 21895\n": {24.1, 18.52, 9.6},
		"0.00 0.01 0.05 1/80 1":           {0, 0.01, 0.05},
		"":                                nil,
		"1.0 2.0":                         nil,
		"a b c d e":                       nil,
		"-1 0 0 1/1 1":                    nil,
	} {
		if got := parseLoadAvg([]byte(in)); !cmp.Equal(got, want) {
			t.Errorf("parseLoadAvg(%q) = %v, want %v", in, got, want)
		}
	}
	if _, err := os.Stat("/proc/loadavg"); err == nil {
		e := Collect(t.Context(), "test")
		if len(e.LoadAverage) != 3 {
			t.Errorf("Collect: load_average %v, want three values from /proc/loadavg", e.LoadAverage)
		}
	}
}
