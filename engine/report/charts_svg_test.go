package report

import (
	"bytes"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

var (
	svgRe     = regexp.MustCompile(`(?s)<svg class="chart" id="chart-([a-z]+)"([^>]*)>(.*?)</svg>`)
	viewBoxRe = regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`)
	textRe    = regexp.MustCompile(`<text([^>]*)>([^<]*)</text>`)
	attrRe    = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
	pathRe    = regexp.MustCompile(`<path class="series" d="([^"]*)"`)
)

func attrs(s string) map[string]string {
	m := map[string]string{}
	for _, a := range attrRe.FindAllStringSubmatch(s, -1) {
		m[a[1]] = a[2]
	}
	return m
}

// TestChartsFitTheirViewBox: the report page of a bundle of 3 s loads
// (examples/nginx-http2, intervals of about 1 s with a few ms of jitter)
// draws every chart at the content's width (width 100%, a viewBox), no
// text of any chart runs out of its viewBox by a width estimate (the long
// time-chart title wraps), and the time chart's axis and lines reach 3 s:
// each interval is drawn to its end, and the axis is not rounded up to
// 3.5 s by a 3.0004 s end.
func TestChartsFitTheirViewBox(t *testing.T) {
	run, err := results.ReadRun("../../examples/nginx-http2/bundle")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, s); err != nil {
		t.Fatal(err)
	}
	charts := svgRe.FindAllStringSubmatch(b.String(), -1)
	if len(charts) < 3 {
		t.Fatalf("%d charts, want at least 3", len(charts))
	}
	sawTime := false
	for _, c := range charts {
		id, head, body := c[1], c[2], c[3]
		if a := attrs(head); a["width"] != "100%" || a["height"] != "" {
			t.Errorf("chart %s: width %q height %q, want width 100%% and the height from the viewBox", id, a["width"], a["height"])
		}
		vb := viewBoxRe.FindStringSubmatch(head)
		if vb == nil {
			t.Fatalf("chart %s has no viewBox", id)
		}
		w, _ := strconv.ParseFloat(vb[1], 64)
		for _, tx := range textRe.FindAllStringSubmatch(body, -1) {
			a := attrs(tx[1])
			x, _ := strconv.ParseFloat(a["x"], 64)
			size, em := 12.0, 0.5
			if a["class"] == "title" {
				size, em = 14, 0.6 // bold
			}
			est := float64(len([]rune(html.UnescapeString(tx[2])))) * em * size
			lo, hi := x, x+est
			switch a["text-anchor"] {
			case "middle":
				lo, hi = x-est/2, x+est/2
			case "end":
				lo, hi = x-est, x
			}
			if lo < 0 || hi > w {
				t.Errorf("chart %s: text %q spans [%.0f, %.0f], outside the viewBox width %.0f", id, tx[2], lo, hi, w)
			}
		}
		if id != "time" {
			continue
		}
		sawTime = true
		// The x ticks are the middle-anchored tick labels.
		lastTick, lastTickX := "", 0.0
		for _, tx := range textRe.FindAllStringSubmatch(body, -1) {
			if a := attrs(tx[1]); a["class"] == "tick" && a["text-anchor"] == "middle" {
				x, _ := strconv.ParseFloat(a["x"], 64)
				if x >= lastTickX {
					lastTick, lastTickX = tx[2], x
				}
			}
		}
		if lastTick != "3" {
			t.Errorf("time axis ends at %q s, want 3 (3 s loads)", lastTick)
		}
		paths := pathRe.FindAllStringSubmatch(body, -1)
		if len(paths) == 0 {
			t.Fatal("the time chart has no line")
		}
		for _, p := range paths {
			pts := strings.FieldsFunc(p[1], func(r rune) bool { return r == 'M' || r == 'L' })
			xy := strings.Fields(pts[len(pts)-1])
			x, _ := strconv.ParseFloat(xy[0], 64)
			if x < lastTickX-0.5 || x > lastTickX+0.5 {
				t.Errorf("a line ends at x %.1f, the axis' 3 s is at %.1f", x, lastTickX)
			}
		}
	}
	if !sawTime {
		t.Error("no time chart")
	}
}
