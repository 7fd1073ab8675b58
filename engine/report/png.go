package report

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// WritePNG renders the report's charts as PNG files in dir (created if
// needed): rps.png, latency.png and time.png, drawn in pure Go. Tick values
// are labelled with a small built-in digit font; cells are identified by
// the same colours as in the HTML report and in the order of the table.
// It returns the paths written.
func WritePNG(dir string, s *Summary) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing charts: %w", err)
	}
	var paths []string
	for _, ch := range charts(s) {
		img := ch.raster()
		path := filepath.Join(dir, ch.ID+".png")
		f, err := os.Create(path)
		if err != nil {
			return paths, fmt.Errorf("writing charts: %w", err)
		}
		err = png.Encode(f, img)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return paths, fmt.Errorf("writing %s: %w", path, err)
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

// glyphs is a 3×5 font for tick labels (rows top to bottom, 3 bits each).
var glyphs = map[rune][5]uint8{
	'0': {7, 5, 5, 5, 7}, '1': {2, 6, 2, 2, 7}, '2': {7, 1, 7, 4, 7}, '3': {7, 1, 7, 1, 7},
	'4': {5, 5, 7, 1, 1}, '5': {7, 4, 7, 1, 7}, '6': {7, 4, 7, 5, 7}, '7': {7, 1, 2, 2, 2},
	'8': {7, 5, 7, 5, 7}, '9': {7, 5, 7, 1, 7}, '.': {0, 0, 0, 0, 2}, '%': {5, 1, 2, 4, 5},
	'k': {4, 5, 6, 5, 5}, 'M': {5, 7, 7, 5, 5}, '-': {0, 0, 7, 0, 0}, ',': {0, 0, 0, 2, 4},
}

// text draws s at scale 2 with its top-left corner at (x, y); unknown
// characters are left blank. It returns the width drawn.
func (c canvas) text(x, y int, s string, col color.RGBA) int {
	const scale = 2
	for _, r := range s {
		g, ok := glyphs[r]
		if ok {
			for row := 0; row < 5; row++ {
				for bit := 0; bit < 3; bit++ {
					if g[row]&(4>>bit) != 0 {
						c.rect(x+bit*scale, y+row*scale, x+(bit+1)*scale, y+(row+1)*scale, col)
					}
				}
			}
		}
		x += 4 * scale
	}
	return len([]rune(s)) * 4 * scale
}

func textWidth(s string) int { return len([]rune(s)) * 8 }

func (ch *chart) raster() *image.RGBA {
	if len(ch.Bars) > 0 {
		return ch.barsRaster()
	}
	return ch.linesRaster()
}

func (ch *chart) barsRaster() *image.RGBA {
	h := 20 + len(ch.Bars)*(pngBarH+6) + 30
	c := newCanvas(pngW, h)
	x0, x1 := 20.0, float64(pngW-30)
	sx := func(v float64) int { return int(x0 + (v-ch.XMin)/(ch.XMax-ch.XMin)*(x1-x0)) }
	yb := h - 30
	for _, t := range ch.XTicks {
		x := sx(t.Pos)
		c.line(x, 20, x, yb, grey, 1)
		c.text(x-textWidth(t.Label)/2, yb+8, t.Label, dark)
	}
	for i, b := range ch.Bars {
		y := 20 + i*(pngBarH+6)
		c.rect(int(x0), y, sx(b.Value), y+pngBarH, parseColor(b.Color))
		if !math.IsNaN(b.Low) && !math.IsNaN(b.Hi) {
			lo, hi, ym := sx(b.Low), sx(b.Hi), y+pngBarH/2
			c.line(lo, ym, hi, ym, black, 2)
			c.line(lo, y+4, lo, y+pngBarH-4, black, 2)
			c.line(hi, y+4, hi, y+pngBarH-4, black, 2)
		}
	}
	c.line(int(x0), 20, int(x0), yb, black, 1)
	return c.RGBA
}

func (ch *chart) linesRaster() *image.RGBA {
	h := 20 + lineH + 30 + len(ch.Lines)*16
	c := newCanvas(pngW, h)
	x0, x1 := 70.0, float64(pngW-30)
	y0, y1 := float64(20+lineH), 20.0
	sx := func(v float64) int { return int(x0 + (v-ch.XMin)/(ch.XMax-ch.XMin)*(x1-x0)) }
	sy := func(v float64) int { return int(y0 + (v-ch.YMin)/(ch.YMax-ch.YMin)*(y1-y0)) }
	for _, t := range ch.XTicks {
		x := sx(t.Pos)
		c.line(x, int(y1), x, int(y0), grey, 1)
		c.text(x-textWidth(t.Label)/2, int(y0)+8, t.Label, dark)
	}
	for _, t := range ch.YTicks {
		y := sy(t.Pos)
		c.line(int(x0), y, int(x1), y, grey, 1)
		c.text(int(x0)-6-textWidth(t.Label), y-5, t.Label, dark)
	}
	c.line(int(x0), int(y1), int(x0), int(y0), black, 1)
	c.line(int(x0), int(y0), int(x1), int(y0), black, 1)
	for i, se := range ch.Lines {
		col := parseColor(se.Color)
		for j := 1; j < len(se.Pts); j++ {
			c.line(sx(se.Pts[j-1][0]), sy(se.Pts[j-1][1]), sx(se.Pts[j][0]), sy(se.Pts[j][1]), col, 2)
		}
		ly := int(y0) + 30 + i*16
		c.rect(int(x0), ly, int(x0)+12, ly+12, col)
	}
	return c.RGBA
}
