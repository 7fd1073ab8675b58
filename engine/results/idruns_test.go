package results

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRunsDictionaryMatchesRows checks that the dictionaries and string
// columns built from the id runs listed when trials are sealed (rowRuns,
// histRuns) equal the ones built from the rows' id columns, for trials
// whose ids repeat within and across trials.
func TestRunsDictionaryMatchesRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []arrow.RecordBatch
	var runs []idRuns
	for trial := 0; trial < 20; trial++ {
		var rows []LatencyRow
		for i := rng.IntN(40); i >= 0; i-- {
			rows = append(rows, LatencyRow{
				RunID:   fmt.Sprintf("run%d", trial/7),
				TrialID: fmt.Sprintf("t%d", trial%5),
				Step:    []string{"a", "b", ""}[rng.IntN(3)],
				LowerUS: float64(i), UpperUS: float64(i), Count: 1,
			})
		}
		recs = append(recs, buildRecord(mem, bigSchemas[bigLatency], latencyColumns, rows))
		runs = append(runs, rowRuns(rows, func(r *LatencyRow) [numIDs]string { return [numIDs]string{r.RunID, r.TrialID, r.Step} }))
	}
	hs := []stepHist{{"run9", "t1", "a", 0, make([]hdrhistogram.Bar, 3)}, {"run9", "t1", "b", 0, make([]hdrhistogram.Bar, 2)}, {"run9", "t2", "b", 0, make([]hdrhistogram.Bar, 4)}}
	var rows []LatencyRow
	for _, h := range hs {
		for range h.bars {
			rows = append(rows, LatencyRow{RunID: h.runID, TrialID: h.trialID, Step: h.step})
		}
	}
	recs = append(recs, buildRecord(mem, bigSchemas[bigLatency], latencyColumns, rows))
	runs = append(runs, histRuns(hs))
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for c := 0; c < numIDs; c++ {
		parts := make([]arrow.Array, len(recs))
		col := make([][]idRun, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
			col[i] = runs[i][c]
		}
		want := stringDictionary(mem, parts)
		got := runsDictionary(mem, col)
		if !array.Equal(want, got) {
			t.Errorf("column %s: runs give %v, rows give %v", idNames[c], got, want)
		}
		want.Release()
		got.Release()
		wantStr, err := array.Concatenate(parts, mem)
		if err != nil {
			t.Fatal(err)
		}
		gotStr := runsStrings(mem, col)
		if !array.Equal(wantStr, gotStr) {
			t.Errorf("column %s: runs give strings %v, rows give %v", idNames[c], gotStr, wantStr)
		}
		wantStr.Release()
		gotStr.Release()
	}
}
