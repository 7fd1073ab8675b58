package report

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
	"github.com/benchflow/benchflow/engine/units"
)

// CellCapacity aggregates the capacity searches (load steps with a search
// block) of a cell's repetitions.
type CellCapacity struct {
	// RPS is the capacity under the SLO, as RPS is for req/s: geometric
	// mean over the repetitions with a positive interval.
	RPS stats.Interval `json:"-"`
	// SLO is the objective searched under; Limits counts what bounded
	// each repetition's search ("server", "generator", …).
	SLO    string         `json:"slo"`
	Limits map[string]int `json:"limits"`
	// Samples are the repetitions' capacities, in trial order.
	Samples []float64 `json:"capacity_rps_samples"`
	// Below is set when no repetition's search found a passing rate: the
	// capacity is below this rate (the lowest that failed); RPS is then
	// the interval (0, Below) with method "upper-bound".
	Below float64   `json:"capacity_below_rps,omitempty"`
	fails []float64 // each repetition's lowest failing rate
}

// MethodUpperBound is a capacity known only to lie below a rate.
const MethodUpperBound = "upper-bound"

// addCapacity records a trial row's capacity search in c.
func (c *Cell) addCapacity(t *results.TrialRow) {
	if t.CapacityLimit == "" {
		return
	}
	if c.Capacity == nil {
		c.Capacity = &CellCapacity{SLO: t.SLO, Limits: map[string]int{}}
	}
	c.Capacity.Limits[t.CapacityLimit]++
	c.Capacity.Samples = append(c.Capacity.Samples, t.CapacityRPS)
	c.Capacity.fails = append(c.Capacity.fails, t.CapacityFailRPS)
}

// finishCapacity computes the capacity interval: over the repetitions
// that found one, or, when every search ended with no passing rate, the
// upper bound the lowest failing probe gives.
func (c *Cell) finishCapacity() {
	cc := c.Capacity
	if cc == nil {
		return
	}
	if cc.Limits["none"] == len(cc.Samples) {
		below := math.Inf(1)
		for _, f := range cc.fails {
			if f > 0 {
				below = math.Min(below, f)
			}
		}
		if !math.IsInf(below, 1) {
			cc.Below = below
			cc.RPS = stats.Interval{Value: math.NaN(), Low: 0, High: below, Method: MethodUpperBound, N: len(cc.Samples)}
			return
		}
	}
	// A repetition that found no rate (0) bounds nothing from below: the
	// estimate is over those that found one, and the limit column says
	// how many did not ("none 1, server 2").
	var found []float64
	for _, x := range cc.Samples {
		if x > 0 {
			found = append(found, x)
		}
	}
	cc.RPS = stats.PositiveCI(found)
}

// hasCapacity reports whether some cell searched for capacity (the
// capacity columns are shown only then).
func (s *Summary) hasCapacity() bool {
	for _, c := range s.Cells {
		if c.Capacity != nil {
			return true
		}
	}
	return false
}

// capacityCells formats a cell's capacity for the text and markdown table:
// the estimate with its interval, and what bounded the searches.
func (c *Cell) capacityCells() []string {
	if c.Capacity == nil {
		return []string{"-", "-"}
	}
	if c.Capacity.Below > 0 {
		return []string{"< " + units.FormatRate(c.Capacity.Below), c.Capacity.limitLabel()}
	}
	return []string{units.FormatRate(c.Capacity.RPS.Value) + " " + fmtCI(c.Capacity.RPS, units.FormatRate), c.Capacity.limitLabel()}
}

// limitLabel is "server" or, when repetitions disagree, "server 2, generator 1".
func (cc *CellCapacity) limitLabel() string {
	if len(cc.Limits) == 1 {
		for l := range cc.Limits {
			return l
		}
	}
	var parts []string
	for l, n := range cc.Limits {
		parts = append(parts, l+" "+strconv.Itoa(n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// MarshalJSON adds the capacity's interval as "capacity_rps" (null bounds
// when unknown).
func (cc *CellCapacity) MarshalJSON() ([]byte, error) {
	type plain CellCapacity
	return json.Marshal(struct {
		RPS jsonInterval `json:"capacity_rps"`
		*plain
	}{toJSONInterval(cc.RPS), (*plain)(cc)})
}

// addProbes attaches the run's capacity-search probes to their cells.
func addProbes(run *results.Run, cellOf map[[2]string]*Cell) error {
	return run.EachProbe(func(p *results.ProbeRow) error {
		if c := cellOf[[2]string{p.TrialID, p.Step}]; c != nil {
			c.probes = append(c.probes, *p)
		}
		return nil
	})
}

// capacityChart is the latency–load curve of every cell that searched for
// capacity: p99 and p50 against the offered rate of each probe (all
// repetitions), with a vertical line at the cell's capacity. nil when no
// cell searched.
func capacityChart(s *Summary) *chart {
	if !s.hasCapacity() {
		return nil
	}
	ch := &chart{ID: "capacity", Title: "Latency under load: p99 (and p50) by offered rate, per probe of the capacity search (vertical line: capacity)",
		XLabel: "offered req/s (probe rate)", YLabel: "ms"}
	maxX, maxY := 1.0, 0.0
	for i, c := range s.Cells {
		if len(c.probes) == 0 {
			continue
		}
		ps := append([]results.ProbeRow(nil), c.probes...)
		sort.Slice(ps, func(a, b int) bool { return ps[a].Rate < ps[b].Rate })
		se := series{Idx: i, Label: cellLabel(s, c), Color: colorOf(i)}
		p50 := series{Idx: i, Label: cellLabel(s, c) + " · p50", Color: colorOf(i + len(s.Cells))}
		for _, p := range ps {
			se.Pts = append(se.Pts, [2]float64{p.Rate, p.P99US / 1000})
			if p.P50US > 0 {
				p50.Pts = append(p50.Pts, [2]float64{p.Rate, p.P50US / 1000})
			}
			maxX = math.Max(maxX, p.Rate)
			maxY = math.Max(maxY, p.P99US/1000)
		}
		ch.Lines = append(ch.Lines, se)
		if len(p50.Pts) > 0 {
			ch.Lines = append(ch.Lines, p50)
		}
	}
	for i, c := range s.Cells {
		if c.Capacity == nil || len(c.probes) == 0 || !(c.Capacity.RPS.Value > 0) {
			continue
		}
		x := c.Capacity.RPS.Value
		ch.Lines = append(ch.Lines, series{Idx: i, Label: cellLabel(s, c) + ": capacity " + units.FormatRate(x), Color: colorOf(i),
			Pts: [][2]float64{{x, 0}, {x, maxY}}})
	}
	ch.XMin, ch.XMax, ch.XTicks = niceAxis(0, maxX)
	ch.YMin, ch.YMax, ch.YTicks = niceAxis(0, maxY)
	return ch
}
