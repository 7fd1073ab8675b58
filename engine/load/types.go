package load

import (
	"time"
)

// Options describe one load (the flags of `benchflow load`, the attributes of
// a load or warm step). Zero values take the documented defaults (see
// Defaults). The JSON tags are the keys an option travels under to a
// remote agent (engine/agent's StartRequest); what cannot travel — the
// callbacks, the request scripts' Requester, a CA file read here — is
// tagged "-".
type Options struct {
	Targets     []Target      `json:"targets"`
	Connections int           `json:"connections"`           // -c
	Threads     int           `json:"threads"`               // -t
	Duration    time.Duration `json:"duration_ns,omitempty"` // -d; 0 with Requests > 0 means "until Requests"
	Requests    int64         `json:"requests,omitempty"`    // -n; 0 means unbounded (Duration applies)
	Rate        float64       `json:"rate,omitempty"`        // -R, requests/s in total; 0 = closed loop
	Timeout     time.Duration `json:"timeout_ns,omitempty"`  // per request, default 2s
	Close       bool          `json:"close,omitempty"`       // a new connection per request
	// BusyPoll, when > 0, makes each event loop poll for up to this long
	// before it sleeps in epoll_wait (--busy-poll). It spends client CPU
	// to spare the wake-ups of a sleeping client, which on one machine the
	// server under test pays for. HTTP/2 honours it (h2spin_linux.go);
	// HTTP/1.1 over TLS (the goroutine engine) ignores it.
	BusyPoll time.Duration `json:"busy_poll_ns,omitempty"`
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
	Nap time.Duration `json:"nap_ns,omitempty"`
	// Engine selects the load engine: "" (automatic, or the environment's
	// BENCHFLOW_LOAD_ENGINE), "uring", "epoll" or "goroutines"; see doc.go.
	Engine   string        `json:"engine,omitempty"`
	Interval time.Duration `json:"interval_ns,omitempty"` // timeseries interval, default 1s
	// Progress, when set, is called about once a second from a single
	// goroutine with the totals so far. It must not block.
	Progress func(Progress) `json:"-"`
	// Requester, when set, supplies requests instead of Targets (request
	// scripts). See the Requester interface.
	Requester Requester `json:"-"`
	// OnResponse, when set, is called with the status code of every
	// response, from the goroutine of its connection (so concurrently):
	// request scripts' response() hook. Its time is added to every
	// exchange; nil costs one comparison.
	OnResponse func(status int) `json:"-"`
	// Protocol is "" or "http/1.1" (HTTP/1.1), or "h2": HTTP/2, over TLS
	// negotiated by ALPN for https:// targets, cleartext with prior
	// knowledge (h2c) for http:// and unix: targets. See h2.go. "h3" is
	// HTTP/3 over QUIC, https:// targets only (h3.go).
	Protocol string `json:"protocol,omitempty"`
	// Streams is the number of concurrent HTTP/2 streams per connection
	// (default 1), bounded by the server's SETTINGS_MAX_CONCURRENT_STREAMS.
	Streams int `json:"streams,omitempty"`
	// CACert, when set, is a PEM file of CA certificates: https targets'
	// certificates are then verified against it (by default they are
	// not, as in wrk). SNI overrides the TLS server name (default: the
	// target's host). TLSResume lets new connections resume earlier TLS
	// sessions (abbreviated handshakes); off by default, so --close loads
	// measure full handshakes.
	CACert string `json:"-"`
	// CACertPEM, when set, holds the CA certificates themselves, read by
	// a front end that resolves files itself (a pipeline reads cacert
	// through its folder, so that the run keeps the file): they are used
	// instead of reading CACert, which then only names them in messages.
	CACertPEM []byte `json:"-"`
	SNI       string `json:"sni,omitempty"`
	TLSResume bool   `json:"tls_resume,omitempty"`
	// H3ZeroRTT (protocol h3) makes new QUIC connections resume a TLS
	// session from the load's session cache and send their first request
	// as 0-RTT early data (GET and HEAD only: other methods are not
	// replay-safe and wait for the handshake). Off by default; it matters
	// for new connections (Close, or reconnects), and Result.Used0RTT
	// counts the connections the server accepted early data on.
	H3ZeroRTT bool `json:"h3_0rtt,omitempty"`
	// Tag labels the result ("warm" or "load"); it is copied to
	// Result.Tag so warm-up results are never mistaken for measurements.
	Tag string `json:"tag,omitempty"`
	// Checks are response checks (check.go: "status==200", "size==4096",
	// "body contains TEXT", "header Content-Type ~ json"): a response
	// failing one is an error of class "check". Every protocol.
	Checks []string `json:"checks,omitempty"`
	// Stages ramp an open loop's rate (stages.go): each moves it linearly
	// to its Rate over its Duration, from Rate (0 when not set). Stages of
	// connections (Closed) ramp a closed loop's open connections instead,
	// from Connections (0 when not set). The load lasts their sum
	// (Duration 0, or equal to it).
	Stages []Stage `json:"stages,omitempty"`
	// OnStart, when set, is called once as the measured phase begins with
	// an Observer of the load's running totals (live metrics).
	OnStart func(*Observer) `json:"-"`
}

// Target is one request template; several targets are picked by weight.
type Target struct {
	URL     string      `json:"url"`              // http://, https:// or unix:/path.sock:/path
	Method  string      `json:"method,omitempty"` // default GET
	Headers [][2]string `json:"headers,omitempty"`
	Body    []byte      `json:"body,omitempty"`
	Weight  int         `json:"weight,omitempty"` // default 1
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
