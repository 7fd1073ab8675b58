package agent

import (
	"fmt"
	"math"
	"time"

	"github.com/benchflow/benchflow/engine/measure"
)

// Part is one agent's result for Merge.
type Part struct {
	Result *measure.Record
	// Offset is when this agent's load started relative to the common
	// start instant, in the controller's clock (corrected by the measured
	// offset): its intervals are shifted by it before they are aligned.
	Offset time.Duration
	// intervals, when set, are the intervals' histograms as decoded
	// sparse snapshots (Result.Intervals[i].Latency is then nil): the
	// controller merges them without building one histogram per agent
	// and interval.
	intervals []*sparse
}

// Merge combines the agents' results into one. Histograms are added
// bucket by bucket (HdrHistogram's Merge; every agent records with the
// same lowest value and precision, so the buckets coincide and the merged
// percentiles are exactly those of one histogram of all requests);
// counters and counts by status and error class are summed. Interval k of
// the merged timeseries holds every agent's interval that starts, on the
// common clock, nearest k × interval after start. started is the common
// start instant; rate the whole load's open-loop rate (0: closed loop).
func Merge(parts []Part, started time.Time, interval time.Duration, rate float64) (*measure.Record, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("merging: no agent results")
	}
	if interval <= 0 {
		interval = time.Second
	}
	m := &measure.Record{
		Started: started, Status: map[int]int64{}, ErrorsBy: map[string]int64{}, ErrorSample: map[string]string{},
		TargetRate: rate,
	}
	var lat, unc, con []*sparse
	var sumBehind float64
	var sends int64
	type slot struct {
		iv    measure.Interval
		hists []*sparse
	}
	var slots []slot
	for i, p := range parts {
		r := p.Result
		if r == nil {
			return nil, fmt.Errorf("merging: agent %d has no result", i+1)
		}
		m.AddCounts(r)
		m.Duration = max(m.Duration, r.Duration+max(p.Offset, 0))
		m.MaxRequests += r.MaxRequests
		m.TimeLimit = max(m.TimeLimit, r.TimeLimit)
		m.MaxBehind = max(m.MaxBehind, r.MaxBehind)
		sumBehind += float64(r.MeanBehind) * float64(r.Requests)
		sends += r.Requests
		m.Connections += r.Connections
		m.Threads += r.Threads
		m.Close = m.Close || r.Close
		m.H3ZeroRTT = m.H3ZeroRTT || r.H3ZeroRTT
		if m.Tag == "" {
			m.Tag = r.Tag
		}
		if len(m.Targets) == 0 {
			m.Targets = r.Targets
		}
		m.MaxInFlight = max(m.MaxInFlight, r.MaxInFlight)
		if r.StreamLimit > 0 && (m.StreamLimit == 0 || r.StreamLimit < m.StreamLimit) {
			m.StreamLimit = r.StreamLimit
		}
		if m.Protocol == "" {
			m.Protocol, m.Streams = r.Protocol, r.Streams
			m.TLSVersion, m.TLSCipher, m.ALPN = r.TLSVersion, r.TLSCipher, r.ALPN
		}
		// The engine that ran: the agents', or "mixed" when they differ.
		switch {
		case m.Engine == "":
			m.Engine = r.Engine
		case r.Engine != "" && r.Engine != m.Engine:
			m.Engine = "mixed"
		}
		lat = append(lat, sparseOf(r.Latency))
		unc = append(unc, sparseOf(r.Uncorrected))
		con = append(con, sparseOf(r.Connect))
		for j, iv := range r.Intervals {
			k := int(math.Round(float64(p.Offset+iv.Start) / float64(interval)))
			k = max(k, 0)
			for len(slots) <= k {
				slots = append(slots, slot{iv: measure.Interval{Start: time.Duration(len(slots)) * interval}})
			}
			s := &slots[k]
			s.iv.Requests += iv.Requests
			s.iv.Errors += iv.Errors
			s.iv.Bytes += iv.Bytes
			s.iv.Duration = max(s.iv.Duration, iv.Duration)
			switch {
			case p.intervals != nil && j < len(p.intervals):
				s.hists = append(s.hists, p.intervals[j])
			case iv.Latency != nil:
				s.hists = append(s.hists, sparseOf(iv.Latency))
			}
		}
	}
	var err error
	if m.Latency, err = mergeSparse(lat); err != nil {
		return nil, fmt.Errorf("merging latency histograms: %w", err)
	}
	if m.Uncorrected, err = mergeSparse(unc); err != nil {
		return nil, fmt.Errorf("merging uncorrected histograms: %w", err)
	}
	if m.Connect, err = mergeSparse(con); err != nil {
		return nil, fmt.Errorf("merging connect histograms: %w", err)
	}
	for k := range slots {
		s := &slots[k]
		if s.iv.Latency, err = mergeSparse(s.hists); err != nil {
			return nil, fmt.Errorf("merging interval %d: %w", k, err)
		}
		if s.iv.Duration == 0 {
			s.iv.Duration = interval
		}
		m.Intervals = append(m.Intervals, s.iv)
	}
	if sends > 0 {
		m.MeanBehind = time.Duration(sumBehind / float64(sends))
	}
	if rate > 0 && m.Duration > 0 {
		achieved := float64(m.Requests+m.Errors-m.ErrorsBy["http"]) / m.Duration.Seconds()
		if achieved < 0.95*rate {
			m.Warning = fmt.Sprintf("achieved %.0f req/s, below 95%% of the target rate -R %g (sends were up to %s behind schedule)",
				achieved, rate, m.MaxBehind.Round(time.Microsecond))
		}
		m.Warning = measure.JoinWarnings(m.Warning, m.MissedWarning())
	}
	return m, nil
}
