package report

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"strconv"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// WritePNG renders the report's charts as PNG files in dir (created if
// needed): rps.png, latency.png and time.png (capacity.png and rate.png
// when the study has them), drawn in pure Go with a
// built-in bitmap font: titles, axis labels and ticks, each bar's cell
// label, and a legend naming each line, in the HTML report's colours.
// It returns the paths written.
func WritePNG(dir string, s *Summary) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing charts: %w", err)
	}
	var paths []string
	for _, ch := range charts(s) {
		path, err := writePNGFile(dir, ch.ID, ch.raster())
		if err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	if img := cpuChartRaster(s); img != nil {
		path, err := writePNGFile(dir, "cpu", img)
		if err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

const (
	pngW    = 800
	pngBarH = 24
)

type canvas struct{ *image.RGBA }

func parseColor(hex string) color.RGBA {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

var (
	black = color.RGBA{34, 34, 34, 255}
	grey  = color.RGBA{225, 225, 225, 255}
	dark  = color.RGBA{90, 90, 90, 255}
)

func newCanvas(w, h int) canvas {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	return canvas{img}
}

func (c canvas) rect(x0, y0, x1, y1 int, col color.RGBA) {
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			c.SetRGBA(x, y, col)
		}
	}
}

// line draws a 2-pixel-wide line (Bresenham).
func (c canvas) line(x0, y0, x1, y1 int, col color.RGBA, width int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	err := dx + dy
	for {
		for w := 0; w < width; w++ {
			c.SetRGBA(x0, y0+w, col)
			c.SetRGBA(x0+w, y0, col)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * err
		if e2 >= dy {
			err += dy
			x0 += sx
		}
		if e2 <= dx {
			err += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// face is the PNG charts' font: the 7×13 bitmap face of x/image, so the
// charts need no font files.
var face = basicfont.Face7x13

// text draws s with its top-left corner at (x, y) and returns its width.
func (c canvas) text(x, y int, s string, col color.RGBA) int {
	d := font.Drawer{Dst: c.RGBA, Src: image.NewUniform(col), Face: face,
		Dot: fixed.P(x, y+face.Ascent)}
	d.DrawString(s)
	return textWidth(s)
}

func textWidth(s string) int { return utf8.RuneCountInString(s) * face.Advance }

// clip shortens s to at most w pixels, ending it with "…" when cut.
func clip(s string, w int) string {
	n := w / face.Advance
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string([]rune(s)[:n-1]) + "…"
}

func (ch *chart) raster() *image.RGBA {
	if len(ch.Bars) > 0 {
		return ch.barsRaster()
	}
	return ch.linesRaster()
}

func (ch *chart) barsRaster() *image.RGBA {
	const top = 30
	labelW := 0
	for _, b := range ch.Bars {
		labelW = max(labelW, textWidth(b.Label))
	}
	labelW = min(labelW, pngW/3)
	h := top + len(ch.Bars)*(pngBarH+6) + 44
	c := newCanvas(pngW, h)
	c.text(10, 6, clip(ch.Title, pngW-20), black)
	x0, x1 := float64(20+labelW+8), float64(pngW-30)
	sx := func(v float64) int { return int(x0 + (v-ch.XMin)/(ch.XMax-ch.XMin)*(x1-x0)) }
	yb := h - 44
	for _, t := range ch.XTicks {
		x := sx(t.Pos)
		c.line(x, top, x, yb, grey, 1)
		c.text(x-textWidth(t.Label)/2, yb+6, t.Label, dark)
	}
	c.text(int(x0+x1)/2-textWidth(ch.XLabel)/2, yb+24, ch.XLabel, dark)
	for i, b := range ch.Bars {
		y := top + i*(pngBarH+6)
		label := clip(b.Label, labelW)
		c.text(int(x0)-8-textWidth(label), y+(pngBarH-face.Height)/2, label, black)
		c.rect(int(x0), y, sx(b.Value), y+pngBarH, parseColor(b.Color))
		if !math.IsNaN(b.Low) && !math.IsNaN(b.Hi) {
			lo, hi, ym := sx(b.Low), sx(b.Hi), y+pngBarH/2
			c.line(lo, ym, hi, ym, black, 2)
			c.line(lo, y+4, lo, y+pngBarH-4, black, 2)
			c.line(hi, y+4, hi, y+pngBarH-4, black, 2)
		}
	}
	c.line(int(x0), top, int(x0), yb, black, 1)
	return c.RGBA
}

func (ch *chart) linesRaster() *image.RGBA {
	const top = 44
	h := top + lineH + 44 + len(ch.Lines)*18
	c := newCanvas(pngW, h)
	c.text(10, 6, clip(ch.Title, pngW-20), black)
	x0, x1 := 80.0, float64(pngW-30)
	y0, y1 := float64(top+lineH), float64(top)
	sx := func(v float64) int { return int(x0 + (v-ch.XMin)/(ch.XMax-ch.XMin)*(x1-x0)) }
	sy := func(v float64) int { return int(y0 + (v-ch.YMin)/(ch.YMax-ch.YMin)*(y1-y0)) }
	for _, t := range ch.XTicks {
		x := sx(t.Pos)
		c.line(x, int(y1), x, int(y0), grey, 1)
		c.text(x-textWidth(t.Label)/2, int(y0)+6, t.Label, dark)
	}
	for _, t := range ch.YTicks {
		y := sy(t.Pos)
		c.line(int(x0), y, int(x1), y, grey, 1)
		c.text(int(x0)-6-textWidth(t.Label), y-face.Height/2, t.Label, dark)
	}
	c.text(int(x0+x1)/2-textWidth(ch.XLabel)/2, int(y0)+22, ch.XLabel, dark)
	c.text(10, 24, clip(ch.YLabel, pngW-20), dark)
	c.line(int(x0), int(y1), int(x0), int(y0), black, 1)
	c.line(int(x0), int(y0), int(x1), int(y0), black, 1)
	for i, se := range ch.Lines {
		col := parseColor(se.Color)
		// The band (min-max of the repetitions) as two thin, light lines.
		light := lighten(col)
		for j := 1; j < len(se.Band); j++ {
			p, q := se.Band[j-1], se.Band[j]
			c.line(sx(p[0]), sy(p[1]), sx(q[0]), sy(q[1]), light, 1)
			c.line(sx(p[0]), sy(p[2]), sx(q[0]), sy(q[2]), light, 1)
		}
		for j := 1; j < len(se.Pts); j++ {
			c.line(sx(se.Pts[j-1][0]), sy(se.Pts[j-1][1]), sx(se.Pts[j][0]), sy(se.Pts[j][1]), col, 2)
		}
		ly := int(y0) + 44 + i*18
		c.rect(int(x0), ly, int(x0)+12, ly+12, col)
		c.text(int(x0)+18, ly, clip(se.Label, int(x1-x0)-18), black)
	}
	return c.RGBA
}

// lighten mixes a colour two thirds of the way to white (the time chart's
// min-max band).
func lighten(c color.RGBA) color.RGBA {
	mix := func(v uint8) uint8 { return uint8((int(v) + 2*255) / 3) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 255}
}
