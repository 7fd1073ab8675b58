package report

import (
	"math"
	"testing"
)

func TestTQuantile(t *testing.T) {
	// Reference values from statistical tables.
	for df, want := range map[float64]float64{1: 12.706, 2: 4.303, 3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980} {
		if got := tQuantile975(df); math.Abs(got-want) > 0.001 {
			t.Errorf("t(0.975, %v) = %.4f, want %.3f", df, got, want)
		}
	}
	if got := tQuantile975(2.5); !(got < 4.303 && got > 3.182) {
		t.Errorf("t(0.975, 2.5) = %v, not between df 2 and 3", got)
	}
}

func TestMeanCI(t *testing.T) {
	ci := meanCI([]float64{10, 12, 14})
	// mean 12, sd 2, se 2/sqrt(3), t 4.303
	h := 4.303 * 2 / math.Sqrt(3)
	if math.Abs(ci.Value-12) > 1e-12 || math.Abs(ci.Low-(12-h)) > 0.001 || math.Abs(ci.High-(12+h)) > 0.001 {
		t.Errorf("meanCI = %+v", ci)
	}
	if one := meanCI([]float64{5}); one.Value != 5 || one.HasCI() {
		t.Errorf("n=1 gives %+v, want no interval", one)
	}
}

func TestRatioCI(t *testing.T) {
	a := []float64{100, 102, 98, 101, 99}
	b := []float64{110, 112, 108, 111, 109}
	r := ratioCI(b, a)
	if math.Abs(r.Value-1.1) > 1e-9 || !(r.Low > 1.05 && r.High < 1.15 && r.Low < 1.1 && r.High > 1.1) {
		t.Errorf("ratioCI = %+v", r)
	}
	bs := bootstrapRatio(b, a, 2000, 1)
	if !(bs.Low > 1.05 && bs.High < 1.15) {
		t.Errorf("bootstrapRatio = %+v", bs)
	}
	if again := bootstrapRatio(b, a, 2000, 1); again != bs {
		t.Error("bootstrap is not reproducible with the same seed")
	}
}
