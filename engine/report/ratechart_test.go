package report

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
)

// writeRateRun writes a study with a rate axis: server (nginx, caddy) ×
// rate (1000, 2000, 4000 req/s, the load's -R), two repetitions, the
// latency growing with the rate (nginx's median 100 µs × rate/1000,
// caddy's twice that).
func writeRateRun(t *testing.T) *results.Run {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 7))
	m := &results.Manifest{
		RunID: "20261130T044500Z-rate", Pipeline: results.PipelineInfo{Name: "latency-by-rate", SHA256: "abc", Format: "hcl"},
		BenchflowVersion: "test", StartedAt: t0, Order: "interleaved", Repetitions: 2,
		Matrix: map[string]any{"server": []any{"nginx", "caddy"}, "rate": []any{1000, 2000, 4000}}, Axes: []string{"server", "rate"},
		Environment: map[string]any{"fingerprint": "fp"},
	}
	var recs []*results.TrialRecord
	i := 0
	for rep := 1; rep <= 2; rep++ {
		for _, server := range []string{"nginx", "caddy"} {
			for _, rate := range []int{1000, 2000, 4000} {
				median := 100.0 * float64(rate) / 1000
				if server == "caddy" {
					median *= 2
				}
				res := synthLoad(rng, float64(rate), median, 3, 400)
				res.TargetRate = float64(rate)
				rec := &results.TrialRecord{
					TrialID: fmt.Sprintf("t%03d", i), Index: i, Repetition: rep,
					Params:   []results.Param{{Name: "server", Value: server}, {Name: "rate", Value: rate}},
					Provider: "local", Status: results.StatusOK, StartedAt: t0, FinishedAt: t0.Add(time.Minute),
					Steps: []results.StepRecord{{Name: "load", Kind: "load", Status: results.StatusOK, Result: res}},
				}
				recs = append(recs, rec)
				m.Trials = append(m.Trials, results.TrialEntry{TrialID: rec.TrialID, Index: i, Repetition: rep})
				i++
			}
		}
	}
	w, err := results.Create(t.TempDir(), m, []byte("pipeline {}"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.CommitTrial(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(results.RunOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run, err := results.ReadRun(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestRateChart: a study with a rate axis gets the latency-by-offered-rate
// chart: one p99 and one p50 line per server, each through the three
// offered rates in order, at the cells' merged p99 and p50, rising with
// the rate; the rate axis is found from the data (the cells differing
// only in it offered different rates) and named in the title. A study
// without one (S1: no open loop) has no such chart.
func TestRateChart(t *testing.T) {
	s, err := Summarize(writeRateRun(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ch := rateChart(s)
	if ch == nil {
		t.Fatal("no rate chart for a study with a rate axis")
	}
	if !strings.Contains(ch.Title, "across rate") {
		t.Errorf("title %q does not name the rate axis", ch.Title)
	}
	byLabel := map[string]series{}
	for _, se := range ch.Lines {
		byLabel[se.Label] = se
	}
	if len(ch.Lines) != 4 {
		t.Fatalf("%d lines, want p99 and p50 of nginx and caddy: %v", len(ch.Lines), labels(ch.Lines))
	}
	cellAt := map[string]*Cell{}
	for _, c := range s.Cells {
		cellAt[fmt.Sprintf("%v@%v", c.Params[0].Value, c.Params[1].Value)] = c
	}
	for _, server := range []string{"nginx", "caddy"} {
		for _, q := range []string{"p99", "p50"} {
			se, ok := byLabel["server="+server+" · "+q]
			if !ok || len(se.Pts) != 3 {
				t.Errorf("server=%s · %s: %v, want 3 points (lines %v)", server, q, se.Pts, labels(ch.Lines))
				continue
			}
			for j, rate := range []int{1000, 2000, 4000} {
				c := cellAt[fmt.Sprintf("%s@%d", server, rate)]
				want := c.P99US / 1000
				if q == "p50" {
					want = c.P50US / 1000
				}
				if se.Pts[j] != [2]float64{float64(rate), want} {
					t.Errorf("server=%s · %s point %d: %v, want (%d, %g)", server, q, j, se.Pts[j], rate, want)
				}
				if j > 0 && se.Pts[j][1] <= se.Pts[j-1][1] {
					t.Errorf("server=%s · %s: latency %v does not rise with the rate", server, q, se.Pts)
				}
			}
		}
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `id="chart-rate"`) {
		t.Error("the HTML report lacks the rate chart")
	}
	paths, err := WritePNG(t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 || !strings.HasSuffix(paths[len(paths)-1], "rate.png") {
		t.Errorf("--png wrote %v, want rate.png among them", paths)
	}
	s1, err := Summarize(writeSynthRun(t, t.TempDir(), s1Spec("20261130T044500Z-s1", 2)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ch := rateChart(s1); ch != nil {
		t.Errorf("a study without open-loop rates got a rate chart: %v", labels(ch.Lines))
	}
}

func labels(ss []series) []string {
	var out []string
	for _, se := range ss {
		out = append(out, se.Label)
	}
	return out
}

// TestCapacityChartP50: the capacity search's latency–load chart draws
// each cell's p50 by probe rate beside its p99, in rate order.
func TestCapacityChartP50(t *testing.T) {
	c := &Cell{Step: "search", N: 1, Capacity: &CellCapacity{}, probes: []results.ProbeRow{
		{Rate: 4000, P50US: 900, P99US: 9000}, {Rate: 1000, P50US: 100, P99US: 1000}, {Rate: 2000, P50US: 200, P99US: 2500},
	}}
	ch := capacityChart(&Summary{Cells: []*Cell{c}})
	if ch == nil || len(ch.Lines) < 2 {
		t.Fatalf("capacity chart %+v, want a p99 and a p50 line", ch)
	}
	want := map[string][][2]float64{
		"search":       {{1000, 1}, {2000, 2.5}, {4000, 9}},
		"search · p50": {{1000, 0.1}, {2000, 0.2}, {4000, 0.9}},
	}
	for _, se := range ch.Lines[:2] {
		w, ok := want[se.Label]
		if !ok || fmt.Sprint(se.Pts) != fmt.Sprint(w) {
			t.Errorf("%s: %v, want %v", se.Label, se.Pts, w)
		}
	}
}
