package report

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/engine/stats"
	"github.com/benchflow/benchflow/engine/units"
)

// chart is a renderer-independent chart: bars with CI whiskers, or lines.
// The SVG (html.go) and PNG (png.go) renderers draw the same model.
type chart struct {
	ID, Title      string
	XLabel, YLabel string
	Bars           []bar    // horizontal bars, one per cell
	Lines          []series // line chart when Bars is empty
	XMin, XMax     float64
	YMin, YMax     float64
	XTicks, YTicks []tick
}

type bar struct {
	Idx            int // cell index: a cell has the same index in every chart
	Label          string
	Value, Low, Hi float64 // Low/Hi NaN without CI
	Color          string
	Tooltip        string
}

type series struct {
	Idx   int
	Label string
	Color string
	Pts   [][2]float64
	// Band is an optional shaded band around the line: x, low, high.
	Band [][3]float64
}

type tick struct {
	Pos   float64
	Label string
}

var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func colorOf(i int) string { return palette[i%len(palette)] }

// charts builds the report's three charts from a summary.
func charts(s *Summary) []*chart {
	cs := []*chart{rpsChart(s), percentileChart(s), timeChart(s)}
	if ch := capacityChart(s); ch != nil {
		cs = append(cs, ch)
	}
	if ch := rateChart(s); ch != nil {
		cs = append(cs, ch)
	}
	return cs
}

func cellLabel(s *Summary, c *Cell) string {
	l := c.Label()
	if s.multiStep {
		l += " · " + c.Step
	}
	return l
}

func rpsChart(s *Summary) *chart {
	ch := &chart{ID: "rps", Title: "Requests per second (" + rpsWhiskers(s) + ")", XLabel: "req/s"}
	max := 0.0
	for i, c := range s.Cells {
		if c.N == 0 {
			continue
		}
		b := bar{Idx: i, Label: cellLabel(s, c), Value: c.RPS.Value, Low: c.RPS.Low, Hi: c.RPS.High, Color: colorOf(i)}
		b.Tooltip = fmt.Sprintf("%s: %s req/s", b.Label, units.FormatRate(b.Value))
		if c.RPS.HasCI() {
			b.Tooltip += " " + fmtCI(c.RPS, units.FormatRate)
		}
		b.Tooltip += fmt.Sprintf(" (%s, n=%d)", c.RPS.MethodLabel(), c.RPS.N)
		ch.Bars = append(ch.Bars, b)
		max = math.Max(max, b.Value)
		if c.RPS.HasCI() {
			max = math.Max(max, b.Hi)
		}
	}
	ch.XMin, ch.XMax, ch.XTicks = niceAxis(0, max)
	return ch
}

// rpsWhiskers says what the req/s chart draws: the geometric mean, and
// whiskers that are 95% CIs, min-max ranges (fewer than 3 repetitions) or
// both, as the cells' intervals are.
func rpsWhiskers(s *Summary) string {
	ci, rng := false, false
	for _, c := range s.Cells {
		if c.N == 0 || !c.RPS.HasCI() {
			continue
		}
		if c.RPS.IsCI() {
			ci = true
		} else {
			rng = true
		}
	}
	switch {
	case ci && rng:
		return "geometric mean; whiskers: 95% CI, or min-max where n < 3"
	case ci:
		return "geometric mean, whiskers: 95% CI"
	case rng:
		return "geometric mean, whiskers: min-max of the repetitions, not a CI (n < 3)"
	}
	return "geometric mean"
}

// nines maps a quantile to the "number of nines" axis: 0.9 → 1, 0.99 → 2.
func nines(q float64) float64 { return -math.Log10(1 - q) }

func percentileChart(s *Summary) *chart {
	ch := &chart{ID: "latency", Title: "Latency by percentile (all repetitions merged)", XLabel: "percentile", YLabel: "ms"}
	maxX, maxY := 1.0, 0.0
	for i, c := range s.Cells {
		total := c.Histogram.Total()
		if total == 0 {
			continue
		}
		top := math.Min(math.Log10(float64(total)), 6)
		se := series{Idx: i, Label: cellLabel(s, c), Color: colorOf(i)}
		var cum int64
		lastX := -1.0
		for _, b := range c.Histogram {
			cum += b.Count
			q := float64(cum) / float64(total)
			x := top
			if q < 1 {
				x = math.Min(nines(q), top)
			}
			y := b.Upper / 1000
			// Start the step at the bucket's lower quantile so the curve is
			// a staircase like HdrHistogram's plots, thinned to ~500 points.
			if x-lastX < top/500 && q < 1 {
				continue
			}
			se.Pts = append(se.Pts, [2]float64{x, y})
			lastX = x
			maxY = math.Max(maxY, y)
		}
		maxX = math.Max(maxX, top)
		ch.Lines = append(ch.Lines, se)
	}
	maxX = math.Ceil(maxX)
	ch.XMin, ch.XMax = 0, maxX
	for n := 0; n <= int(maxX); n++ {
		ch.XTicks = append(ch.XTicks, tick{float64(n), ninesLabel(n)})
	}
	ch.YMin, ch.YMax, ch.YTicks = niceAxis(0, maxY)
	return ch
}

// ninesLabel names the percentile with n nines (0%, 90%, 99%, 99.9%, …),
// spelled out rather than computed in floating point (99.99900000000001%).
func ninesLabel(n int) string {
	switch n {
	case 0:
		return "0%"
	case 1:
		return "90%"
	}
	if n == 2 {
		return "99%"
	}
	return "99." + strings.Repeat("9", n-2) + "%"
}

func timeChart(s *Summary) *chart {
	ch := &chart{ID: "time", Title: "Requests per second over time (mean of the repetitions, aligned on the time since the load started; band: min-max)", XLabel: "s since load start", YLabel: "req/s"}
	maxX, maxY := 1.0, 0.0
	for i, c := range s.Cells {
		xs, ends, mid, lo, hi := alignedRPS(c.Timeseries)
		if len(xs) == 0 {
			continue
		}
		// Each interval is drawn over the time it covers, from its start
		// to its end: a 3 s load's line reaches 3 s.
		se := series{Idx: i, Label: cellLabel(s, c), Color: colorOf(i)}
		for j := range xs {
			se.Pts = append(se.Pts, [2]float64{xs[j], mid[j]}, [2]float64{ends[j], mid[j]})
			if len(c.Timeseries) > 1 {
				se.Band = append(se.Band, [3]float64{xs[j], lo[j], hi[j]}, [3]float64{ends[j], lo[j], hi[j]})
			}
			maxX = math.Max(maxX, ends[j])
			maxY = math.Max(maxY, hi[j])
		}
		ch.Lines = append(ch.Lines, se)
	}
	ch.XMin, ch.XMax, ch.XTicks = niceAxis(0, maxX)
	ch.YMin, ch.YMax, ch.YTicks = niceAxis(0, maxY)
	return ch
}

// alignedRPS aligns the repetitions' intervals on their time since the
// load started: interval starts carry a few milliseconds of jitter, so each
// is put in the bin of the nominal interval length it falls in (the
// median interval length, to 3 significant digits: 1.0004 s is 1 s), and
// each bin gets the mean req/s of the repetitions with the smallest and
// largest, from its start to its end (the start plus the bin's mean
// interval length, the next bin's start when within 1% of it: a last,
// partial interval ends where it ended). Averaging raw start times
// instead pairs nothing and draws a zigzag.
func alignedRPS(reps [][]Point) (xs, ends, mid, lo, hi []float64) {
	var lens []float64
	for _, ts := range reps {
		for _, r := range ts {
			if r.IntervalS > 0 {
				lens = append(lens, r.IntervalS)
			}
		}
	}
	if len(lens) == 0 {
		return nil, nil, nil, nil, nil
	}
	step := stats.Median(lens)
	if p, err := strconv.ParseFloat(strconv.FormatFloat(step, 'g', 3, 64), 64); err == nil && p > 0 {
		step = p
	}
	// round keeps k × step on the grid (3 × 0.1 is 0.3, not
	// 0.30000000000000004, which an axis would round up a tick).
	round := func(x float64) float64 { return math.Round(x*1e6) / 1e6 }
	bins := map[int][]float64{}
	binLens := map[int][]float64{}
	for _, ts := range reps {
		for _, r := range ts {
			if r.IntervalS <= 0 {
				continue
			}
			k := int(math.Floor(r.TS/step + 0.5))
			bins[k] = append(bins[k], r.RPS)
			binLens[k] = append(binLens[k], r.IntervalS)
		}
	}
	var ks []int
	for k := range bins {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		l, h := stats.MinMax(bins[k])
		start := round(float64(k) * step)
		end := start + stats.Mean(binLens[k])
		if next := round(float64(k+1) * step); math.Abs(end-next) < 0.01*step {
			end = next
		}
		xs, ends = append(xs, start), append(ends, round(end))
		mid = append(mid, stats.Mean(bins[k]))
		lo, hi = append(lo, l), append(hi, h)
	}
	return xs, ends, mid, lo, hi
}

// niceAxis returns a range starting at lo covering hi with 4–6 round ticks.
func niceAxis(lo, hi float64) (float64, float64, []tick) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	top := math.Ceil(hi/step) * step
	var ticks []tick
	for v := lo; v <= top+step/2; v += step {
		ticks = append(ticks, tick{v, shortNum(v)})
	}
	return lo, top, ticks
}

// shortNum formats axis numbers compactly: 1500 → "1.5k".
func shortNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(math.Round(v/1e3*1000)/1000, 'f', -1, 64) + "k"
	default:
		return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
	}
}

// SVG rendering.

const (
	// svgW is the charts' viewBox width: about the page's content width
	// (html.go's max-width), so that a chart drawn at 100% of it keeps its
	// text near its nominal size, and scales down on a narrow screen.
	svgW      = 1200
	barH      = 22
	lineH     = 320
	marginL   = 60
	marginR   = 32
	marginT   = 30
	marginB   = 40
	labelW    = 230
	legendRow = 18
)

func (ch *chart) svg() string {
	if len(ch.Bars) > 0 {
		return ch.barsSVG()
	}
	return ch.linesSVG()
}

func esc(s string) string { return html.EscapeString(s) }

// titleFont is the charts' title size in px (html.go's svg .title), and
// charWidth an upper estimate of a character's width in em (bold
// system-ui runs about 0.55em on average).
const (
	titleFont = 14
	charWidth = 0.6
)

// textWidthEstimate is the estimated width of s in px at size px.
func textWidthEstimate(s string, px float64) float64 {
	return float64(len([]rune(s))) * charWidth * px
}

// wrapTitle breaks a title into lines that fit width px, between words.
func wrapTitle(s string, width float64) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		next := w
		if cur != "" {
			next = cur + " " + w
		}
		if cur != "" && textWidthEstimate(next, titleFont) > width {
			lines = append(lines, cur)
			next = w
		}
		cur = next
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// titleSVG writes the title's lines from y = 18 and returns how much
// lower than one line the chart starts.
func (ch *chart) titleSVG(b *strings.Builder) int {
	lines := wrapTitle(ch.Title, svgW-8)
	for i, l := range lines {
		fmt.Fprintf(b, `<text class="title" x="4" y="%d">%s</text>`, 18+i*legendRow, esc(l))
	}
	return (len(lines) - 1) * legendRow
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func (ch *chart) barsSVG() string {
	var b, body strings.Builder
	top := marginT + ch.titleSVG(&body)
	h := top + len(ch.Bars)*(barH+6) + marginB
	x0, x1 := float64(labelW), float64(svgW-marginR)
	sx := func(v float64) float64 { return x0 + (v-ch.XMin)/(ch.XMax-ch.XMin)*(x1-x0) }
	fmt.Fprintf(&b, `<svg class="chart" id="chart-%s" width="100%%" viewBox="0 0 %d %d" role="img" aria-label="%s">`, ch.ID, svgW, h, esc(ch.Title))
	b.WriteString(body.String())
	yb := float64(h - marginB)
	for _, t := range ch.XTicks {
		x := sx(t.Pos)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%d" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
			f1(x), top, f1(x), f1(yb), f1(x), f1(yb+16), esc(t.Label))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%s" y="%d" text-anchor="middle">%s</text>`, f1((x0+x1)/2), h-4, esc(ch.XLabel))
	for i, br := range ch.Bars {
		y := float64(top + i*(barH+6))
		fmt.Fprintf(&b, `<g class="cell" data-series="%d">`, br.Idx)
		fmt.Fprintf(&b, `<text class="label" x="%s" y="%s" text-anchor="end">%s</text>`, f1(x0-6), f1(y+barH*0.7), esc(br.Label))
		fmt.Fprintf(&b, `<rect class="bar" x="%s" y="%s" width="%s" height="%d" fill="%s"><title>%s</title></rect>`,
			f1(x0), f1(y), f1(math.Max(0, sx(br.Value)-x0)), barH, br.Color, esc(br.Tooltip))
		if !math.IsNaN(br.Low) && !math.IsNaN(br.Hi) {
			ym := y + barH/2
			fmt.Fprintf(&b, `<path class="ci" d="M%s %sV%sM%s %sH%sM%s %sV%s"/>`,
				f1(sx(br.Low)), f1(y+4), f1(y+barH-4), f1(sx(br.Low)), f1(ym), f1(sx(br.Hi)), f1(sx(br.Hi)), f1(y+4), f1(y+barH-4))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func (ch *chart) linesSVG() string {
	var b, title strings.Builder
	top := marginT + ch.titleSVG(&title)
	legendH := len(ch.Lines) * legendRow
	h := top + 12 + lineH + marginB + legendH
	x0, x1 := float64(marginL), float64(svgW-marginR)
	y0, y1 := float64(top+12+lineH), float64(top+12)
	sx := func(v float64) float64 { return x0 + (v-ch.XMin)/(ch.XMax-ch.XMin)*(x1-x0) }
	sy := func(v float64) float64 { return y0 + (v-ch.YMin)/(ch.YMax-ch.YMin)*(y1-y0) }
	fmt.Fprintf(&b, `<svg class="chart" id="chart-%s" width="100%%" viewBox="0 0 %d %d" role="img" aria-label="%s">`, ch.ID, svgW, h, esc(ch.Title))
	b.WriteString(title.String())
	for _, t := range ch.XTicks {
		x := sx(t.Pos)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
			f1(x), f1(y1), f1(x), f1(y0), f1(x), f1(y0+16), esc(t.Label))
	}
	for _, t := range ch.YTicks {
		y := sy(t.Pos)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`,
			f1(x0), f1(y), f1(x1), f1(y), f1(x0-4), f1(y+4), esc(t.Label))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%s" y="%s" text-anchor="middle">%s</text>`, f1((x0+x1)/2), f1(y0+32), esc(ch.XLabel))
	fmt.Fprintf(&b, `<text class="axis" x="%s" y="%s" text-anchor="end">%s</text>`, f1(x0-4), f1(y1-10), esc(ch.YLabel))
	for i, se := range ch.Lines {
		if len(se.Band) > 1 {
			var p strings.Builder
			for j, q := range se.Band {
				if j == 0 {
					p.WriteString("M")
				} else {
					p.WriteString("L")
				}
				p.WriteString(f1(sx(q[0])) + " " + f1(sy(q[2])))
			}
			for j := len(se.Band) - 1; j >= 0; j-- {
				p.WriteString("L" + f1(sx(se.Band[j][0])) + " " + f1(sy(se.Band[j][1])))
			}
			p.WriteString("Z")
			fmt.Fprintf(&b, `<g class="cell" data-series="%d"><path class="band" d="%s" fill="%s"/></g>`, se.Idx, p.String(), se.Color)
		}
		var d strings.Builder
		for j, p := range se.Pts {
			if j == 0 {
				d.WriteString("M")
			} else {
				d.WriteString("L")
			}
			d.WriteString(f1(sx(p[0])) + " " + f1(sy(p[1])))
		}
		fmt.Fprintf(&b, `<g class="cell" data-series="%d"><path class="series" d="%s" stroke="%s"><title>%s</title></path></g>`,
			se.Idx, d.String(), se.Color, esc(se.Label))
		ly := y0 + marginB + float64(i*legendRow)
		fmt.Fprintf(&b, `<g class="legend" data-series="%d"><rect x="%s" y="%s" width="12" height="12" fill="%s"/><text x="%s" y="%s">%s</text></g>`,
			se.Idx, f1(x0), f1(ly), se.Color, f1(x0+18), f1(ly+10), esc(se.Label))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
