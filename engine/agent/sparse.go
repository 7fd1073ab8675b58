package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms travel as sparse snapshots: the geometry of HdrHistogram's
// Snapshot (lowest trackable value, highest trackable value, significant
// figures) and its non-zero counts as (index delta, count) pairs, all
// unsigned varints. It is lossless (Import of the snapshot rebuilds the
// same histogram) and, unlike a dense snapshot or the V2 encoding, costs
// only its non-empty buckets to decode and to merge: a controller adds 64
// agents × 600 intervals without materialising 38,400 histograms.

// sparse is a decoded sparse snapshot.
type sparse struct {
	lowest, highest int64
	sig             int
	idx             []int32
	cnt             []int64
}

// maxCounts bounds a decoded index: HdrHistogram's counts for 1 µs to an
// hour at 5 digits are far fewer.
const maxCounts = 1 << 24

func encodeSparse(h *hdrhistogram.Histogram) []byte {
	if h == nil {
		return nil
	}
	s := h.Export()
	b := make([]byte, 0, 32)
	b = binary.AppendUvarint(b, uint64(s.LowestTrackableValue))
	b = binary.AppendUvarint(b, uint64(s.HighestTrackableValue))
	b = binary.AppendUvarint(b, uint64(s.SignificantFigures))
	prev := 0
	for i, c := range s.Counts {
		if c <= 0 {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i-prev))
		b = binary.AppendUvarint(b, uint64(c))
		prev = i
	}
	return b
}

var errSparse = errors.New("malformed histogram")

func decodeSparse(b []byte) (*sparse, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var vals [3]uint64
	for i := range vals {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errSparse
		}
		vals[i], b = v, b[n:]
	}
	if vals[0] < 1 || vals[0] > math.MaxInt32 || vals[1] < 2*vals[0] || vals[1] > math.MaxInt64/2 || vals[2] > 5 {
		return nil, fmt.Errorf("%w: geometry %d..%d, %d digits", errSparse, vals[0], vals[1], vals[2])
	}
	s := &sparse{lowest: int64(vals[0]), highest: int64(vals[1]), sig: int(vals[2])}
	// A pair takes at least two bytes.
	s.idx, s.cnt = make([]int32, 0, len(b)/2), make([]int64, 0, len(b)/2)
	idx := int64(0)
	var total int64
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errSparse
		}
		b = b[n:]
		c, n := binary.Uvarint(b)
		if n <= 0 || c == 0 || c > math.MaxInt64-uint64(total) {
			return nil, errSparse
		}
		b = b[n:]
		idx += int64(d)
		if idx >= maxCounts || (len(s.idx) > 0 && d == 0) {
			return nil, fmt.Errorf("%w: bucket index %d", errSparse, idx)
		}
		total += int64(c)
		s.idx = append(s.idx, int32(idx))
		s.cnt = append(s.cnt, int64(c))
	}
	return s, nil
}

// mergeSparse adds snapshots of one geometry (lowest value and digits; the
// highest trackable value may differ, the merged one takes the largest)
// into one histogram.
func mergeSparse(ss []*sparse) (*hdrhistogram.Histogram, error) {
	var first *sparse
	n := 0
	for _, s := range ss {
		if s == nil {
			continue
		}
		if first == nil {
			first = s
		}
		if s.lowest != first.lowest || s.sig != first.sig {
			return nil, fmt.Errorf("histograms of different precision (lowest %d, %d digits vs lowest %d, %d digits): their buckets do not coincide",
				first.lowest, first.sig, s.lowest, s.sig)
		}
		if k := len(s.idx); k > 0 {
			n = max(n, int(s.idx[k-1])+1)
		}
	}
	if first == nil {
		return nil, nil
	}
	snap := &hdrhistogram.Snapshot{LowestTrackableValue: first.lowest, SignificantFigures: int64(first.sig), Counts: make([]int64, n)}
	for _, s := range ss {
		if s == nil {
			continue
		}
		snap.HighestTrackableValue = max(snap.HighestTrackableValue, s.highest)
		for i, ix := range s.idx {
			snap.Counts[ix] += s.cnt[i]
		}
	}
	if err := snap.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSparse, err)
	}
	return hdrhistogram.Import(snap), nil
}

// histOf decodes one sparse snapshot into a histogram (nil for empty).
func histOf(b []byte) (*hdrhistogram.Histogram, error) {
	s, err := decodeSparse(b)
	if err != nil || s == nil {
		return nil, err
	}
	return mergeSparse([]*sparse{s})
}

// sparseOf converts a histogram (nil for nil).
func sparseOf(h *hdrhistogram.Histogram) *sparse {
	if h == nil {
		return nil
	}
	snap := h.Export()
	s := &sparse{lowest: snap.LowestTrackableValue, highest: snap.HighestTrackableValue, sig: int(snap.SignificantFigures)}
	for i, c := range snap.Counts {
		if c > 0 {
			s.idx = append(s.idx, int32(i))
			s.cnt = append(s.cnt, c)
		}
	}
	return s
}
