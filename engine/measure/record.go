package measure

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Record is everything one load measured: what the load generator
// (engine/load) fills, what `benchflow load --json` prints (ToJSON), what an
// agent sends back (the JSON tags are the agent protocol's keys; the
// histograms, Started and Intervals travel in engine/agent's encoding) and
// what a trials row is made from (engine/results).
type Record struct {
	Started  time.Time     `json:"-"`
	Duration time.Duration `json:"duration_ns"` // wall time of the measured phase
	Requests int64         `json:"requests"`    // completed responses (any status)
	Errors   int64         `json:"errors"`      // every request that failed, any class, plus HTTP >= 400
	Bytes    int64         `json:"bytes"`       // bytes read (headers and bodies)

	// Elapsed is the wall time from the load's start until every
	// connection stopped (what wrk prints as "N requests in D"): Duration
	// and the time to stop; 0 when not measured (a merged record).
	Elapsed time.Duration `json:"elapsed_ns,omitempty"`

	// Latency is the latency histogram in microseconds. In open-loop mode it
	// is corrected (measured from the intended send time).
	Latency *hdrhistogram.Histogram `json:"-"`
	// Uncorrected is measured from the actual send; nil in closed loop
	// (where it equals Latency).
	Uncorrected *hdrhistogram.Histogram `json:"-"`
	// Connect holds connect times (µs) of new connections (2 significant
	// digits).
	Connect *hdrhistogram.Histogram `json:"-"`

	Status     map[int]int64    `json:"status,omitempty"`    // responses by status code
	ErrorsBy   map[string]int64 `json:"errors_by,omitempty"` // "connect", "timeout", "read", "write", "parse", "http"
	Intervals  []Interval       `json:"-"`
	TargetRate float64          `json:"target_rate,omitempty"` // load.Options.Rate
	// MaxRequests is load.Options.Requests and TimeLimit load.Options.Duration: what
	// bounded the load (the summary's header names them).
	MaxRequests int64         `json:"max_requests,omitempty"`
	TimeLimit   time.Duration `json:"time_limit_ns,omitempty"`
	MaxBehind   time.Duration `json:"max_behind_ns,omitempty"` // how far behind schedule the latest send was
	Warning     string        `json:"warning,omitempty"`       // e.g. "achieved 812 req/s, below 95% of -R 1000"
	Connections int           `json:"connections"`
	Threads     int           `json:"threads"`

	// Tag is load.Options.Tag ("warm" or "load").
	Tag string `json:"-"`
	// Targets are the URLs the load was sent to.
	Targets []string `json:"targets,omitempty"`
	// Close reports a new connection per request (--close).
	Close bool `json:"close,omitempty"`
	// H3ZeroRTT reports that HTTP/3 connections offered 0-RTT early data
	// (--h3-0rtt); Used0RTT counts those the server accepted it on.
	H3ZeroRTT bool `json:"h3_0rtt,omitempty"`
	// ErrorSample holds the first error message seen per class of ErrorsBy
	// (no entry for "http").
	ErrorSample map[string]string `json:"error_sample,omitempty"`
	// MeanBehind is the mean delay of sends behind their intended time
	// (open loop); LateSends counts sends more than 1 ms late.
	MeanBehind time.Duration `json:"mean_behind_ns,omitempty"`
	LateSends  int64         `json:"late_sends,omitempty"`
	// Intended counts the sends an open loop with a duration intended
	// before its end (its schedule, rate × duration, capped at
	// MaxRequests); each has an outcome (Requests, Errors), or was sent
	// and had none at the end (Unfinished), or was never sent because its
	// connection was still busy (Missed). All three 0 in closed loop.
	Intended   int64 `json:"intended,omitempty"`
	Missed     int64 `json:"missed,omitempty"`
	Unfinished int64 `json:"unfinished,omitempty"`
	// Thresholds are the outcomes of `load --threshold`, judged on the
	// finished result (JudgeThresholds); nil without thresholds.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
	// Reconnects counts connections re-established in keep-alive mode
	// (the server closed the previous one, or it failed).
	Reconnects int64 `json:"reconnects,omitempty"`
	// Engine is the load engine that ran: "uring", "epoll" or
	// "goroutines" (see load.Options.Engine).
	Engine string `json:"engine,omitempty"`
	// Protocol is the protocol spoken: "http/1.1", "h2" (HTTP/2 over
	// TLS) or "h2c" (cleartext HTTP/2); Streams the concurrent streams
	// per connection asked for (1 for HTTP/1.1).
	Protocol string `json:"protocol,omitempty"`
	Streams  int    `json:"streams,omitempty"`
	// MaxInFlight is the most HTTP/2 streams seen in flight at once on
	// one connection (at most Streams and the server's limit); 0 for
	// HTTP/1.1.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// StreamLimit is the number of concurrent streams per connection the
	// load could use: Streams, lowered to the smallest
	// SETTINGS_MAX_CONCURRENT_STREAMS the server announced (1 for
	// HTTP/1.1). Connections × StreamLimit requests can be in flight at
	// once; a capacity search judges the generator's occupancy by it.
	StreamLimit int `json:"stream_limit,omitempty"`
	// Goaways counts HTTP/2 GOAWAY frames received. After a graceful one
	// (NO_ERROR, e.g. nginx's keepalive_requests) the streams the server
	// did not process are sent again on a new connection, not counted as
	// errors; after any other, they count as "goaway" errors.
	Goaways int64 `json:"goaways,omitempty"`
	// Used0RTT counts the HTTP/3 connections whose server accepted 0-RTT
	// early data (load.Options.H3ZeroRTT; quic-go's
	// ConnectionState().Used0RTT). Of Connect.TotalCount() connections,
	// the others made a full or resumed 1-RTT handshake.
	Used0RTT int64 `json:"used_0rtt,omitempty"`
	// UDPRecvBuf and UDPSendBuf are the receive and send buffer sizes of
	// an HTTP/3 connection's UDP socket once quic-go sized them, as the
	// kernel reports them (getsockopt SO_RCVBUF and SO_SNDBUF: twice what
	// was set), and UDPGSO whether quic-go sends on it with GSO
	// (UDP_SEGMENT); read from the load's first connection. quic-go asks
	// for 7 MiB (UDPWantBuffer). Over agents, the smallest buffers and GSO
	// only if every agent had it.
	UDPRecvBuf int64 `json:"udp_rcvbuf_bytes,omitempty"`
	UDPSendBuf int64 `json:"udp_sndbuf_bytes,omitempty"`
	UDPGSO     bool  `json:"udp_gso,omitempty"`
	// Naps counts the naps taken (load.Options.Nap) and NapTime sums how long
	// they lasted: the timer's cost (tens of microseconds in a virtual
	// machine) makes each longer than asked. A response that arrived
	// during a nap was read up to one nap late, so NapMean bounds what
	// napping adds to a latency on average.
	Naps    int64         `json:"naps,omitempty"`
	NapTime time.Duration `json:"nap_time_ns,omitempty"`
	// TLSVersion, TLSCipher and ALPN describe the first TLS handshake
	// ("TLS 1.3", "TLS_AES_128_GCM_SHA256", "h2"); empty without TLS.
	// LoaderCPU is the CPU time (user + system) the loading process used
	// over the measured phase (getrusage RUSAGE_SELF): the generator's own
	// when it runs alone, as `benchflow load` and agents do; inside
	// `benchflow apply` it includes the run's other work (the whole-machine
	// accounting's cpu_loader_pct is the figure to use there). Summed over
	// agents.
	LoaderCPU  time.Duration `json:"loader_cpu_ns,omitempty"`
	TLSVersion string        `json:"tls_version,omitempty"`
	TLSCipher  string        `json:"tls_cipher,omitempty"`
	ALPN       string        `json:"alpn,omitempty"`
}

// Interval is one timeseries row.
type Interval struct {
	Start    time.Duration // offset from Record.Started
	Requests int64
	Errors   int64
	Bytes    int64
	Latency  *hdrhistogram.Histogram
	// Duration is the interval's length: load.Options.Interval, except for the
	// last one, which ends with the load.
	Duration time.Duration
}

// RPS is requests per second over the measured phase.
func (r *Record) RPS() float64 {
	if r == nil || r.Duration <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Duration.Seconds()
}

// UDPWantBuffer is the UDP buffer size quic-go asks for (its
// desiredBufferSize), to compare with UDPRecvBuf and UDPSendBuf as quic-go
// compares it.
const UDPWantBuffer = 7 << 20

// UDPBuffersShort reports whether an HTTP/3 load's UDP buffers came out
// below what quic-go asks for (false when they were not read).
func (r *Record) UDPBuffersShort() bool {
	return (r.UDPRecvBuf > 0 && r.UDPRecvBuf < UDPWantBuffer) || (r.UDPSendBuf > 0 && r.UDPSendBuf < UDPWantBuffer)
}

// minKnown is the smaller of two sizes, 0 meaning unknown.
func minKnown(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// CPUPerRequest is LoaderCPU per completed response (0 without either).
func (r *Record) CPUPerRequest() time.Duration {
	if r.LoaderCPU <= 0 || r.Requests <= 0 {
		return 0
	}
	return r.LoaderCPU / time.Duration(r.Requests)
}

// NapMean is how long a nap lasted on average (0 without naps).
func (r *Record) NapMean() time.Duration {
	if r.Naps == 0 {
		return 0
	}
	return r.NapTime / time.Duration(r.Naps)
}

// Achieved reports whether an open-loop load held its target rate (at least
// 95% of it); closed loops always do.
func (r *Record) Achieved() bool { return r == nil || r.Warning == "" }

// MissedWarning is what a load that missed intended sends says in its
// verdict (Record.Warning), or "" when it missed none.
func (r *Record) MissedWarning() string {
	if r == nil || r.Missed <= 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d intended sends were never sent (missed): the connections were still busy with earlier requests; more connections (-c) or a lower rate (-R) keep to the schedule",
		r.Missed, r.Intended)
}

// JoinWarnings joins the non-empty warnings with "; ".
func JoinWarnings(ws ...string) string {
	var out []string
	for _, w := range ws {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, "; ")
}

// AddCounts adds o's counters to r: requests, errors, bytes, reconnects,
// HTTP/2 GOAWAYs, HTTP/3 0-RTT connections, naps and their time, late sends, the status and
// error-class counts, and the error samples r lacks (r's own first sample
// of a class wins). Histograms, durations
// and intervals are left to the caller, whose time semantics differ
// (windows one after another, or agents side by side).
func (r *Record) AddCounts(o *Record) {
	r.Requests += o.Requests
	r.Errors += o.Errors
	r.Bytes += o.Bytes
	r.Reconnects += o.Reconnects
	r.Goaways += o.Goaways
	r.Used0RTT += o.Used0RTT
	switch {
	case r.UDPRecvBuf == 0 && r.UDPSendBuf == 0:
		r.UDPGSO = o.UDPGSO
	case o.UDPRecvBuf != 0 || o.UDPSendBuf != 0:
		r.UDPGSO = r.UDPGSO && o.UDPGSO
	}
	r.UDPRecvBuf = minKnown(r.UDPRecvBuf, o.UDPRecvBuf)
	r.UDPSendBuf = minKnown(r.UDPSendBuf, o.UDPSendBuf)
	r.Naps += o.Naps
	r.NapTime += o.NapTime
	r.LoaderCPU += o.LoaderCPU
	r.LateSends += o.LateSends
	r.Intended += o.Intended
	r.Missed += o.Missed
	r.Unfinished += o.Unfinished
	if r.Status == nil {
		r.Status = map[int]int64{}
	}
	for k, v := range o.Status {
		r.Status[k] += v
	}
	if r.ErrorsBy == nil {
		r.ErrorsBy = map[string]int64{}
	}
	for k, v := range o.ErrorsBy {
		r.ErrorsBy[k] += v
	}
	for k, v := range o.ErrorSample {
		if _, ok := r.ErrorSample[k]; !ok {
			if r.ErrorSample == nil {
				r.ErrorSample = map[string]string{}
			}
			r.ErrorSample[k] = v
		}
	}
}

// ErrorSummary describes the errors in one line, most frequent class first,
// with the first message seen for each class.
func (r *Record) ErrorSummary() string {
	type kv struct {
		k string
		n int64
	}
	var all []kv
	for k, n := range r.ErrorsBy {
		if n > 0 {
			all = append(all, kv{k, n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].k < all[j].k
	})
	var parts []string
	for _, e := range all {
		s := fmt.Sprintf("%s %d", e.k, e.n)
		if msg := r.ErrorSample[e.k]; msg != "" {
			s += " (" + msg + ")"
		} else if e.k == "http" {
			s += " (status >= 400)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no errors"
	}
	return strings.Join(parts, "; ")
}
