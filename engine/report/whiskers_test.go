package report

import (
	"math"
	"strings"
	"testing"
)

// TestRPSChartTitleSaysWhatIsDrawn: the req/s chart's title names the
// geometric mean and calls its whiskers a 95% CI only when they are one.
func TestRPSChartTitleSaysWhatIsDrawn(t *testing.T) {
	ci := Interval{Value: 100, Low: 90, High: 110, Method: MethodLogT, N: 3}
	rng := Interval{Value: 100, Low: 95, High: 105, Method: MethodRange, N: 2}
	one := Interval{Value: 100, Low: math.NaN(), High: math.NaN(), Method: MethodNone, N: 1}
	for _, c := range []struct {
		cells        []Interval
		want, refuse string
	}{
		{[]Interval{ci, ci}, "geometric mean, whiskers: 95% CI", "min-max"},
		{[]Interval{rng, rng}, "whiskers: min-max of the repetitions, not a CI", "whiskers: 95% CI"},
		{[]Interval{ci, rng}, "95% CI, or min-max where n < 3", ""},
		{[]Interval{one}, "(geometric mean)", "CI"},
	} {
		s := &Summary{}
		for _, iv := range c.cells {
			s.Cells = append(s.Cells, &Cell{N: iv.N, RPS: iv})
		}
		title := rpsChart(s).Title
		if !strings.Contains(title, c.want) || (c.refuse != "" && strings.Contains(title, c.refuse)) {
			t.Errorf("cells %v: title %q, want it to contain %q and not %q", c.cells, title, c.want, c.refuse)
		}
	}
}
