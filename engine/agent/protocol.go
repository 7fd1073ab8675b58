package agent

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
)

// ProtocolVersion is the version of the agent protocol. A controller
// refuses an agent that speaks another one.
const ProtocolVersion = 1

// The protocol's endpoints (HTTP, JSON bodies).
const (
	pathHello  = "/v1/hello"  // GET: Hello
	pathClock  = "/v1/clock"  // GET: Clock
	pathStart  = "/v1/start"  // POST StartRequest: StartReply
	pathResult = "/v1/result" // GET: Result, once the load has ended
	pathStop   = "/v1/stop"   // POST: cancel the load and exit
	// pathProgress answers the running load's totals so far (zero before
	// its start); an agent without it (404) simply shows no progress.
	pathProgress = "/v1/progress" // GET: Progress
)

// Progress is a running load's totals, about once a second.
type Progress struct {
	Started   bool    `json:"started"`
	ElapsedNS int64   `json:"elapsed_ns"`
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	RPS       float64 `json:"rps"` // over the agent's last interval
}

// Hello is an agent's answer to a controller's first request.
type Hello struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	Host     string `json:"host"`
	PID      int    `json:"pid"`
	Index    int    `json:"index"`
	Cores    int    `json:"cores"`
	// ClockNS is the agent's wall clock (Unix ns) when it answered.
	ClockNS int64 `json:"clock_ns"`
}

// Clock is an agent's answer to a clock probe: its wall clock (Unix ns).
type Clock struct {
	ClockNS int64 `json:"clock_ns"`
}

// StartRequest asks an agent to run its share of a load from StartNS, an
// instant of the agent's own clock (the controller corrected it by the
// offset it measured).
type StartRequest struct {
	Index int `json:"index"`
	// Options are the load.Options the agent runs: everything but what
	// their JSON tags leave out (the callbacks, request scripts and a CA
	// file), which a controller refuses for agents before it sends them.
	Options load.Options `json:"options"`
	StartNS int64        `json:"start_ns"`
	// Tolerance is how late the agent may begin before it reports itself
	// late (the result then fails the trial).
	ToleranceNS int64 `json:"tolerance_ns"`
}

// StartReply acknowledges a StartRequest.
type StartReply struct {
	// WaitNS is how long the agent will wait before it starts (negative:
	// the start instant had passed when the command arrived).
	WaitNS int64 `json:"wait_ns"`
}

// WireInterval is a measure.Interval on the wire.
type WireInterval struct {
	StartNS    int64  `json:"start_ns"`
	DurationNS int64  `json:"duration_ns"`
	Requests   int64  `json:"requests"`
	Errors     int64  `json:"errors"`
	Bytes      int64  `json:"bytes"`
	Latency    []byte `json:"latency,omitempty"`
}

// Result is what an agent measured: the load's record, whose JSON tags
// are the protocol's keys (measure.Record), and what travels apart from it.
// Histograms are sparse snapshots (sparse.go: HdrHistogram's geometry and
// non-zero counts, lossless).
type Result struct {
	Index int `json:"index"`
	// Error is set when the load could not run or measured nothing.
	Error string `json:"error,omitempty"`
	// StartedNS is when the load began, in the agent's clock; LateNS is
	// how much later than the start instant that was.
	StartedNS int64 `json:"started_ns"`
	LateNS    int64 `json:"late_ns"`
	measure.Record
	// The record's histograms and intervals, encoded (they shadow the
	// record's own fields, which do not travel).
	Latency     []byte         `json:"latency,omitempty"`
	Uncorrected []byte         `json:"uncorrected,omitempty"`
	Connect     []byte         `json:"connect,omitempty"`
	Intervals   []WireInterval `json:"intervals,omitempty"`
	// CPU the agent process used during the load (getrusage), in ns.
	CPUUserNS int64 `json:"cpu_user_ns"`
	CPUSysNS  int64 `json:"cpu_sys_ns"`
}

// encodeHist encodes h losslessly as a sparse snapshot (nil for nil).
func encodeHist(h *hdrhistogram.Histogram) ([]byte, error) { return encodeSparse(h), nil }

// decodeHist decodes what encodeHist made (nil for empty).
func decodeHist(b []byte) (*hdrhistogram.Histogram, error) { return histOf(b) }

// resultToWire converts a load result (clock is the agent's clock shift:
// Started is reported in the agent's clock).
func resultToWire(index int, res *measure.Record, shift time.Duration) (*Result, error) {
	w := &Result{Index: index, StartedNS: res.Started.Add(shift).UnixNano(), Record: *res}
	w.Record.Started, w.Record.Tag = time.Time{}, ""
	w.Record.Latency, w.Record.Uncorrected, w.Record.Connect, w.Record.Intervals = nil, nil, nil, nil
	var err error
	if w.Latency, err = encodeHist(res.Latency); err != nil {
		return nil, fmt.Errorf("encoding the latency histogram: %w", err)
	}
	if w.Uncorrected, err = encodeHist(res.Uncorrected); err != nil {
		return nil, fmt.Errorf("encoding the uncorrected histogram: %w", err)
	}
	if w.Connect, err = encodeHist(res.Connect); err != nil {
		return nil, fmt.Errorf("encoding the connect histogram: %w", err)
	}
	for _, iv := range res.Intervals {
		wi := WireInterval{StartNS: int64(iv.Start), DurationNS: int64(iv.Duration), Requests: iv.Requests, Errors: iv.Errors, Bytes: iv.Bytes}
		if wi.Latency, err = encodeHist(iv.Latency); err != nil {
			return nil, fmt.Errorf("encoding an interval histogram: %w", err)
		}
		w.Intervals = append(w.Intervals, wi)
	}
	return w, nil
}

// LoadResult decodes the agent's result; Started is in the agent's clock
// (the controller corrects it).
func (w *Result) LoadResult() (*measure.Record, error) {
	res, _, err := w.decode(true)
	return res, err
}

// decode is LoadResult; with intervals false the interval histograms are
// not built but returned as sparse snapshots, parallel to Intervals, for
// Merge.
func (w *Result) decode(intervals bool) (*measure.Record, []*sparse, error) {
	rec := w.Record
	res := &rec
	res.Started = time.Unix(0, w.StartedNS).UTC()
	res.Latency, res.Uncorrected, res.Connect, res.Intervals = nil, nil, nil, nil
	if res.Status == nil {
		res.Status = map[int]int64{}
	}
	if res.ErrorsBy == nil {
		res.ErrorsBy = map[string]int64{}
	}
	if res.ErrorSample == nil {
		res.ErrorSample = map[string]string{}
	}
	var err error
	if res.Latency, err = decodeHist(w.Latency); err != nil {
		return nil, nil, fmt.Errorf("decoding the latency histogram: %w", err)
	}
	if res.Uncorrected, err = decodeHist(w.Uncorrected); err != nil {
		return nil, nil, fmt.Errorf("decoding the uncorrected histogram: %w", err)
	}
	if res.Connect, err = decodeHist(w.Connect); err != nil {
		return nil, nil, fmt.Errorf("decoding the connect histogram: %w", err)
	}
	var ivs []*sparse
	if !intervals {
		ivs = make([]*sparse, len(w.Intervals))
	}
	var last int64 = -1
	for i, wi := range w.Intervals {
		if wi.StartNS < last {
			return nil, nil, fmt.Errorf("interval %d starts before the one before it", i+1)
		}
		last = wi.StartNS
		iv := measure.Interval{Start: time.Duration(wi.StartNS), Duration: time.Duration(wi.DurationNS), Requests: wi.Requests, Errors: wi.Errors, Bytes: wi.Bytes}
		if intervals {
			iv.Latency, err = decodeHist(wi.Latency)
		} else {
			ivs[i], err = decodeSparse(wi.Latency)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decoding interval %d's histogram: %w", i+1, err)
		}
		res.Intervals = append(res.Intervals, iv)
	}
	return res, ivs, nil
}
