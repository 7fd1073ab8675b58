package agent

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
)

var quantiles = []float64{1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100}

// TestMergeIsExact is the merge's property: whatever way the requests are
// spread over agents, the merged histogram's percentiles, count, min and
// max are those of one histogram fed every value, also after the
// lossless encoding the agents send.
func TestMergeIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		agents := 1 + rng.IntN(8)
		highest := int64(3_000_000 + rng.IntN(5)*1_000_000)
		all := hdrhistogram.New(1, 60_000_000, 3)
		parts := make([]Part, agents)
		hs := make([]*hdrhistogram.Histogram, agents)
		for i := range hs {
			// Agents' ceilings differ with their share (open loop).
			hs[i] = hdrhistogram.New(1, highest+int64(i)*1000, 3)
		}
		n := 1 + rng.IntN(20000)
		for range n {
			// A long-tailed mix: most fast, a few slow.
			v := int64(rng.ExpFloat64()*300) + 1
			if rng.IntN(100) == 0 {
				v = int64(rng.IntN(int(highest))) + 1
			}
			i := rng.IntN(agents)
			if err := hs[i].RecordValue(v); err != nil {
				t.Fatal(err)
			}
			_ = all.RecordValue(v)
		}
		for i, h := range hs {
			b, err := encodeHist(h)
			if err != nil {
				t.Fatal(err)
			}
			d, err := decodeHist(b)
			if err != nil {
				t.Fatal(err)
			}
			parts[i] = Part{Result: &measure.Record{Latency: d, Requests: d.TotalCount(), Duration: time.Second}}
		}
		m, err := Merge(parts, time.Unix(0, 0), time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m.Latency.TotalCount() != all.TotalCount() || m.Requests != int64(n) {
			t.Fatalf("trial %d: merged %d values (%d requests), want %d", trial, m.Latency.TotalCount(), m.Requests, n)
		}
		for _, q := range quantiles {
			if got, want := m.Latency.ValueAtQuantile(q), all.ValueAtQuantile(q); got != want {
				t.Errorf("trial %d (%d agents): p%g = %d, want %d", trial, agents, q, got, want)
			}
		}
		if m.Latency.Min() != all.Min() || m.Latency.Max() != all.Max() || m.Latency.Mean() != all.Mean() {
			t.Errorf("trial %d: min/max/mean %d/%d/%g, want %d/%d/%g", trial, m.Latency.Min(), m.Latency.Max(), m.Latency.Mean(), all.Min(), all.Max(), all.Mean())
		}
	}
}

func TestMergeRefusesOtherPrecision(t *testing.T) {
	a, b := hdrhistogram.New(1, 1000, 3), hdrhistogram.New(1, 1000, 2)
	_ = a.RecordValue(5)
	_ = b.RecordValue(5)
	_, err := Merge([]Part{{Result: &measure.Record{Latency: a}}, {Result: &measure.Record{Latency: b}}}, time.Time{}, time.Second, 0)
	if err == nil {
		t.Fatal("merging histograms of 3 and 2 significant digits succeeded")
	}
}

// TestMergeAlignsIntervals: an agent that started 10ms after the common
// instant has its intervals counted in the same one-second slots.
func TestMergeAlignsIntervals(t *testing.T) {
	mk := func(counts ...int64) *measure.Record {
		r := &measure.Record{Duration: time.Duration(len(counts)) * time.Second}
		for i, c := range counts {
			h := hdrhistogram.New(1, 1000, 2)
			_ = h.RecordValues(int64(10*(i+1)), c)
			r.Intervals = append(r.Intervals, measure.Interval{Start: time.Duration(i) * time.Second, Duration: time.Second, Requests: c, Latency: h})
			r.Requests += c
		}
		return r
	}
	m, err := Merge([]Part{{Result: mk(5, 7, 9)}, {Result: mk(1, 2, 3), Offset: 10 * time.Millisecond}}, time.Unix(0, 0), time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Intervals) != 3 {
		t.Fatalf("%d intervals, want 3", len(m.Intervals))
	}
	for i, want := range []int64{6, 9, 12} {
		iv := m.Intervals[i]
		if iv.Requests != want || iv.Latency.TotalCount() != want || iv.Start != time.Duration(i)*time.Second {
			t.Errorf("interval %d: start %s, %d requests, %d in its histogram; want %ds, %d", i, iv.Start, iv.Requests, iv.Latency.TotalCount(), i, want)
		}
	}
}

func TestMergeWarnsBelowRate(t *testing.T) {
	r := &measure.Record{Requests: 500, Duration: time.Second, ErrorsBy: map[string]int64{}}
	m, err := Merge([]Part{{Result: r}}, time.Time{}, time.Second, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if m.Warning == "" {
		t.Error("500 req/s against a 1000 req/s target gave no warning")
	}
}

// TestStreamLimitTravels: an agent's HTTP/2 stream limit crosses the wire,
// and the merged result keeps the smallest (the occupancy a capacity
// search judges by).
func TestStreamLimitTravels(t *testing.T) {
	var parts []Part
	for _, limit := range []int{32, 8} {
		res := &measure.Record{Latency: hdrhistogram.New(1, 1e6, 3), Requests: 1, Duration: time.Second,
			Protocol: measure.ProtoH2C, Streams: 32, StreamLimit: limit, Connections: 2}
		res.Latency.RecordValue(100)
		w, err := resultToWire(len(parts), res, 0)
		if err != nil {
			t.Fatal(err)
		}
		back, err := w.LoadResult()
		if err != nil {
			t.Fatal(err)
		}
		if back.StreamLimit != limit {
			t.Fatalf("stream limit %d after the wire, want %d", back.StreamLimit, limit)
		}
		parts = append(parts, Part{Result: back})
	}
	m, err := Merge(parts, time.Unix(0, 0), time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.StreamLimit != 8 || m.Connections != 4 {
		t.Errorf("merged stream limit %d over %d connections, want 8 over 4", m.StreamLimit, m.Connections)
	}
}

// TestUsed0RTTTravels: the HTTP/3 0-RTT setting and count cross the wire,
// and the merged result adds the agents' counts.
func TestUsed0RTTTravels(t *testing.T) {
	var parts []Part
	for _, used := range []int64{7, 5} {
		res := &measure.Record{Latency: hdrhistogram.New(1, 1e6, 3), Requests: 1, Duration: time.Second,
			Protocol: measure.ProtoH3, Streams: 1, StreamLimit: 1, Connections: 1, H3ZeroRTT: true, Used0RTT: used}
		res.Latency.RecordValue(100)
		w, err := resultToWire(len(parts), res, 0)
		if err != nil {
			t.Fatal(err)
		}
		back, err := w.LoadResult()
		if err != nil {
			t.Fatal(err)
		}
		if back.Used0RTT != used || !back.H3ZeroRTT {
			t.Fatalf("0-RTT %v, %d connections after the wire, want true and %d", back.H3ZeroRTT, back.Used0RTT, used)
		}
		parts = append(parts, Part{Result: back})
	}
	m, err := Merge(parts, time.Unix(0, 0), time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Used0RTT != 12 || !m.H3ZeroRTT {
		t.Errorf("merged: 0-RTT %v, %d connections; want true and 12", m.H3ZeroRTT, m.Used0RTT)
	}
	if o := roundTrip(t, load.Options{Protocol: measure.ProtoH3, H3ZeroRTT: true}); !o.H3ZeroRTT {
		t.Error("H3ZeroRTT lost on the options' wire")
	}
}

// roundTrip sends options to an agent and back as a StartRequest does.
func roundTrip(t *testing.T, o load.Options) load.Options {
	t.Helper()
	b, err := json.Marshal(StartRequest{Options: o})
	if err != nil {
		t.Fatal(err)
	}
	var req StartRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	return req.Options
}
