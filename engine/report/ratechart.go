package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// rateChart is latency against offered rate for a study whose matrix has
// a rate axis: cells whose trials ran an open loop (target_rate > 0) are
// grouped by step and by every parameter that is not a rate axis, and
// each group with at least two offered rates is drawn as two lines, p99
// and p50 (the merged histogram's) by offered req/s (the mean of the
// repetitions' target rates). A parameter is a rate axis when two cells
// differing only in it offered different rates. nil when no group has
// two rates.
func rateChart(s *Summary) *chart {
	var cells []int
	offered := map[int]float64{}
	for i, c := range s.Cells {
		if c.N == 0 || len(c.offered) != c.N || !(c.P99US > 0) {
			continue
		}
		sum := 0.0
		for _, r := range c.offered {
			sum += r
		}
		offered[i] = sum / float64(len(c.offered))
		cells = append(cells, i)
	}
	if len(cells) < 2 {
		return nil
	}
	// The rate axes.
	names := map[string]bool{}
	for _, i := range cells {
		for _, p := range s.Cells[i].Params {
			names[p.Name] = true
		}
	}
	without := func(c *Cell, skip map[string]bool) string {
		var b strings.Builder
		b.WriteString(c.Step + "\x00")
		for _, p := range c.Params {
			if !skip[p.Name] {
				fmt.Fprintf(&b, "%s=%v\x00", p.Name, p.Value)
			}
		}
		return b.String()
	}
	rateAxes := map[string]bool{}
	for name := range names {
		seen := map[string]float64{}
		for _, i := range cells {
			k := without(s.Cells[i], map[string]bool{name: true})
			if r, ok := seen[k]; ok && r != offered[i] {
				rateAxes[name] = true
				break
			}
			seen[k] = offered[i]
		}
	}
	groups := map[string][]int{}
	var order []string
	for _, i := range cells {
		k := without(s.Cells[i], rateAxes)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	axes := make([]string, 0, len(rateAxes))
	for n := range rateAxes {
		axes = append(axes, n)
	}
	sort.Strings(axes)
	title := "Latency by offered rate: p99 and p50 of each cell (all repetitions merged)"
	if len(axes) > 0 {
		title += " across " + strings.Join(axes, ", ")
	}
	ch := &chart{ID: "rate", Title: title, XLabel: "offered req/s (target rate)", YLabel: "ms"}
	maxX, maxY := 1.0, 0.0
	for g, k := range order {
		is := groups[k]
		sort.SliceStable(is, func(a, b int) bool { return offered[is[a]] < offered[is[b]] })
		distinct := 0
		for j, i := range is {
			if j == 0 || offered[i] != offered[is[j-1]] {
				distinct++
			}
		}
		if distinct < 2 {
			continue
		}
		label := groupLabel(s, s.Cells[is[0]], rateAxes)
		p99 := series{Idx: is[0], Label: label + " · p99", Color: colorOf(2 * g)}
		p50 := series{Idx: is[0], Label: label + " · p50", Color: colorOf(2*g + 1)}
		for _, i := range is {
			c := s.Cells[i]
			p99.Pts = append(p99.Pts, [2]float64{offered[i], c.P99US / 1000})
			p50.Pts = append(p50.Pts, [2]float64{offered[i], c.P50US / 1000})
			maxX = math.Max(maxX, offered[i])
			maxY = math.Max(maxY, c.P99US/1000)
		}
		ch.Lines = append(ch.Lines, p99, p50)
	}
	if len(ch.Lines) == 0 {
		return nil
	}
	ch.XMin, ch.XMax, ch.XTicks = niceAxis(0, maxX)
	ch.YMin, ch.YMax, ch.YTicks = niceAxis(0, maxY)
	return ch
}

// groupLabel names a group of the rate chart: the cell's parameters but
// the rate axes (its step when nothing is left, or in a multi-step run).
func groupLabel(s *Summary, c *Cell, skip map[string]bool) string {
	var parts []string
	for _, p := range c.Params {
		if !skip[p.Name] {
			parts = append(parts, fmt.Sprintf("%s=%v", p.Name, p.Value))
		}
	}
	if len(parts) == 0 {
		return c.Step
	}
	l := strings.Join(parts, ", ")
	if s.multiStep {
		l += " · " + c.Step
	}
	return l
}
