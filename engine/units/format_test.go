package units

import (
	"math"
	"testing"
)

func TestFormatRateAndMS(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", 999.94: "999.9", 12345.67: "12,345.7", 1234567: "1,234,567.0", -4321: "-4,321.0", math.NaN(): "-"} {
		if got := FormatRate(v); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", v, got, want)
		}
	}
	for us, want := range map[float64]string{1234: "1.23", 12345: "12.3", 123456: "123", 99999: "100.0", math.NaN(): "-"} {
		if got := FormatMS(us); got != want {
			t.Errorf("FormatMS(%v) = %q, want %q", us, got, want)
		}
	}
}
