package claims

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/stats"
)

// Judgement is a claim judged on a run: its outcome (Holds, Fails or
// Inconclusive), the reason in words, and, when inconclusive, about how
// many more repetitions per cell would likely decide it, from the
// interval's width shrinking as 1/√n (0 when unknown).
type Judgement struct {
	Outcome         string
	Detail          string
	MoreRepetitions int
}

// Judge reads a ratio or value claim's 95% interval against its bound:
// holds when the whole interval is on the claimed side of the bound, fails
// when the whole interval is on the other side, inconclusive when it
// straddles the bound or there is no interval (fewer than
// stats.MinSamplesForCI repetitions). unit is the estimate's (EstimateUnit:
// "" for a ratio); the detail writes the values in it.
func Judge(iv stats.Interval, b Bound, unit string) Judgement {
	f := func(v float64) string { return FormatValue(v, unit) }
	side, other := "below", "above"
	if !b.Upper() {
		side, other = "above", "below"
	}
	if !iv.IsCI() {
		need := stats.MinSamplesForCI - iv.N
		if need < 1 {
			need = 1
		}
		est := "no estimate"
		if !math.IsNaN(iv.Value) {
			est = "estimate " + f(iv.Value)
			if iv.HasCI() {
				est += " (range " + f(iv.Low) + " to " + f(iv.High) + ")"
			}
		}
		return Judgement{Inconclusive, fmt.Sprintf("%s from %d repetition(s): no 95%% interval below %d; about %d more repetition(s) per cell give one",
			est, iv.N, stats.MinSamplesForCI, need), need}
	}
	ci := fmt.Sprintf("95%% interval [%s, %s] (%s, n=%d)", f(iv.Low), f(iv.High), iv.MethodLabel(), iv.N)
	loIn, hiIn := b.Holds(iv.Low), b.Holds(iv.High)
	switch {
	case loIn && hiIn:
		return Judgement{Holds, fmt.Sprintf("%s %s: the whole %s is %s the bound %s", formatEstimate(iv, unit), b.Text, ci, side, f(b.Value)), 0}
	case !loIn && !hiIn:
		return Judgement{Fails, fmt.Sprintf("%s: the whole %s is %s the bound %s", formatEstimate(iv, unit), ci, other, f(b.Value)), 0}
	}
	detail := fmt.Sprintf("the %s straddles the bound %s", ci, f(b.Value))
	if iv.Value > 0 && b.Value > 0 {
		pct := 100 * (iv.Value/b.Value - 1)
		where := "above"
		if pct < 0 {
			where = "below"
		}
		past := iv.High/b.Value - 1 // the interval's end on the wrong side
		if !b.Upper() {
			past = 1 - iv.Low/b.Value
		}
		reach := "up to " + f(iv.High)
		if !b.Upper() {
			reach = "down to " + f(iv.Low)
		}
		if b.Upper() && past > 1 {
			reach += fmt.Sprintf(" (%.0f times the bound)", iv.High/b.Value)
		} else {
			reach += fmt.Sprintf(" (%.1f%% past it)", 100*math.Abs(past))
		}
		detail += fmt.Sprintf(": the estimate %s is %.1f%% %s it, and the interval reaches %s", f(iv.Value), math.Abs(pct), where, reach)
	}
	more := moreRepetitions(iv, b.Value)
	switch {
	case more > 0:
		detail += fmt.Sprintf("; about %d more repetition(s) per cell would likely decide it (the interval narrows as 1/√n)", more)
	default:
		detail += "; the estimate is too close to the bound for more repetitions to decide it"
	}
	return Judgement{Inconclusive, detail, more}
}

// moreRepetitions estimates how many more samples would shrink the
// interval's half-width on the log scale below the estimate's distance to
// the bound, taking the spread of the logs as measured and the width as
// t(m−1)·s/√m: the smallest m that decides, minus n; 0 when that would
// take more than 10,000 repetitions or the estimate sits on the bound.
func moreRepetitions(iv stats.Interval, bound float64) int {
	if !iv.IsCI() || iv.Low <= 0 || iv.Value <= 0 || bound <= 0 || iv.N < 2 {
		return 0
	}
	d := math.Abs(math.Log(iv.Value) - math.Log(bound))
	h := (math.Log(iv.High) - math.Log(iv.Low)) / 2
	if d == 0 || h <= 0 {
		return 0
	}
	sd := h * math.Sqrt(float64(iv.N)) / stats.TQuantile975(float64(iv.N-1)) // the spread of the logs
	decides := func(m int) bool { return stats.TQuantile975(float64(m-1))*sd/math.Sqrt(float64(m)) < d }
	const most = 10000
	z := math.Ceil(math.Pow(1.959963984540054*sd/d, 2)) // the normal approximation, a lower bound
	if z > most {
		return 0
	}
	m := max(iv.N+1, int(z))
	for ; !decides(m); m++ {
		if m >= most {
			return 0
		}
	}
	for m-1 > iv.N && decides(m-1) {
		m--
	}
	return m - iv.N
}

// CellVerdicts is how many of a selected cell's repetitions had each
// bottleneck verdict (those without one are not counted).
type CellVerdicts struct {
	Label  string         // the cell's label: "deploy=nat, log=on"
	Counts map[string]int // verdict → repetitions
}

// JudgeVerdict judges a verdict claim on its selected cells: it holds when
// the claimed verdict is the verdict of more than half of every cell's
// repetitions; it fails when another verdict (not noisy or undetermined)
// is, in some cell; it is inconclusive otherwise. share is the part of the
// n repetitions with a verdict that had the claimed one (NaN when n is 0).
func JudgeVerdict(verdict string, cells []CellVerdicts) (j Judgement, share float64, n int) {
	share = math.NaN()
	if len(cells) == 0 {
		return NoRepetitions(), share, 0
	}
	k := 0
	holds, fails := true, false
	var parts []string
	for _, c := range cells {
		cn := 0
		for _, x := range c.Counts {
			cn += x
		}
		k += c.Counts[verdict]
		n += cn
		if 2*c.Counts[verdict] <= cn || cn == 0 {
			holds = false
		}
		for v, x := range c.Counts {
			if v != verdict && 2*x > cn && v != "noisy" && v != "undetermined" {
				fails = true
			}
		}
		var vs []string
		for v, x := range c.Counts {
			vs = append(vs, fmt.Sprintf("%s %d/%d", v, x, cn))
		}
		sort.Strings(vs)
		if len(vs) == 0 {
			vs = []string{"no verdict"}
		}
		parts = append(parts, c.Label+": "+strings.Join(vs, ", "))
	}
	if n == 0 {
		return Judgement{Outcome: Inconclusive, Detail: "no repetition has a verdict (the collect step's whole-machine accounting did not run)"}, share, 0
	}
	share = float64(k) / float64(n)
	j = Judgement{Outcome: Inconclusive, Detail: fmt.Sprintf("%d of %d repetitions %s; %s", k, n, verdict, strings.Join(parts, "; "))}
	switch {
	case holds:
		j.Outcome = Holds
	case fails:
		j.Outcome = Fails
	}
	return j, share, n
}

// NoRepetitions is the judgement of a claim whose selected cells have no
// successful repetition in the run: not judged.
func NoRepetitions() Judgement {
	return Judgement{Outcome: NotJudged, Detail: "no successful repetition of the selected cells in this run: nothing to judge"}
}

// UnknownMetric is the judgement of a claim recorded with a metric this
// benchflow does not know (a run made by another version).
func UnknownMetric(metric string) Judgement {
	return Judgement{Outcome: Inconclusive, Detail: fmt.Sprintf("this benchflow does not know the metric %q", metric)}
}

// NoCounterpart is the judgement of a ratio claim one of whose cells has
// no versus cell in the run.
func NoCounterpart(cell, versus string) Judgement {
	return Judgement{Outcome: Inconclusive, Detail: fmt.Sprintf("cell %s has no counterpart with %s in this run", cell, versus)}
}

// LeftOut is added to the detail of a ratio of two metrics when left
// rounds had no ratio to take.
func LeftOut(left int, metric, versusMetric string) string {
	return fmt.Sprintf(" (%d round(s) left out: %s or %s was not positive or not recorded)", left, metric, versusMetric)
}

// InvalidValues is the judgement of a claim whose selected repetitions
// hold values that are not measurements (what says which): not judged.
func InvalidValues(what string) Judgement {
	return Judgement{Outcome: Invalid, Detail: "not judged: the table holds invalid values (" + what + ")"}
}
