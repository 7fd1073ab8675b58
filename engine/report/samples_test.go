package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/stats"
)

// TestOutlierFlaggedEverywhere: a repetition far from the others is
// flagged in every format and kept in the estimate.
func TestOutlierFlaggedEverywhere(t *testing.T) {
	run := writeSynthRun(t, t.TempDir(), twoCellSpec("20261130T044500Z-out1", 5, 6, 0.01, 10000, 12000))
	var outlierID string
	for i := range run.Trials {
		tr := &run.Trials[i]
		if tr.StepKind == "load" && tr.Param("access_log") == "off" && tr.Repetition == 4 {
			tr.RPS = 4000
			outlierID = tr.TrialID
		}
	}
	s, err := Summarize(run, Options{Baseline: "access_log=on"})
	if err != nil {
		t.Fatal(err)
	}
	off := s.Cells[1]
	if off.N != 6 || off.RPS.N != 6 {
		t.Errorf("outlier dropped: n=%d, interval over %d", off.N, off.RPS.N)
	}
	if got := off.flags(); got != "outlier r4 (req/s)" {
		t.Errorf("flags %q, want the outlier of round 4", got)
	}
	if s.Cells[0].flags() != "" {
		t.Errorf("quiet cell flagged: %q", s.Cells[0].flags())
	}
	for f, want := range map[string]string{"text": "outlier r4 (req/s)", "markdown": "outlier r4 (req/s)", "csv": outlierID + ":req/s", "json": `"outlier": [`} {
		var b bytes.Buffer
		if err := s.Write(&b, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", f, want, b.String())
		}
	}
	var h bytes.Buffer
	if err := WriteHTML(&h, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), `<td class="w warn" data-label="flags">outlier r4 (req/s)</td>`) {
		t.Error("HTML table lacks the flag")
	}
	if off.Baseline == nil || off.Baseline.Method != stats.MethodPairedLogT || off.Baseline.N != 6 {
		t.Errorf("baseline ratio %+v, want paired over 6 rounds", off.Baseline)
	}
}

// TestBaselinePairsRounds: the ratio to the baseline pairs round r with
// round r, so a drift shared by a round cancels.
func TestBaselinePairsRounds(t *testing.T) {
	run := writeSynthRun(t, t.TempDir(), twoCellSpec("20261130T044500Z-pair", 6, 4, 0.001, 10000, 5000))
	drift := map[int64]float64{1: 1, 2: 1.3, 3: 0.7, 4: 1.1}
	for i := range run.Trials {
		if tr := &run.Trials[i]; tr.StepKind == "load" {
			tr.RPS *= drift[tr.Repetition]
		}
	}
	s, err := Summarize(run, Options{Baseline: "access_log=on"})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Cells[1].Baseline
	if r == nil || !(r.Low > 0.49 && r.High < 0.51) {
		t.Errorf("paired ratio %+v, want within [0.49, 0.51] despite ±30%% round drift", r)
	}
	if u := stats.WelchRatio(s.Cells[1].usedRPS(), s.Cells[0].usedRPS()); !(u.High-u.Low > 0.3) {
		t.Errorf("unpaired ratio %+v unexpectedly narrow: the test does not exercise pairing", u)
	}
	// With two repetitions the table shows the range, named as such.
	two := writeSynthRun(t, t.TempDir(), twoCellSpec("20261130T044500Z-two2", 7, 2, 0.01, 10000, 5000))
	s2, err := Summarize(two, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s2.Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
	if s2.Cells[0].RPS.Method != stats.MethodRange || !strings.Contains(b.String(), "min-max") {
		t.Errorf("n=2: method %q; text:\n%s", s2.Cells[0].RPS.Method, b.String())
	}
	var j bytes.Buffer
	if err := s2.Write(&j, "json"); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cells []struct {
			RPS struct {
				Method string `json:"method"`
				N      int    `json:"n"`
			} `json:"rps"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(j.Bytes(), &v); err != nil || v.Cells[0].RPS.Method != "range" || v.Cells[0].RPS.N != 2 {
		t.Errorf("json rps method/n = %+v (%v)", v.Cells, err)
	}
}

// TestTimeChartAligned: interval starts jittered differently in each
// repetition still average per second, one point per interval.
func TestTimeChartAligned(t *testing.T) {
	var reps [][]Point
	for r := 0; r < 3; r++ {
		var ts []Point
		for i := 0; i < 5; i++ {
			ts = append(ts, Point{TS: float64(i) + 0.001*float64(r+1)*float64(i), IntervalS: 1, RPS: 1000 + 100*float64(r)})
		}
		reps = append(reps, ts)
	}
	xs, ends, mid, lo, hi := alignedRPS(reps)
	if len(xs) != 5 {
		t.Fatalf("%d points, want 5 (one per second): %v", len(xs), xs)
	}
	for i := range xs {
		if xs[i] != float64(i) || ends[i] != float64(i+1) || mid[i] != 1100 || lo[i] != 1000 || hi[i] != 1200 {
			t.Errorf("point %d = [%v, %v] mean %v band [%v, %v], want [%d, %d] mean 1100 band [1000, 1200]", i, xs[i], ends[i], mid[i], lo[i], hi[i], i, i+1)
		}
	}
}

// TestUnsteadyFlaggedAndExcluded: an unsteady repetition is flagged and
// kept by default, left out of the intervals with ExcludeUnsteady.
func TestUnsteadyFlaggedAndExcluded(t *testing.T) {
	run := writeSynthRun(t, t.TempDir(), twoCellSpec("20261130T044500Z-stdy", 8, 4, 0.01, 10000, 12000))
	for i := range run.Trials {
		tr := &run.Trials[i]
		if tr.StepKind == "load" {
			if !tr.Steady {
				t.Fatalf("%s: synthetic steady load recorded unsteady: %q", tr.TrialID, tr.SteadyReason)
			}
			if tr.Param("access_log") == "on" && tr.Repetition == 2 {
				tr.Steady, tr.SteadyReason, tr.RPS = false, "stall: 10 interval(s) below 10% of the median req/s (10000), 1.0–2.0 s", 6000
			}
		}
	}
	kept, err := Summarize(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := Summarize(run, Options{ExcludeUnsteady: true})
	if err != nil {
		t.Fatal(err)
	}
	k, d := kept.Cells[0], dropped.Cells[0]
	if k.RPS.N != 4 || d.RPS.N != 3 || !(k.RPS.Value < 9500) || !(d.RPS.Value > 9800) {
		t.Errorf("kept %+v, excluded %+v: want the unsteady sample in the first only", k.RPS, d.RPS)
	}
	if !strings.HasPrefix(k.flags(), "unsteady r2 (stall") || strings.Contains(k.flags(), "excluded") || !strings.HasSuffix(d.flags(), " excluded") {
		t.Errorf("flags kept %q, excluded %q", k.flags(), d.flags())
	}
	for f, want := range map[string]string{"text": "unsteady r2 (stall", "csv": ":stall: 10 interval(s)", "json": `"unsteady": "stall`} {
		var b bytes.Buffer
		if err := dropped.Write(&b, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", f, want, b.String())
		}
	}
	var b bytes.Buffer
	dropped.Write(&b, "text")
	if !strings.Contains(b.String(), "left out of the estimates (exclude_unsteady)") {
		t.Errorf("text does not say unsteady repetitions were excluded:\n%s", b.String())
	}
	// The run's own setting turns exclusion on.
	run.Manifest.ExcludeUnsteady = true
	if s, _ := Summarize(run, Options{}); s.Cells[0].RPS.N != 3 {
		t.Errorf("manifest exclude_unsteady ignored: %+v", s.Cells[0].RPS)
	}
}
