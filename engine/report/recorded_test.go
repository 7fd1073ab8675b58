package report

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
)

// Two runs of testdata/recorded/*/pipeline.hcl (benchflow serve on
// loopback, 6 B vs 4 KiB bodies, 5 interleaved rounds of 2 s) recorded on
// a busy machine: real trials, real noise.
const (
	recordedA = "20261201T093718Z-66b8"
	recordedB = "20261201T093749Z-9ba4"
)

func readRecorded(t *testing.T, id string) *results.Run {
	t.Helper()
	run, err := results.ReadRun(filepath.Join("testdata", "recorded", id))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestRecordedIntervals recomputes each cell's interval by hand from the
// recorded trials (t(0.975, 4) = 2.776 from the tables) and checks the
// report's numbers against it.
func TestRecordedIntervals(t *testing.T) {
	run := readRecorded(t, recordedA)
	s, err := Summarize(run, Options{Baseline: "size=6"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 2 {
		t.Fatalf("%d cells", len(s.Cells))
	}
	byRound := map[string]map[int64]float64{}
	for _, tr := range run.Trials {
		if tr.StepKind != "load" {
			continue
		}
		k := tr.Param("size").(string)
		if byRound[k] == nil {
			byRound[k] = map[int64]float64{}
		}
		byRound[k][tr.Repetition] = tr.RPS
	}
	for _, c := range s.Cells {
		rs := byRound[c.Params[0].Value.(string)]
		var sum, sum2 float64
		for _, v := range rs {
			sum += math.Log(v)
		}
		m := sum / float64(len(rs))
		for _, v := range rs {
			sum2 += (math.Log(v) - m) * (math.Log(v) - m)
		}
		h := 2.776 * math.Sqrt(sum2/float64(len(rs)-1)/float64(len(rs)))
		want := stats.Interval{Value: math.Exp(m), Low: math.Exp(m - h), High: math.Exp(m + h)}
		got := c.RPS
		if len(rs) != 5 || got.N != 5 || got.Method != stats.MethodLogT {
			t.Fatalf("%s: %d rounds recorded, interval %+v", c.Label(), len(rs), got)
		}
		for _, pair := range [][2]float64{{got.Value, want.Value}, {got.Low, want.Low}, {got.High, want.High}} {
			if math.Abs(pair[0]/pair[1]-1) > 2e-4 {
				t.Errorf("%s: interval %+v, recomputed %+v", c.Label(), got, want)
			}
		}
		if !(got.Low > 0) {
			t.Errorf("%s: interval below zero: %+v", c.Label(), got)
		}
		if p := c.P99Reps; p.Method != stats.MethodLogT || p.N != 5 || !(p.Low > 0 && p.Low < p.Value && p.Value < p.High) {
			t.Errorf("%s: p99 over repetitions %+v, want a positive log-t interval over 5", c.Label(), p)
		}
	}
	// The 4 KiB cell against the 6 B one, round by round.
	var lr []float64
	for r, v := range byRound["4KiB"] {
		lr = append(lr, math.Log(v/byRound["6"][r]))
	}
	want := math.Exp(stats.Mean(lr))
	if b := s.Cells[1].Baseline; b == nil || math.Abs(b.Value/want-1) > 1e-9 || b.Method != stats.MethodPairedLogT || !(b.Low > 0) {
		t.Errorf("paired ratio %+v, want %v from the per-round ratios", b, want)
	}
	for _, f := range []string{"text", "csv"} {
		var buf bytes.Buffer
		if err := s.Write(&buf, f); err != nil {
			t.Fatal(err)
		}
		golden(t, "recorded."+f+".golden", buf.Bytes())
	}
	// The recorded intervals start a few ms apart in each round: the time
	// chart still has one step per second of load (a start and an end).
	ch := timeChart(s)
	for _, se := range ch.Lines {
		if len(se.Pts) > 2*2 || len(se.Band) != len(se.Pts) {
			t.Errorf("%s: %d points (%d band), want the start and end of at most 2 aligned seconds", se.Label, len(se.Pts), len(se.Band))
		}
	}
}

// TestRecordedReproduced compares the two recorded runs of one pipeline and
// a run with itself.
func TestRecordedReproduced(t *testing.T) {
	a, b := readRecorded(t, recordedA), readRecorded(t, recordedB)
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Taken on a busy machine: the req/s ratio intervals are wider than
	// ×/÷TooNoisyFactor, so neither pair is judged.
	if !c.SamePipeline || c.ReproJudged != 0 || c.TooNoisy != 2 {
		t.Errorf("same pipeline %v, %d pairs judged, %d too noisy; want 0 judged, 2 too noisy", c.SamePipeline, c.ReproJudged, c.TooNoisy)
	}
	var buf bytes.Buffer
	if err := c.Write(&buf, "text"); err != nil {
		t.Fatal(err)
	}
	golden(t, "recorded_compare.text.golden", buf.Bytes())
	self, err := Compare(a, a, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Against itself every ratio is 1, but the intervals are as wide as
	// the run is noisy: "too noisy", never "yes" on that evidence.
	for _, p := range self.Pairs {
		if p.RPSRatio.Value != 1 || p.Reproduced != ReproducedTooNoisy {
			t.Errorf("%s against itself: ratio %+v reproduced %q, want %q", p.Label, p.RPSRatio, p.Reproduced, ReproducedTooNoisy)
		}
	}
	buf.Reset()
	self.Write(&buf, "text")
	if !strings.Contains(buf.String(), "reproduced: no cell could be judged; not judged, too noisy: 2 cell(s)") {
		t.Errorf("no summary line:\n%s", buf.String())
	}
}
