package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/stats"
)

// Sample is one successful repetition of a cell, with what the report
// noticed about it. Flagged samples are kept and shown; only Excluded ones
// are left out of the intervals.
type Sample struct {
	TrialID string  `json:"trial_id"`
	Round   int     `json:"round"` // the repetition number: round r of every cell ran together
	RPS     float64 `json:"rps"`
	P99US   float64 `json:"latency_p99_us"`
	// Outlier names the quantities ("req/s", "p99") for which this sample
	// is an outlier among the cell's samples by the MAD rule.
	Outlier []string `json:"outlier,omitempty"`
	// Unsteady is why the load step failed the steadiness check
	// (trials.parquet steady_reason); "" when steady or not checked.
	Unsteady string `json:"unsteady,omitempty"`
	// Excluded: left out of the intervals (unsteady, and the pipeline or
	// the report says to exclude unsteady repetitions).
	Excluded bool `json:"excluded,omitempty"`
}

// flagSamples marks the outliers of a cell among its samples.
func (c *Cell) flagSamples() {
	rps := make([]float64, len(c.Samples))
	p99 := make([]float64, len(c.Samples))
	for i, s := range c.Samples {
		rps[i], p99[i] = s.RPS, s.P99US
	}
	or, op := stats.MADOutliers(rps), stats.MADOutliers(p99)
	for i := range c.Samples {
		c.Samples[i].Outlier = nil
		if or[i] {
			c.Samples[i].Outlier = append(c.Samples[i].Outlier, "req/s")
		}
		if op[i] {
			c.Samples[i].Outlier = append(c.Samples[i].Outlier, "p99")
		}
	}
}

// used are the samples intervals are computed from: all but the excluded.
func (c *Cell) used() []Sample {
	var out []Sample
	for _, s := range c.Samples {
		if !s.Excluded {
			out = append(out, s)
		}
	}
	return out
}

func (c *Cell) usedRPS() []float64 {
	var xs []float64
	for _, s := range c.used() {
		xs = append(xs, s.RPS)
	}
	return xs
}

// pairedBaseline is c's req/s relative to its baseline cell b, paired by
// round: round r of c against round r of b (stats.PairedRatio). Rounds missing
// on either side are left out.
func pairedBaseline(c, b *Cell) stats.Interval {
	if b == c {
		n := len(c.used())
		return stats.Interval{Value: 1, Low: 1, High: 1, Method: stats.MethodPairedLogT, N: n}
	}
	byRound := map[int]float64{}
	for _, s := range b.used() {
		byRound[s.Round] = s.RPS
	}
	var num, den []float64
	for _, s := range c.used() {
		if v, ok := byRound[s.Round]; ok {
			num = append(num, s.RPS)
			den = append(den, v)
		}
	}
	return stats.PairedRatio(num, den)
}

// flags is the cell's flags in words: "outlier r3 (req/s)"; "" when none.
func (c *Cell) flags() string {
	var out []string
	for _, s := range c.Samples {
		if len(s.Outlier) > 0 {
			out = append(out, fmt.Sprintf("outlier r%d (%s)", s.Round, strings.Join(s.Outlier, ", ")))
		}
		if s.Unsteady != "" {
			f := fmt.Sprintf("unsteady r%d (%s)", s.Round, s.Unsteady)
			if s.Excluded {
				f += " excluded"
			}
			out = append(out, f)
		}
	}
	return strings.Join(out, "; ")
}

// outlierList is the csv form of the outliers: "trial:req/s+p99;…".
func (c *Cell) outlierList() string {
	var out []string
	for _, s := range c.Samples {
		if len(s.Outlier) > 0 {
			out = append(out, s.TrialID+":"+strings.Join(s.Outlier, "+"))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ";")
}

func (c *Cell) usedP99() []float64 {
	var xs []float64
	for _, s := range c.used() {
		xs = append(xs, s.P99US)
	}
	return xs
}

// methodNote says, under a table, what its numbers are.
func (s *Summary) methodNote() []string {
	notes := []string{
		"req/s: geometric mean of the n repetitions; 95% CI: Student t interval on ln(req/s), back-transformed (log-t); min-max: fewer than 3 repetitions, the smallest and largest value, not a confidence interval",
	}
	if s.Baseline != "" {
		notes = append(notes, "vs "+s.Baseline+": ratio of req/s to the baseline cell, paired by round (round r of the cell against round r of the baseline), t interval on the per-round log ratios (paired log-t)")
	}
	if s.adaptive != "" {
		notes = append(notes, s.adaptive)
	}
	notes = append(notes, "flags: outlier = farther than 3.5 robust standard deviations (MAD) from the cell's median, kept in the estimates; unsteady = the load's req/s stalled, had a gap or drifted (steady_reason in trials.parquet), "+
		map[bool]string{true: "left out of the estimates (exclude_unsteady)", false: "kept in the estimates"}[s.ExcludeUnsteady]+"; see docs/statistics.md")
	return notes
}

func (s *Summary) writeMethod(w io.Writer, prefix string) {
	fmt.Fprintln(w)
	for _, n := range s.methodNote() {
		fmt.Fprintf(w, "%s%s\n", prefix, lineText(prefix, n))
	}
}

// unsteadyList is the csv form of the unsteady samples: "trial:reason;…",
// with "(excluded)" after the excluded ones.
func (c *Cell) unsteadyList() string {
	var out []string
	for _, s := range c.Samples {
		if s.Unsteady != "" {
			v := s.TrialID + ":" + s.Unsteady
			if s.Excluded {
				v += " (excluded)"
			}
			out = append(out, v)
		}
	}
	return strings.Join(out, ";")
}
