package results

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/go-cmp/cmp"
)

// The fast bucket walk must list exactly Distribution's non-empty buckets
// and give Mean and Max bit for bit, whatever the histogram's geometry.
func TestNonEmptyBarsMatchDistribution(t *testing.T) {
	geometries := []struct {
		lowest, highest int64
		digits          int
	}{
		{1, 60_000_000, 3}, {1, 3_600_000_000, 2}, {1, 1_000_000, 1}, {1, 100_000, 5},
		{1000, 1_000_000_000, 4}, {7, 10_000_000, 3}, {2, 1 << 40, 3}, {1, 100, 3},
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for _, g := range geometries {
		for _, spread := range []float64{0.1, 1, 3} {
			name := fmt.Sprintf("%d-%d-%d-spread%v", g.lowest, g.highest, g.digits, spread)
			h := hdrhistogram.New(g.lowest, g.highest, g.digits)
			for i := 0; i < 5000; i++ {
				v := int64(float64(g.lowest) * 50 * math.Exp(spread*rng.NormFloat64()))
				if v > g.highest {
					v = g.highest
				}
				if err := h.RecordValue(v); err != nil {
					t.Fatalf("%s: recording %d: %v", name, v, err)
				}
			}
			h.RecordValue(0)
			h.RecordValue(g.highest)
			var want []hdrhistogram.Bar
			for _, b := range h.Distribution() {
				if b.Count != 0 {
					want = append(want, b)
				}
			}
			got, ok := walkCounts(h)
			if !ok {
				t.Errorf("%s: the fast walk refused the histogram", name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: buckets differ from Distribution (-want +got):\n%s", name, diff)
			}
			mean, max := barsMeanMax(nonEmptyBars(h), h.TotalCount())
			if mean != h.Mean() || max != h.Max() {
				t.Errorf("%s: mean, max = %v, %d; want %v, %d", name, mean, max, h.Mean(), h.Max())
			}
		}
	}
}

func TestNonEmptyBarsEmpty(t *testing.T) {
	if bars := nonEmptyBars(hdrhistogram.New(1, 1000, 3)); bars != nil {
		t.Errorf("empty histogram: %v", bars)
	}
	if bars := nonEmptyBars(nil); bars != nil {
		t.Errorf("nil histogram: %v", bars)
	}
	if mean, max := barsMeanMax(nil, 0); mean != 0 || max != 0 {
		t.Errorf("no buckets: %v %v", mean, max)
	}
}

// Id columns are written dictionary-encoded and read back as dictionary
// arrays; files whose id columns are plain-encoded (written before) read
// the same.
func TestIDColumnsDictionaryAndPlain(t *testing.T) {
	dir := t.TempDir()
	rows := []LatencyRow{
		{RunID: "r1", TrialID: "t1", Step: "wrk", LowerUS: 1, UpperUS: 1, Count: 3},
		{RunID: "r1", TrialID: "t1", Step: "wrk", LowerUS: 2, UpperUS: 3, Count: 4},
		{RunID: "r1", TrialID: "t2", Step: "wrk2", LowerUS: 2, UpperUS: 3, Count: 5},
		{RunID: "r1", TrialID: "t1", Step: "wrk", LowerUS: 8, UpperUS: 15, Count: 6},
	}
	mem := memory.DefaultAllocator
	dictPath := filepath.Join(dir, "dict.parquet")
	if err := writeTable(mem, nil, dictPath, FormatParquet, latencyColumns, rows); err != nil {
		t.Fatal(err)
	}
	// The same rows with every column plain-encoded.
	plainPath := filepath.Join(dir, "plain.parquet")
	rec := buildRecord(mem, schemaOf(latencyColumns), latencyColumns, rows)
	defer rec.Release()
	f, err := os.Create(plainPath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithDictionaryDefault(false)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for path, wantDict := range map[string]bool{dictPath: true, plainPath: false} {
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		for c, name := range []string{"run_id", "trial_id", "step"} {
			cc, err := pf.MetaData().RowGroup(0).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := cc.HasDictionaryPage(); got != wantDict {
				t.Errorf("%s: column %s has a dictionary page: %v, want %v", filepath.Base(path), name, got, wantDict)
			}
		}
		pf.Close()
		got, err := readTable(mem, path, FormatParquet, fixed(latencyColumns))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rows, got); diff != "" {
			t.Errorf("%s read back differs (-want +got):\n%s", filepath.Base(path), diff)
		}
	}
}

// A dictionary larger than the Parquet writer's dictionary page limit
// (1 MB) still writes and reads back every value.
func TestIDColumnsLargeDictionary(t *testing.T) {
	rows := make([]LatencyRow, 150_000)
	for i := range rows {
		rows[i] = LatencyRow{RunID: "r", TrialID: fmt.Sprintf("trial-%010d", i), Step: "wrk", LowerUS: float64(i), UpperUS: float64(i), Count: 1}
	}
	path := filepath.Join(t.TempDir(), "latency.parquet")
	mem := memory.DefaultAllocator
	if err := writeTable(mem, nil, path, FormatParquet, latencyColumns, rows); err != nil {
		t.Fatal(err)
	}
	got, err := readTable(mem, path, FormatParquet, fixed(latencyColumns))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("read %d rows, want %d", len(got), len(rows))
	}
	for i := range rows {
		if got[i] != rows[i] {
			t.Fatalf("row %d: got %+v, want %+v", i, got[i], rows[i])
		}
	}
}
