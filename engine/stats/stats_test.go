package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTQuantile(t *testing.T) {
	// Reference values from statistical tables.
	for df, want := range map[float64]float64{1: 12.706, 2: 4.303, 3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980} {
		if got := TQuantile975(df); math.Abs(got-want) > 0.001 {
			t.Errorf("t(0.975, %v) = %.4f, want %.3f", df, got, want)
		}
	}
	if got := TQuantile975(2.5); !(got < 4.303 && got > 3.182) {
		t.Errorf("t(0.975, 2.5) = %v, not between df 2 and 3", got)
	}
}

func TestPositiveCI(t *testing.T) {
	xs := []float64{100, 200, 400}
	// logs: ln100 + {0, ln2, 2ln2}; mean ln200, sd ln2, se ln2/√3, t 4.303.
	ci := PositiveCI(xs)
	h := 4.302653 * math.Ln2 / math.Sqrt(3)
	if ci.Method != MethodLogT || ci.N != 3 || math.Abs(ci.Value-200) > 1e-9 ||
		math.Abs(ci.Low/(200*math.Exp(-h))-1) > 1e-5 || math.Abs(ci.High/(200*math.Exp(h))-1) > 1e-5 {
		t.Errorf("PositiveCI(%v) = %+v, want 200 [%v, %v] log-t", xs, ci, 200*math.Exp(-h), 200*math.Exp(h))
	}
	// The case: a wide spread gives a wide but positive interval.
	if w := PositiveCI([]float64{4000, 11000, 17700}); !(w.Low > 0 && w.Low < w.Value && w.Value < w.High) {
		t.Errorf("wide spread: %+v, want 0 < low < value < high", w)
	}
	if two := PositiveCI([]float64{90, 110}); two.Method != MethodRange || two.Low != 90 || two.High != 110 || two.IsCI() {
		t.Errorf("n=2 gives %+v, want the range 90–110", two)
	}
	if one := PositiveCI([]float64{5}); one.Value != 5 || one.HasCI() || one.Method != MethodNone {
		t.Errorf("n=1 gives %+v, want no bounds", one)
	}
	if z := PositiveCI([]float64{0, 10, 20}); z.Method != MethodRange || z.Value != 10 || z.Low != 0 {
		t.Errorf("a zero sample gives %+v, want the mean 10 with the range 0–20", z)
	}
}

func TestPairedRatioCancelsRoundEffects(t *testing.T) {
	// Rounds drift by ±20% together; B is 10% above A in every round, so
	// the paired interval is tight around 1.1 while the unpaired one is
	// wide.
	a := []float64{1000, 1200, 800, 1100, 900}
	b := make([]float64, len(a))
	for i := range a {
		b[i] = 1.1 * a[i] * (1 + 0.002*float64(i%2*2-1))
	}
	p := PairedRatio(b, a)
	w := WelchRatio(b, a)
	if p.Method != MethodPairedLogT || !(p.Low > 1.09 && p.High < 1.11) {
		t.Errorf("paired = %+v, want within [1.09, 1.11]", p)
	}
	if w.Method != MethodWelchLogT || !(w.Low < 1 && w.High > 1.2) {
		t.Errorf("welch = %+v, want wide (round effects not cancelled)", w)
	}
	if r := PairedRatio([]float64{110, 120}, []float64{100, 100}); r.Method != MethodRange || r.Low != 1.1 || r.High != 1.2 {
		t.Errorf("2 pairs: %+v, want the range of the ratios 1.1–1.2", r)
	}
	if r := WelchRatio([]float64{110, 120}, []float64{100, 100, 100}); r.Method != MethodRange || math.Abs(r.Low-1.1) > 1e-12 || math.Abs(r.High-1.2) > 1e-12 {
		t.Errorf("2 vs 3 samples: %+v, want the range 1.1–1.2", r)
	}
}

// coverage runs sims seeded simulations of draw and counts how often the
// interval it returns contains the true value.
func coverage(t *testing.T, name string, sims int, draw func(rng *rand.Rand) (Interval, float64)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(18, uint64(len(name))))
	hit := 0
	for i := 0; i < sims; i++ {
		iv, truth := draw(rng)
		if !iv.IsCI() || !(iv.Low > 0) {
			t.Fatalf("%s: simulation %d gave %+v, want a positive confidence interval", name, i, iv)
		}
		if iv.Low <= truth && truth <= iv.High {
			hit++
		}
	}
	rate := float64(hit) / float64(sims)
	t.Logf("%s: %d/%d = %.1f%%", name, hit, sims, 100*rate)
	if rate < 0.93 || rate > 0.97 {
		t.Errorf("%s: the 95%% interval covered the true value in %.1f%% of %d simulations, want 93–97%%", name, 100*rate, sims)
	}
}

// TestIntervalCoverage checks each interval against samples drawn from
// known distributions: a 95% interval must contain the true value in
// 93–97% of 2,000 seeded simulations (the binomial standard error is
// 0.5%).
func TestIntervalCoverage(t *testing.T) {
	const sims = 2000
	normal := func(rng *rand.Rand, n int, mu, sd float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = mu + sd*rng.NormFloat64()
		}
		return xs
	}
	lognormal := func(rng *rand.Rand, n int, median, sdLog float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = median * math.Exp(sdLog*rng.NormFloat64())
		}
		return xs
	}
	for _, n := range []int{3, 5, 10, 30} {
		// Normal req/s, 5% noise: the true value is the mean (the
		// geometric mean of so narrow a normal is within 0.13% of it).
		coverage(t, "log-t normal n="+itoa(n), sims, func(rng *rand.Rand) (Interval, float64) {
			return PositiveCI(normal(rng, n, 50000, 2500)), 50000
		})
		// Lognormal latency, 30% spread: the true value is the median
		// (= geometric mean) of the distribution.
		coverage(t, "log-t lognormal n="+itoa(n), sims, func(rng *rand.Rand) (Interval, float64) {
			return PositiveCI(lognormal(rng, n, 800, 0.3)), 800
		})
	}
	for _, n := range []int{3, 5, 12} {
		// Paired rounds: a drift shared by both cells of a round (±15%)
		// on top of each cell's own noise; true ratio 0.8.
		coverage(t, "paired normal n="+itoa(n), sims, func(rng *rand.Rand) (Interval, float64) {
			a, b := make([]float64, n), make([]float64, n)
			for i := range a {
				drift := 1 + 0.15*rng.NormFloat64()
				a[i] = drift * (10000 + 300*rng.NormFloat64())
				b[i] = drift * (8000 + 240*rng.NormFloat64())
			}
			return PairedRatio(b, a), 0.8
		})
		coverage(t, "paired lognormal n="+itoa(n), sims, func(rng *rand.Rand) (Interval, float64) {
			a, b := make([]float64, n), make([]float64, n)
			for i := range a {
				drift := math.Exp(0.2 * rng.NormFloat64())
				a[i] = drift * 10000 * math.Exp(0.05*rng.NormFloat64())
				b[i] = drift * 12500 * math.Exp(0.1*rng.NormFloat64())
			}
			return PairedRatio(b, a), 1.25
		})
	}
	for _, n := range [][2]int{{3, 3}, {5, 8}, {10, 4}} {
		name := itoa(n[0]) + "/" + itoa(n[1])
		// Unpaired runs with unequal spreads: Welch's interval.
		coverage(t, "welch normal n="+name, sims, func(rng *rand.Rand) (Interval, float64) {
			return WelchRatio(normal(rng, n[1], 11000, 220), normal(rng, n[0], 10000, 600)), 1.1
		})
		coverage(t, "welch lognormal n="+name, sims, func(rng *rand.Rand) (Interval, float64) {
			return WelchRatio(lognormal(rng, n[1], 300, 0.4), lognormal(rng, n[0], 400, 0.1)), 0.75
		})
	}
}

func itoa(n int) string { return string(rune('0'+n/10%10)) + string(rune('0'+n%10)) }

func TestMADOutliers(t *testing.T) {
	got := MADOutliers([]float64{10000, 10100, 9950, 10050, 6000})
	want := []bool{false, false, false, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("MADOutliers = %v, want %v", got, want)
		}
	}
	// Spread samples with no single far one: nothing flagged.
	for i, o := range MADOutliers([]float64{9000, 10000, 11000, 12000, 8000}) {
		if o {
			t.Errorf("sample %d flagged in an even spread", i)
		}
	}
	// Too few samples or no spread: nothing flagged, rather than guessing.
	for _, xs := range [][]float64{{1, 100}, {100, 101, 200}, {5, 5, 5, 5, 9}} {
		for i, o := range MADOutliers(xs) {
			if o {
				t.Errorf("%v: sample %d flagged", xs, i)
			}
		}
	}
	// Normal data: the rule's false alarms. Asymptotically 0.05% of normal
	// samples lie beyond 3.5 sd; the MAD of 10 samples is noisy, and about
	// 1.3% of samples (9% of cells) get flagged (docs/statistics.md).
	rng := rand.New(rand.NewPCG(1, 2))
	flagged := 0
	for g := 0; g < 2000; g++ {
		xs := make([]float64, 10)
		for i := range xs {
			xs[i] = 1000 + 30*rng.NormFloat64()
		}
		for _, o := range MADOutliers(xs) {
			if o {
				flagged++
			}
		}
	}
	if rate := float64(flagged) / 20000; rate > 0.02 {
		t.Errorf("%.2f%% of normal samples flagged as outliers", 100*rate)
	}
}
