package report

import (
	"math"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/stats"
)

// TestRPSChartTitleSaysWhatIsDrawn: the req/s chart's title names the
// geometric mean and calls its whiskers a 95% CI only when they are one.
func TestRPSChartTitleSaysWhatIsDrawn(t *testing.T) {
	ci := stats.Interval{Value: 100, Low: 90, High: 110, Method: stats.MethodLogT, N: 3}
	rng := stats.Interval{Value: 100, Low: 95, High: 105, Method: stats.MethodRange, N: 2}
	one := stats.Interval{Value: 100, Low: math.NaN(), High: math.NaN(), Method: stats.MethodNone, N: 1}
	for _, c := range []struct {
		cells        []stats.Interval
		want, refuse string
	}{
		{[]stats.Interval{ci, ci}, "geometric mean, whiskers: 95% CI", "min-max"},
		{[]stats.Interval{rng, rng}, "whiskers: min-max of the repetitions, not a CI", "whiskers: 95% CI"},
		{[]stats.Interval{ci, rng}, "95% CI, or min-max where n < 3", ""},
		{[]stats.Interval{one}, "(geometric mean)", "CI"},
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
