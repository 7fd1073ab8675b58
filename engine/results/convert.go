package results

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/benchflow/benchflow/engine/measure"
)

// fillSummary copies a load result's totals and percentiles into a trials
// row; bars are nonEmptyBars(res.Latency).
func fillSummary(row *TrialRow, res *measure.Record, bars []hdrhistogram.Bar) {
	row.DurationS = res.Duration.Seconds()
	row.Requests = res.Requests
	row.Errors = res.Errors
	row.RPS = res.RPS()
	row.Bytes = res.Bytes
	if !res.Started.IsZero() {
		row.StartedAt = res.Started.UTC()
	}
	if h := res.Latency; h != nil && h.TotalCount() > 0 {
		row.LatencyP50US = float64(h.ValueAtQuantile(50))
		row.LatencyP90US = float64(h.ValueAtQuantile(90))
		row.LatencyP99US = float64(h.ValueAtQuantile(99))
		row.LatencyP999US = float64(h.ValueAtQuantile(99.9))
		mean, max := barsMeanMax(bars, h.TotalCount())
		row.LatencyMaxUS = float64(max)
		row.LatencyMeanUS = mean
		row.LatencyUncorrectedP99US = row.LatencyP99US
	}
	if h := res.Uncorrected; h != nil && h.TotalCount() > 0 {
		row.LatencyUncorrectedP99US = float64(h.ValueAtQuantile(99))
	}
	if h := res.Connect; h != nil && h.TotalCount() > 0 {
		row.ConnectP50US = float64(h.ValueAtQuantile(50))
		row.Connects = h.TotalCount()
	}
	row.Used0RTT = res.Used0RTT
	row.UDPRecvBuf, row.UDPSendBuf, row.UDPGSO = res.UDPRecvBuf, res.UDPSendBuf, res.UDPGSO
	row.TargetRate = res.TargetRate
	row.RateWarning = res.Warning
	row.Intended, row.Missed = res.Intended, res.Missed
	row.ErrorsCheck = res.ErrorsBy["check"]
	row.Connections = int64(res.Connections)
	row.Threads = int64(res.Threads)
	row.LoadEngine = res.Engine
	row.Protocol, row.Streams = res.Protocol, int64(res.Streams)
	row.TLSVersion, row.TLSCipher, row.ALPN = res.TLSVersion, res.TLSCipher, res.ALPN
	row.ErrorsReset, row.ErrorsGoaway = res.ErrorsBy["reset"], res.ErrorsBy["goaway"]
	row.ErrorsConnect = res.ErrorsBy["connect"]
	row.ErrorsTimeout = res.ErrorsBy["timeout"]
	row.ErrorsRead = res.ErrorsBy["read"]
	row.ErrorsWrite = res.ErrorsBy["write"]
	row.ErrorsParse = res.ErrorsBy["parse"]
	row.ErrorsHTTP = res.ErrorsBy["http"]
	for code, n := range res.Status {
		switch code / 100 {
		case 1:
			row.Status1xx += n
		case 2:
			row.Status2xx += n
		case 3:
			row.Status3xx += n
		case 4:
			row.Status4xx += n
		case 5:
			row.Status5xx += n
		}
	}
}

// timeseriesRows lists the result's intervals. An interval lasts its
// Duration when the generator sets it, else until the next one starts (the
// last one until the end of the measured phase).
func timeseriesRows(runID, trialID, step string, res *measure.Record) []TimeseriesRow {
	rows := make([]TimeseriesRow, 0, len(res.Intervals))
	for i, iv := range res.Intervals {
		var length float64
		if iv.Duration > 0 {
			length = iv.Duration.Seconds()
		} else if i+1 < len(res.Intervals) {
			length = (res.Intervals[i+1].Start - iv.Start).Seconds()
		} else {
			length = (res.Duration - iv.Start).Seconds()
			if length <= 0 && i > 0 {
				length = (iv.Start - res.Intervals[i-1].Start).Seconds()
			}
		}
		r := TimeseriesRow{RunID: runID, TrialID: trialID, Step: step, TS: iv.Start.Seconds(), IntervalS: length,
			Requests: iv.Requests, Errors: iv.Errors, Bytes: iv.Bytes}
		if length > 0 {
			r.RPS = float64(iv.Requests) / length
		}
		if h := iv.Latency; h != nil && h.TotalCount() > 0 {
			r.LatencyP50US = float64(h.ValueAtQuantile(50))
			r.LatencyP99US = float64(h.ValueAtQuantile(99))
			r.LatencyMaxUS = float64(h.Max())
		}
		rows = append(rows, r)
	}
	return rows
}

// Bucket is one histogram bucket: Count values in [Lower, Upper] µs.
type Bucket struct {
	Lower, Upper float64
	Count        int64
}

// Histogram is a latency distribution as a list of buckets, sorted by
// Upper. It is what latency.parquet stores per trial × step; buckets of
// several trials merge by adding counts.
type Histogram []Bucket

// BucketsOf converts an HDR histogram into its non-empty buckets.
func BucketsOf(h *hdrhistogram.Histogram) Histogram {
	if h == nil {
		return nil
	}
	bars := nonEmptyBars(h)
	if len(bars) == 0 {
		return nil
	}
	out := make(Histogram, len(bars))
	for i, b := range bars {
		out[i] = Bucket{Lower: float64(b.From), Upper: float64(b.To), Count: b.Count}
	}
	return out
}

// nonEmptyBars lists h's non-empty buckets in value order, as
// h.Distribution() does (without its empty ones). It walks the exported
// counts with the bucket geometry HdrHistogram derives from the lowest
// discernible value and the significant digits, which costs a fraction of
// Distribution's iterator; should the result disagree with the histogram
// (total count, highest value) it falls back to Distribution.
func nonEmptyBars(h *hdrhistogram.Histogram) []hdrhistogram.Bar {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	if bars, ok := walkCounts(h); ok {
		return bars
	}
	var out []hdrhistogram.Bar
	for _, b := range h.Distribution() {
		if b.Count != 0 {
			out = append(out, b)
		}
	}
	return out
}

// walkCounts is nonEmptyBars' fast path; ok is false when its result
// cannot be trusted.
func walkCounts(h *hdrhistogram.Histogram) (bars []hdrhistogram.Bar, ok bool) {
	s := h.Export()
	lowest, digits := s.LowestTrackableValue, s.SignificantFigures
	if lowest < 1 || digits < 1 || digits > 5 {
		return nil, false
	}
	// The geometry of hdrhistogram.New: single-unit resolution up to
	// 2·10^digits, rounded up to a power of two sub-buckets.
	halfMag := int64(math.Ceil(math.Log2(2*math.Pow10(int(digits))))) - 1
	unitMag := int64(math.Floor(math.Log2(float64(lowest))))
	if halfMag < 0 || unitMag < 0 || unitMag+halfMag > 61 {
		return nil, false
	}
	half := int64(1) << halfMag
	n := 0
	for _, c := range s.Counts {
		if c != 0 {
			n++
		}
	}
	bars = make([]hdrhistogram.Bar, 0, n)
	var total int64
	for i, c := range s.Counts {
		if c == 0 {
			continue
		}
		if c < 0 {
			return nil, false
		}
		idx := int64(i)
		bucket := (idx >> halfMag) - 1
		sub := idx&(half-1) + half
		if bucket < 0 {
			sub -= half
			bucket = 0
		}
		shift := bucket + unitMag
		if shift > 62 {
			return nil, false
		}
		from := sub << shift
		bars = append(bars, hdrhistogram.Bar{From: from, To: from + (int64(1) << shift) - 1, Count: c})
		total += c
	}
	if total != h.TotalCount() || len(bars) == 0 || bars[len(bars)-1].To != h.ValueAtQuantile(100) {
		return nil, false
	}
	return bars, true
}

// barsMeanMax computes what h.Mean() and h.Max() return from h's
// non-empty buckets (same order of summation, so the same float64).
func barsMeanMax(bars []hdrhistogram.Bar, total int64) (mean float64, max int64) {
	if total == 0 || len(bars) == 0 {
		return 0, 0
	}
	t := float64(total)
	for _, b := range bars {
		median := b.From + (b.To-b.From+1)>>1
		mean += float64(b.Count) * float64(median) / t
	}
	return mean, bars[len(bars)-1].To
}

// MergeHistograms adds the counts of equal buckets and sorts the result.
// Sorted inputs (as ReadRun and BucketsOf return them) are merged in one
// linear pass each; an unsorted one is sorted (in a copy) first.
func MergeHistograms(hs ...Histogram) Histogram {
	if len(hs) == 1 {
		out := append(Histogram(nil), hs[0]...)
		if !out.sorted() {
			out.sort()
		}
		return mergeEqual(out)
	}
	var out, spare Histogram
	for _, h := range hs {
		if len(h) == 0 {
			continue
		}
		if !h.sorted() {
			h = append(Histogram(nil), h...)
			h.sort()
		}
		spare = mergeSorted(spare[:0], out, h)
		out, spare = spare, out
	}
	if out == nil {
		return Histogram{}
	}
	return mergeEqual(out)
}

// mergeSorted appends to dst the buckets of a and b (both sorted) in
// order, adding the counts of buckets with equal bounds.
func mergeSorted(dst, a, b Histogram) Histogram {
	dst = slices.Grow(dst, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x, y := a[i], b[j]
		switch {
		case x.Upper < y.Upper || (x.Upper == y.Upper && x.Lower < y.Lower):
			dst = append(dst, x)
			i++
		case y.Upper < x.Upper || (x.Upper == y.Upper && y.Lower < x.Lower):
			dst = append(dst, y)
			j++
		default:
			x.Count += y.Count
			dst = append(dst, x)
			i++
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// mergeEqual adds the counts of consecutive buckets with equal bounds
// (buckets repeated within one input), in place.
func mergeEqual(h Histogram) Histogram {
	out := h[:0]
	for _, b := range h {
		if n := len(out); n > 0 && out[n-1].Lower == b.Lower && out[n-1].Upper == b.Upper {
			out[n-1].Count += b.Count
			continue
		}
		out = append(out, b)
	}
	return out
}

func (h Histogram) sorted() bool {
	for i := 1; i < len(h); i++ {
		if h[i].Upper < h[i-1].Upper || (h[i].Upper == h[i-1].Upper && h[i].Lower < h[i-1].Lower) {
			return false
		}
	}
	return true
}

func (h Histogram) sort() {
	sort.Slice(h, func(i, j int) bool {
		if h[i].Upper != h[j].Upper {
			return h[i].Upper < h[j].Upper
		}
		return h[i].Lower < h[j].Lower
	})
}

// Total is the number of values counted.
func (h Histogram) Total() int64 {
	var n int64
	for _, b := range h {
		n += b.Count
	}
	return n
}

// Percentile returns the value at percentile p (0 < p <= 100) the way
// HdrHistogram's ValueAtQuantile does: the upper bound of the bucket that
// holds the ⌊p/100·total+0.5⌋-th value. h must be sorted (as
// MergeHistograms and ReadRun return it). It returns 0 for an empty
// histogram.
func (h Histogram) Percentile(p float64) float64 {
	total := h.Total()
	if total == 0 {
		return 0
	}
	if p > 100 {
		p = 100
	}
	target := int64(p/100*float64(total) + 0.5)
	if target < 1 {
		target = 1
	}
	var n int64
	for _, b := range h {
		n += b.Count
		if n >= target {
			return b.Upper
		}
	}
	return h[len(h)-1].Upper
}

func sortStrings(s []string) { sort.Strings(s) }

func joinComma(s []string) string { return strings.Join(s, ", ") }

// fillExplanation copies a step's CPU budget, verdict and quiet check into
// its trials row (all zero when the step had none).
func fillExplanation(row *TrialRow, s *StepRecord) {
	if b := s.CPU; b != nil {
		row.CPUTotalPct, row.CPULoaderPct, row.CPUServicePct = b.TotalPct, b.LoaderPct, b.ServicePct
		row.CPUInfraPct, row.CPUKernelPct, row.CPUOtherPct = b.InfraPct, b.KernelPct, b.OtherPct
		row.CPUIdlePct, row.CPUStealPct, row.CPUUnattributedPct = b.IdlePct, b.StealPct, b.UnattributedPct
		row.CPUIRQInProcsPct = b.IRQInProcessesPct
	}
	row.Verdict, row.VerdictEvidence, row.VerdictHost = s.Verdict, s.VerdictEvidence, s.VerdictHost
	if q := s.Quiet; q != nil {
		row.QuietWindowS, row.QuietPct, row.QuietTop, row.BusyStart = q.WindowS, q.OtherPct, q.Top, q.Busy
		row.QuietLoadAvg = q.LoadAvg
	}
}
