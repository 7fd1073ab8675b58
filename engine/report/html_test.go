package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func s1Summary(t *testing.T) *Summary {
	t.Helper()
	spec := s1Spec("20261130T044500Z-html", 5)
	spec.seconds, spec.samples = 4, 100
	run := writeSynthRun(t, t.TempDir(), spec)
	s, err := Summarize(run, Options{Baseline: "deploy=bare"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHTMLSelfContained(t *testing.T) {
	s := s1Summary(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, s); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Nothing is loaded from elsewhere: no URL, no external reference.
	for _, bad := range []string{"http://", "https://", "//cdn", "src=", "<link", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if n := strings.Count(page, `<svg class="chart"`); n != 3 {
		t.Errorf("%d charts, want 3", n)
	}
	if n := strings.Count(page, `<rect class="bar"`); n != len(s.Cells) {
		t.Errorf("%d bars, want %d", n, len(s.Cells))
	}
	if n := strings.Count(page, `<path class="ci"`); n != len(s.Cells) {
		t.Errorf("%d CI whiskers, want %d", n, len(s.Cells))
	}
	if n := strings.Count(page, `<path class="series"`); n != 2*len(s.Cells) {
		t.Errorf("%d curves, want %d (percentiles and time per cell)", n, 2*len(s.Cells))
	}
	for _, want := range []string{"99.9%", "99%", "90%", "docker-proxy 118.6", "deploy=docker-nat, access_log=on"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Text from the data is escaped.
	s.Pipeline = `<script>alert(1)</script>`
	b.Reset()
	WriteHTML(&b, s)
	if strings.Contains(b.String(), "<script>alert") {
		t.Error("pipeline name not escaped")
	}
}

// TestHTMLRendersInChromium opens the page in headless Chromium with every
// network request blocked and checks, in the DOM after the scripts ran,
// that the charts and their elements are there.
func TestHTMLRendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install chromium): skipping the browser check")
	}
	s := s1Summary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := WriteHTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		// Any network access would fail: no proxy reachable, no resolvable name.
		"--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--dump-dom", "file://"+path)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := string(out)
	if !regexp.MustCompile(`<html[^>]*data-charts="3"`).MatchString(dom) {
		t.Errorf("the page script did not run (no data-charts=\"3\" on <html>): %.300s", dom)
	}
	if n := strings.Count(dom, `<svg class="chart"`); n != 3 {
		t.Errorf("%d charts in the rendered DOM, want 3", n)
	}
	if n := strings.Count(dom, `class="bar"`); n != len(s.Cells) {
		t.Errorf("%d bars in the rendered DOM, want %d", n, len(s.Cells))
	}
	if n := strings.Count(dom, `class="series"`); n != 2*len(s.Cells) {
		t.Errorf("%d curves in the rendered DOM, want %d", n, 2*len(s.Cells))
	}
	if strings.Contains(dom, "ERR_") {
		t.Errorf("the page tried a network request:\n%s", stderr.String())
	}
	// No browser process outlives the test (they all carry the profile
	// folder on their command line).
	profile := filepath.Join(dir, "profile")
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesWith(profile)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("chromium processes left running: %v", left)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesWith lists the pids whose command line contains s.
func processesWith(s string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func TestPNG(t *testing.T) {
	s := s1Summary(t)
	dir := filepath.Join(t.TempDir(), "charts")
	paths, err := WritePNG(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Fatalf("wrote %v", paths)
	}
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		// Every cell's colour appears in every chart.
		seen := map[[3]uint32]bool{}
		bnd := img.Bounds()
		for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
			for x := bnd.Min.X; x < bnd.Max.X; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				seen[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			}
		}
		for c := range s.Cells {
			col := parseColor(colorOf(c))
			if !seen[[3]uint32{uint32(col.R), uint32(col.G), uint32(col.B)}] {
				t.Errorf("chart %d (%s): colour of cell %d missing", i, filepath.Base(p), c)
			}
		}
	}
}

// TestPNGLabels: the PNG charts carry text (title, bar labels, legend):
// rendering them without their labels leaves fewer text-coloured pixels.
func TestPNGLabels(t *testing.T) {
	s := s1Summary(t)
	textPixels := func(img *image.RGBA) int {
		n := 0
		for i := 0; i+3 < len(img.Pix); i += 4 {
			if img.Pix[i] == black.R && img.Pix[i+1] == black.G && img.Pix[i+2] == black.B {
				n++
			}
		}
		return n
	}
	for _, ch := range charts(s) {
		with := textPixels(ch.raster())
		bare := *ch
		bare.Title = ""
		bare.Bars = slices.Clone(ch.Bars)
		for i := range bare.Bars {
			bare.Bars[i].Label = ""
		}
		bare.Lines = slices.Clone(ch.Lines)
		for i := range bare.Lines {
			bare.Lines[i].Label = ""
		}
		without := textPixels(bare.raster())
		// Each label character draws a dozen or more pixels.
		if with < without+12*len(ch.Title) {
			t.Errorf("chart %s: %d text pixels with labels, %d without: labels are not drawn", ch.ID, with, without)
		}
	}
}

func TestNinesLabels(t *testing.T) {
	want := []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"}
	for n, w := range want {
		if got := ninesLabel(n); got != w {
			t.Errorf("ninesLabel(%d) = %q, want %q", n, got, w)
		}
	}
}
