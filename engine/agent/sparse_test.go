package agent

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestSparseIsLossless: a histogram sent as a sparse snapshot comes back
// with the same geometry and the same count in every bucket.
func TestSparseIsLossless(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 30 {
		sig := 1 + rng.IntN(4)
		h := hdrhistogram.New(1, int64(1000+rng.IntN(100_000_000)), sig)
		for range rng.IntN(5000) {
			_ = h.RecordValue(int64(rng.ExpFloat64()*float64(1+rng.IntN(100000))) + 1)
		}
		got, err := histOf(encodeSparse(h))
		if err != nil {
			t.Fatal(err)
		}
		if h.TotalCount() == 0 {
			// An empty histogram travels as its geometry alone.
			if got == nil || got.TotalCount() != 0 {
				t.Errorf("trial %d: empty histogram came back as %v", trial, got)
			}
			continue
		}
		a, b := h.Export(), got.Export()
		if a.LowestTrackableValue != b.LowestTrackableValue || a.HighestTrackableValue != b.HighestTrackableValue ||
			a.SignificantFigures != b.SignificantFigures || !slices.Equal(a.Counts, b.Counts) {
			t.Errorf("trial %d: geometry %d..%d/%d came back as %d..%d/%d, or counts differ", trial,
				a.LowestTrackableValue, a.HighestTrackableValue, a.SignificantFigures, b.LowestTrackableValue, b.HighestTrackableValue, b.SignificantFigures)
		}
		if got.TotalCount() != h.TotalCount() || got.Max() != h.Max() || got.Min() != h.Min() {
			t.Errorf("trial %d: total/min/max %d/%d/%d, want %d/%d/%d", trial, got.TotalCount(), got.Min(), got.Max(), h.TotalCount(), h.Min(), h.Max())
		}
	}
}

// TestSparseRejectsGarbage: truncated and corrupted snapshots are errors,
// never a panic or a wrong histogram built silently.
func TestSparseRejectsGarbage(t *testing.T) {
	h := hdrhistogram.New(1, 1_000_000, 3)
	for v := int64(1); v < 5000; v += 7 {
		_ = h.RecordValue(v)
	}
	good := encodeSparse(h)
	for _, b := range [][]byte{
		{0x80},                           // a varint that never ends
		{0, 10, 3},                       // lowest 0
		{1, 1, 3},                        // highest below 2 × lowest
		{1, 100, 9},                      // 9 digits
		append(slices.Clone(good), 5),    // a pair cut in half
		append(slices.Clone(good), 0, 1), // the same bucket twice
		append(slices.Clone(good), 0xff, 0xff, 0xff, 0x7f, 1), // an index past the histogram
		append(slices.Clone(good), 1, 0),                      // a zero count
	} {
		if hh, err := histOf(b); err == nil {
			t.Errorf("histOf(% x) = %v, want an error", b, hh)
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 2000 {
		b := slices.Clone(good)
		b[rng.IntN(len(b))] = byte(rng.IntN(256))
		_, _ = histOf(b[:rng.IntN(len(b)+1)]) // must not panic
	}
}
