package results

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mergeByMap is the reference merge: counts summed per (lower, upper),
// sorted.
func mergeByMap(hs ...Histogram) Histogram {
	type key struct{ l, u float64 }
	sum := map[key]int64{}
	for _, h := range hs {
		for _, b := range h {
			sum[key{b.Lower, b.Upper}] += b.Count
		}
	}
	out := Histogram{}
	for k, c := range sum {
		out = append(out, Bucket{Lower: k.l, Upper: k.u, Count: c})
	}
	out.sort()
	return out
}

func TestMergeHistogramsMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	randHist := func(sorted bool) Histogram {
		var h Histogram
		for i := 0; i < rng.IntN(40); i++ {
			l := float64(rng.IntN(30))
			// Some buckets share an upper bound but not the lower one, and
			// some repeat within one histogram.
			h = append(h, Bucket{Lower: l, Upper: l + float64(rng.IntN(3)), Count: int64(1 + rng.IntN(9))})
		}
		if sorted {
			h.sort()
		}
		return h
	}
	for round := 0; round < 300; round++ {
		hs := make([]Histogram, rng.IntN(6))
		for i := range hs {
			hs[i] = randHist(rng.IntN(4) != 0)
		}
		orig := make([]Histogram, len(hs))
		for i := range hs {
			orig[i] = append(Histogram(nil), hs[i]...)
		}
		got := MergeHistograms(hs...)
		want := mergeByMap(hs...)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d: merge differs from the reference (-want +got):\n%s", round, diff)
		}
		if diff := cmp.Diff(orig, hs); diff != "" {
			t.Fatalf("round %d: merge modified its inputs:\n%s", round, diff)
		}
	}
}

func TestMergeHistogramsPercentile(t *testing.T) {
	a := Histogram{{Lower: 1, Upper: 1, Count: 5}, {Lower: 2, Upper: 3, Count: 5}}
	b := Histogram{{Lower: 2, Upper: 3, Count: 10}, {Lower: 8, Upper: 15, Count: 10}}
	m := MergeHistograms(a, b)
	if len(m) != 3 || m[1].Count != 15 || m.Total() != 30 {
		t.Fatalf("merged %v", m)
	}
	if p := m.Percentile(50); p != 3 {
		t.Errorf("p50 = %v, want 3", p)
	}
	if p := m.Percentile(100); p != 15 {
		t.Errorf("p100 = %v, want 15", p)
	}
}
