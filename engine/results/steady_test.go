package results

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// series builds n intervals of step seconds at rate(i) req/s.
func series(n int, step float64, rate func(i int) float64) []TimeseriesRow {
	var rs []TimeseriesRow
	for i := 0; i < n; i++ {
		r := rate(i)
		rs = append(rs, TimeseriesRow{TS: float64(i) * step, IntervalS: step, RPS: r, Requests: int64(r * step)})
	}
	return rs
}

func TestCheckSteady(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	noisy := func(int) float64 { return 10000 * (1 + 0.05*rng.NormFloat64()) }
	for name, tc := range map[string]struct {
		rows   []TimeseriesRow
		steady bool
		reason string
	}{
		"flat with 5% noise": {series(30, 1, noisy), true, ""},
		"stall mid-load": {series(30, 0.1, func(i int) float64 {
			if i >= 10 && i < 20 {
				return 0
			}
			return 10000
		}), false, "stall: 10 interval(s) below 10% of the median req/s (10000), 1.0–2.0 s"},
		"drift down 30%": {series(20, 1, func(i int) float64 { return 10000 * (1 - 0.015*float64(i)) * (1 + 0.01*rng.NormFloat64()) }), false, "drift: req/s fell"},
		"too short":      {series(2, 1, noisy), true, "not checked: 2 full intervals"},
		"gap":            {append(series(3, 1, noisy), TimeseriesRow{TS: 6, IntervalS: 1, RPS: 10000}), false, "gap: no interval from 3.0 to 6.0 s"},
		// A short last interval (the load's remainder) is no stall.
		"partial last interval": {append(series(10, 1, noisy), TimeseriesRow{TS: 10, IntervalS: 0.02, RPS: 300}), true, ""},
		// Noise alone, large but trendless, is no drift.
		"20% noise": {series(60, 0.1, func(int) float64 { return 10000 * (1 + 0.2*rng.NormFloat64()) }), true, ""},
	} {
		steady, reason := CheckSteady(tc.rows)
		if steady != tc.steady || !strings.HasPrefix(reason, tc.reason) || (tc.reason == "" && reason != "") {
			t.Errorf("%s: CheckSteady = %v %q, want %v %q", name, steady, reason, tc.steady, tc.reason)
		}
	}
}

// TestSteadyFalseAlarms: on trendless noisy load steps the check rarely
// calls drift or a stall.
func TestSteadyFalseAlarms(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	bad := 0
	for k := 0; k < 1000; k++ {
		if ok, _ := CheckSteady(series(10, 1, func(int) float64 { return 5000 * (1 + 0.1*rng.NormFloat64()) })); !ok {
			bad++
		}
	}
	if bad > 20 {
		t.Errorf("%d of 1000 steady 10 s loads with 10%% noise flagged unsteady", bad)
	}
}
