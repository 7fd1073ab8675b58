package claims

import (
	"math"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/stats"
)

func TestJudge(t *testing.T) {
	lt, _ := ParseBound("< 0.6", "")
	ms, _ := ParseBound("< 10ms", UnitLatency)
	ci := func(v, lo, hi float64) stats.Interval {
		return stats.Interval{Value: v, Low: lo, High: hi, Method: stats.MethodPairedLogT, N: 4}
	}
	for _, tc := range []struct {
		name    string
		iv      stats.Interval
		b       Bound
		unit    string
		outcome string
		detail  string
		more    bool
	}{
		{"holds", ci(0.5, 0.45, 0.55), lt, "", Holds, "ratio 0.500 < 0.6: the whole 95% interval [0.450, 0.550] (paired log-t, n=4) is below the bound 0.600", false},
		{"fails", ci(0.7, 0.65, 0.75), lt, "", Fails, "ratio 0.700: the whole 95% interval [0.650, 0.750] (paired log-t, n=4) is above the bound 0.600", false},
		{"straddles", ci(0.58, 0.55, 0.62), lt, "", Inconclusive, "the 95% interval [0.550, 0.620] (paired log-t, n=4) straddles the bound 0.600: the estimate 0.580 is 3.3% below it, and the interval reaches up to 0.620 (3.3% past it)", true},
		{"value", ci(8000, 7000, 9000), ms, UnitLatency, Holds, "8.00 ms < 10ms: the whole 95% interval [7.00 ms, 9.00 ms] (paired log-t, n=4) is below the bound 10.0 ms", false},
		{"range", stats.Interval{Value: 0.5, Low: 0.4, High: 0.6, Method: stats.MethodRange, N: 2}, lt, "", Inconclusive,
			"estimate 0.500 (range 0.400 to 0.600) from 2 repetition(s): no 95% interval below 3; about 1 more repetition(s) per cell give one", true},
	} {
		j := Judge(tc.iv, tc.b, tc.unit)
		if j.Outcome != tc.outcome || !strings.HasPrefix(j.Detail, tc.detail) || (j.MoreRepetitions > 0) != tc.more {
			t.Errorf("%s: %s, %d more, %q; want %s, more %v, %q", tc.name, j.Outcome, j.MoreRepetitions, j.Detail, tc.outcome, tc.more, tc.detail)
		}
	}
}

// TestMoreRepetitionsDecides: with the predicted number of repetitions
// and the same spread, the interval no longer reaches the bound.
func TestMoreRepetitionsDecides(t *testing.T) {
	for _, tc := range []struct{ est, h float64 }{{0.9, 0.15}, {0.97, 0.1}, {1.2, 0.5}} {
		n := 3
		iv := stats.Interval{Value: tc.est, Low: tc.est * math.Exp(-tc.h), High: tc.est * math.Exp(tc.h), Method: stats.MethodPairedLogT, N: n}
		more := moreRepetitions(iv, 1)
		if more <= 0 {
			t.Fatalf("%+v: no estimate", tc)
		}
		sd := tc.h * math.Sqrt(float64(n)) / stats.TQuantile975(float64(n-1))
		d := math.Abs(math.Log(tc.est))
		width := func(m int) float64 { return stats.TQuantile975(float64(m-1)) * sd / math.Sqrt(float64(m)) }
		if w := width(n + more); w >= d {
			t.Errorf("%+v: %d more give half-width %v, still reaching the bound (distance %v)", tc, more, w, d)
		}
		if more > 1 {
			if w := width(n + more - 1); w < d {
				t.Errorf("%+v: %d more would do, predicted %d", tc, more-1, more)
			}
		}
	}
	if m := moreRepetitions(stats.Interval{Value: 1, Low: 0.9, High: 1.1, Method: stats.MethodLogT, N: 3}, 1); m != 0 {
		t.Errorf("estimate on the bound: %d more, want 0 (undecidable)", m)
	}
}

func TestJudgeVerdict(t *testing.T) {
	nat := []CellVerdicts{{Label: "deploy=nat, log=on", Counts: map[string]int{"infrastructure-bound": 3, "noisy": 1}},
		{Label: "deploy=nat, log=off", Counts: map[string]int{"infrastructure-bound": 4}}}
	j, share, n := JudgeVerdict("infrastructure-bound", nat)
	if j.Outcome != Holds || n != 8 || share != 7.0/8 ||
		j.Detail != "7 of 8 repetitions infrastructure-bound; deploy=nat, log=on: infrastructure-bound 3/4, noisy 1/4; deploy=nat, log=off: infrastructure-bound 4/4" {
		t.Errorf("holds: %s %v of %d, %q", j.Outcome, share, n, j.Detail)
	}
	if j, _, _ := JudgeVerdict("server-bound", nat); j.Outcome != Fails {
		t.Errorf("another verdict in most repetitions: %s, want fails", j.Outcome)
	}
	if j, share, n := JudgeVerdict("server-bound", []CellVerdicts{{Label: "a", Counts: map[string]int{}}}); j.Outcome != Inconclusive || n != 0 || !math.IsNaN(share) {
		t.Errorf("no verdict: %s %v of %d", j.Outcome, share, n)
	}
	if j, _, _ := JudgeVerdict("server-bound", nil); j != NoRepetitions() || j.Outcome != NotJudged {
		t.Errorf("no cells: %+v, want not judged (nothing ran: not inconclusive)", j)
	}
}

func TestEstimateLabelAndSubject(t *testing.T) {
	iv := stats.Interval{Value: 0.312, Low: 0.29, High: 0.335, Method: stats.MethodPairedLogT, N: 5}
	if got := EstimateLabel(KindRatio, "", iv); got != "0.312 [0.290, 0.335]" {
		t.Errorf("ratio label %q", got)
	}
	if got := EstimateLabel(KindValue, UnitLatency, stats.Interval{Value: 1200, Low: math.NaN(), High: math.NaN(), N: 1}); got != "1.20 ms" {
		t.Errorf("value label without bounds %q", got)
	}
	if got := EstimateLabel(KindVerdict, "", stats.Interval{Value: 0.875, N: 8}); got != "88% of 8" {
		t.Errorf("verdict label %q", got)
	}
	if got := Subject(KindRatio, "rps", "", "deploy=nat", "deploy=host"); got != "rps deploy=nat / deploy=host" {
		t.Errorf("subject %q", got)
	}
	if got := Subject(KindRatio, "latency_p99_us", "latency_p50_us", "", ""); got != "latency_p99_us / latency_p50_us every cell" {
		t.Errorf("subject %q", got)
	}
	if got := Subject(KindVerdict, "", "", "deploy=nat", ""); got != "verdict deploy=nat" {
		t.Errorf("subject %q", got)
	}
}
