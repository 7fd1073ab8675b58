package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Options describe one load (the flags of `benchflow load`, the attributes of
// a load or warm step). Zero values take the documented defaults (see
// Defaults).
type Options struct {
	Targets     []Target
	Connections int           // -c
	Threads     int           // -t
	Duration    time.Duration // -d; 0 with Requests > 0 means "until Requests"
	Requests    int64         // -n; 0 means unbounded (Duration applies)
	Rate        float64       // -R, requests/s in total; 0 = closed loop
	Timeout     time.Duration // per request, default 2s
	Close       bool          // a new connection per request
	// BusyPoll, when > 0, makes each event loop poll for up to this long
	// before it sleeps in epoll_wait (--busy-poll). It spends client CPU
	// to spare the wake-ups of a sleeping client, which on one machine the
	// server under test pays for. HTTP/2 honours it (h2spin_linux.go);
	// HTTP/1.1 over TLS (the goroutine engine) ignores it.
	BusyPoll time.Duration
	// Nap, when > 0, makes an HTTP/2 connection that finds nothing to
	// read (after BusyPoll, if any) sleep this long once, by nanosleep,
	// and look again before it waits to be woken (--nap). A client that
	// sleeps by the clock rather than on its sockets is not woken by the
	// server's writes, which on one machine the server pays for, and
	// spends no CPU while it sleeps; a response that arrives during the
	// nap is read up to one nap late (Result.NapTime shows how long they
	// lasted). Closed loop with Streams of 2 or more, on Linux: in open
	// loop the nap would delay the scheduled sends, and with one stream
	// per connection the server runs out of work while the client naps
	// (h2spin_linux.go).
	Nap time.Duration
	// Engine selects the load engine: "" (automatic, or the environment's
	// BENCHFLOW_LOAD_ENGINE), "uring", "epoll" or "goroutines"; see doc.go.
	Engine   string
	Interval time.Duration // timeseries interval, default 1s
	// Progress, when set, is called about once a second from a single
	// goroutine with the totals so far. It must not block.
	Progress func(Progress)
	// Requester, when set, supplies requests instead of Targets (request
	// scripts). See the Requester interface.
	Requester Requester
	// OnResponse, when set, is called with the status code of every
	// response, from the goroutine of its connection (so concurrently):
	// request scripts' response() hook. Its time is added to every
	// exchange; nil costs one comparison.
	OnResponse func(status int)
	// Protocol is "" or "http/1.1" (HTTP/1.1), or "h2": HTTP/2, over TLS
	// negotiated by ALPN for https:// targets, cleartext with prior
	// knowledge (h2c) for http:// and unix: targets. See h2.go. "h3" is
	// HTTP/3 over QUIC, https:// targets only (h3.go).
	Protocol string
	// Streams is the number of concurrent HTTP/2 streams per connection
	// (default 1), bounded by the server's SETTINGS_MAX_CONCURRENT_STREAMS.
	Streams int
	// CACert, when set, is a PEM file of CA certificates: https targets'
	// certificates are then verified against it (by default they are
	// not, as in wrk). SNI overrides the TLS server name (default: the
	// target's host). TLSResume lets new connections resume earlier TLS
	// sessions (abbreviated handshakes); off by default, so --close loads
	// measure full handshakes.
	CACert string
	// CACertPEM, when set, holds the CA certificates themselves, read by
	// a front end that resolves files itself (a pipeline reads cacert
	// through its folder, so that the run keeps the file): they are used
	// instead of reading CACert, which then only names them in messages.
	CACertPEM []byte
	SNI       string
	TLSResume bool
	// H3ZeroRTT (protocol h3) makes new QUIC connections resume a TLS
	// session from the load's session cache and send their first request
	// as 0-RTT early data (GET and HEAD only: other methods are not
	// replay-safe and wait for the handshake). Off by default; it matters
	// for new connections (Close, or reconnects), and Result.Used0RTT
	// counts the connections the server accepted early data on.
	H3ZeroRTT bool
	// Tag labels the result ("warm" or "load"); it is copied to
	// Result.Tag so warm-up results are never mistaken for measurements.
	Tag string
}

// Target is one request template; several targets are picked by weight.
type Target struct {
	URL     string // http://, https:// or unix:/path.sock:/path
	Method  string // default GET
	Headers [][2]string
	Body    []byte
	Weight  int // default 1
}

// Progress is a running total for live status lines.
type Progress struct {
	Elapsed  time.Duration
	Requests int64
	Errors   int64
	RPS      float64 // over the last interval
}

// Requester supplies prebuilt requests (e.g. from a Starlark script). Pool is
// called once before the load starts; the generator cycles over the result.
type Requester interface {
	Pool() ([]Target, error)
}

// Result is everything measured by one load.
type Result struct {
	Started  time.Time
	Duration time.Duration // wall time of the measured phase
	Requests int64         // completed responses (any status)
	Errors   int64         // every request that failed, any class, plus HTTP >= 400
	Bytes    int64         // bytes read (headers and bodies)

	// Latency is the latency histogram in microseconds. In open-loop mode it
	// is corrected (measured from the intended send time).
	Latency *hdrhistogram.Histogram
	// Uncorrected is measured from the actual send; nil in closed loop
	// (where it equals Latency).
	Uncorrected *hdrhistogram.Histogram
	// Connect holds connect times (µs) of new connections (2 significant
	// digits).
	Connect *hdrhistogram.Histogram

	Status     map[int]int64    // responses by status code
	ErrorsBy   map[string]int64 // "connect", "timeout", "read", "write", "parse", "http"
	Intervals  []Interval
	TargetRate float64 // Options.Rate
	// MaxRequests is Options.Requests and TimeLimit Options.Duration: what
	// bounded the load (the summary's header names them).
	MaxRequests int64
	TimeLimit   time.Duration
	MaxBehind   time.Duration // how far behind schedule the latest send was
	Warning     string        // e.g. "achieved 812 req/s, below 95% of -R 1000"
	Connections int
	Threads     int

	// Tag is Options.Tag ("warm" or "load").
	Tag string
	// Targets are the URLs the load was sent to.
	Targets []string
	// Close reports a new connection per request (--close).
	Close bool
	// H3ZeroRTT reports that HTTP/3 connections offered 0-RTT early data
	// (--h3-0rtt); Used0RTT counts those the server accepted it on.
	H3ZeroRTT bool
	// ErrorSample holds the first error message seen per class of ErrorsBy
	// (no entry for "http").
	ErrorSample map[string]string
	// MeanBehind is the mean delay of sends behind their intended time
	// (open loop); LateSends counts sends more than 1 ms late.
	MeanBehind time.Duration
	LateSends  int64
	// Reconnects counts connections re-established in keep-alive mode
	// (the server closed the previous one, or it failed).
	Reconnects int64
	// Engine is the load engine that ran: "uring", "epoll" or
	// "goroutines" (see Options.Engine).
	Engine string
	// Protocol is the protocol spoken: "http/1.1", "h2" (HTTP/2 over
	// TLS) or "h2c" (cleartext HTTP/2); Streams the concurrent streams
	// per connection asked for (1 for HTTP/1.1).
	Protocol string
	Streams  int
	// MaxInFlight is the most HTTP/2 streams seen in flight at once on
	// one connection (at most Streams and the server's limit); 0 for
	// HTTP/1.1.
	MaxInFlight int
	// StreamLimit is the number of concurrent streams per connection the
	// load could use: Streams, lowered to the smallest
	// SETTINGS_MAX_CONCURRENT_STREAMS the server announced (1 for
	// HTTP/1.1). Connections × StreamLimit requests can be in flight at
	// once; a capacity search judges the generator's occupancy by it.
	StreamLimit int
	// Goaways counts HTTP/2 GOAWAY frames received. After a graceful one
	// (NO_ERROR, e.g. nginx's keepalive_requests) the streams the server
	// did not process are sent again on a new connection, not counted as
	// errors; after any other, they count as "goaway" errors.
	Goaways int64
	// Used0RTT counts the HTTP/3 connections whose server accepted 0-RTT
	// early data (Options.H3ZeroRTT; quic-go's
	// ConnectionState().Used0RTT). Of Connect.TotalCount() connections,
	// the others made a full or resumed 1-RTT handshake.
	Used0RTT int64
	// Naps counts the naps taken (Options.Nap) and NapTime sums how long
	// they lasted: the timer's cost (tens of microseconds in a virtual
	// machine) makes each longer than asked. A response that arrived
	// during a nap was read up to one nap late, so NapMean bounds what
	// napping adds to a latency on average.
	Naps    int64
	NapTime time.Duration
	// TLSVersion, TLSCipher and ALPN describe the first TLS handshake
	// ("TLS 1.3", "TLS_AES_128_GCM_SHA256", "h2"); empty without TLS.
	TLSVersion string
	TLSCipher  string
	ALPN       string
}

// Interval is one timeseries row.
type Interval struct {
	Start    time.Duration // offset from Result.Started
	Requests int64
	Errors   int64
	Bytes    int64
	Latency  *hdrhistogram.Histogram
	// Duration is the interval's length: Options.Interval, except for the
	// last one, which ends with the load.
	Duration time.Duration
}

// RPS is requests per second over the measured phase.
func (r *Result) RPS() float64 {
	if r == nil || r.Duration <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Duration.Seconds()
}

// NapMean is how long a nap lasted on average (0 without naps).
func (r *Result) NapMean() time.Duration {
	if r.Naps == 0 {
		return 0
	}
	return r.NapTime / time.Duration(r.Naps)
}

// Achieved reports whether an open-loop load held its target rate (at least
// 95% of it); closed loops always do.
func (r *Result) Achieved() bool { return r == nil || r.Warning == "" }

// AddCounts adds o's counters to r: requests, errors, bytes, reconnects,
// HTTP/2 GOAWAYs, HTTP/3 0-RTT connections, naps and their time, late sends, the status and
// error-class counts, and the error samples r lacks (r's own first sample
// of a class wins). Histograms, durations
// and intervals are left to the caller, whose time semantics differ
// (windows one after another, or agents side by side).
func (r *Result) AddCounts(o *Result) {
	r.Requests += o.Requests
	r.Errors += o.Errors
	r.Bytes += o.Bytes
	r.Reconnects += o.Reconnects
	r.Goaways += o.Goaways
	r.Used0RTT += o.Used0RTT
	r.Naps += o.Naps
	r.NapTime += o.NapTime
	r.LateSends += o.LateSends
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
