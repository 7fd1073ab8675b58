package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchflow/benchflow/engine/clock"

	"github.com/benchflow/benchflow/engine/measure"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Error classes, in the order they are reported.
const (
	classConnect = iota
	classTimeout
	classRead
	classWrite
	classParse
	classHTTP
	classReset  // HTTP/2 RST_STREAM or HTTP/3 RESET_STREAM from the server
	classGoaway // HTTP/2 streams refused by GOAWAY
	classCheck  // a response that failed a check (Options.Checks, check.go)
	numClasses
)

// ErrorClasses are the keys of Result.ErrorsBy, in report order: the
// names of the classes above.
var ErrorClasses = measure.ErrorClasses

// maxStatus bounds the status codes counted per code; others (600-999)
// are counted under 599.
const maxStatus = 600

// conn is one connection slot: a goroutine that sends a request, reads the
// response and records it, forever (closed loop) or on a schedule (open
// loop). Everything it records lives in the slot and is read by the
// interval collector under mu, which only the slot and the collector take,
// so it is never contended per request.
type conn struct {
	r  *runner
	id int
	// h2wire is the socket of the slot's HTTP/2 session, while one runs
	// (read by other slots' busy polls: h2spin_linux.go).
	h2wire atomic.Pointer[h2Wire]
	// h3sock closes the UDP socket (and its quic.Transport) of the slot's
	// QUIC connection, one at a time (h3udp.go: h3Hangup).
	h3sock func()
	// naps and napTime count the slot's naps and their length in
	// nanoseconds (Options.Nap, h2spin_linux.go).
	naps, napTime atomic.Int64

	ncs []net.Conn // one per endpoint, nil until dialed
	// dialed[e] is set once the slot connected to endpoint e; later
	// connections to it are reconnects.
	dialed []bool
	cur    int // endpoint the reader is attached to, -1 for none
	rd     *reader
	rng    uint64
	quota  int64 // requests left from the last claim (-n)

	// Open loop: intended send times as offsets from runner.start.
	period time.Duration
	next   time.Duration
	// first is the slot's first intended send (its stagger): with next
	// it tells how many of the schedule's sends the slot took (missed.go).
	first time.Duration
	// ramp is the schedule of a load with stages (stages.go; nil without
	// any) and k the sends the slot took from it.
	ramp *ramp
	k    int64
	// sleeper waits for the schedule: a timerfd, not Go's timer, which
	// fires up to 1 ms late in an idle process (engine/clock).
	sleeper clock.Sleeper

	// shard holds the full-resolution latency histograms this slot
	// feeds; pend buffers latencies (µs; corrected in the low 32 bits,
	// uncorrected in the high 32 in open loop) until it is full, so the
	// shard's lock is taken once per pendSize requests.
	shard *shard
	pend  []uint64

	mu         sync.Mutex
	active     net.Conn // the connection in use, for interruption
	connFails  int      // connect errors in a row (backoff)
	seen       bool     // the slot's first outcome was recorded (refused.go)
	connect    *hdrhistogram.Histogram
	ival       *hdrhistogram.Histogram
	requests   int64
	errors     int64
	bytes      int64
	status     [maxStatus]int64
	errs       [numClasses]int64
	errSample  [numClasses]string
	maxBehind  time.Duration
	sumBehind  time.Duration
	lateSends  int64
	reconnects int64
	maxStreams int // HTTP/2: most streams in flight at once
	// streamLimit is the smallest stream limit of the slot's HTTP/2
	// sessions (Options.Streams lowered by the server's
	// SETTINGS_MAX_CONCURRENT_STREAMS); 0 before the first SETTINGS.
	streamLimit int
	goaways     int64
	used0RTT    int64     // HTTP/3: connections with 0-RTT accepted
	retry       []h2Retry // HTTP/2: streams refused by a graceful GOAWAY
}

// outcome of one exchange.
type outcome struct {
	status  int
	class   int // valid when err != nil
	err     error
	connect time.Duration // > 0 when a connection was established
	// reconnect: the connection replaced an earlier one to the endpoint.
	reconnect bool
}

func (c *conn) loop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.flush()
	defer c.closeAll()
	r := c.r
	for {
		if r.stop.Load() {
			return
		}
		if r.bounded {
			if c.quota == 0 {
				if c.quota = r.claim(); c.quota == 0 {
					return
				}
			}
			c.quota--
		}
		var intended time.Duration
		if r.openLoop {
			intended = c.next
			c.advance()
			if r.hasEnd && intended >= r.endOff {
				return
			}
			if d := intended - time.Since(r.start); d > 0 && !c.sleep(d) {
				return
			}
		}
		req := &r.reqs[c.pick()]
		o, sent := c.exchange(req, intended, time.Since(r.start))
		done := time.Since(r.start)
		if r.stop.Load() || (r.hasEnd && done >= r.endOff) {
			return // in flight when the load ended: not measured
		}
		if !r.openLoop {
			intended = sent
		}
		c.record(req, o, intended, sent, done)
		if d := c.backoff(o); d > 0 && !c.sleep(d) {
			return
		}
	}
}

// Closed loop, connect errors back off: a slot whose connects keep
// failing (the server died, or refuses) waits 1 ms after the second
// failure in a row, doubling up to maxConnectBackoff, instead of spinning
// on connect(2) and counting a million errors a second. The open loop
// keeps to its schedule, which paces it already.
const maxConnectBackoff = 100 * time.Millisecond

// backoff records the outcome of an exchange and returns how long the
// slot waits before its next one.
func (c *conn) backoff(o outcome) time.Duration {
	if o.err == nil || o.class != classConnect {
		c.connFails = 0
		return 0
	}
	c.connFails++
	if c.r.openLoop || c.connFails < 2 {
		return 0
	}
	return min(time.Millisecond<<min(c.connFails-2, 10), maxConnectBackoff)
}

// exchange sends one request and reads its response, dialing first when
// needed, until runner.deadline (intended is the open loop's intended
// send). It returns the send time: after the dial in keep-alive mode (the
// connect is not latency), before it with --close.
func (c *conn) exchange(req *request, intended, sent time.Duration) (o outcome, _ time.Duration) {
	r := c.r
	e := req.endpoint
	begun := sent
	nc := c.ncs[e]
	if nc == nil {
		var err error
		nc, err = r.dial(e, r.deadline(r.origin(intended, sent), begun))
		now := time.Since(r.start)
		if err != nil {
			o.class, o.err = classConnect, err
			if isTimeout(err) && !r.stop.Load() {
				o.class = classTimeout
			}
			return o, sent
		}
		o.connect = now - sent
		o.reconnect = c.dialed[e]
		c.dialed[e] = true
		c.ncs[e] = nc
		c.cur = -1
		if !r.opts.Close {
			sent = now
		}
		c.mu.Lock()
		c.active = nc
		c.mu.Unlock()
	}
	if c.cur != e {
		c.rd.reset(nc)
		c.cur = e
		c.mu.Lock()
		c.active = nc
		c.mu.Unlock()
	}
	if err := nc.SetDeadline(r.startWall.Add(r.deadline(r.origin(intended, sent), begun))); err != nil {
		c.drop(e)
		o.class, o.err = classWrite, err
		return o, sent
	}
	if r.stop.Load() {
		c.drop(e)
		o.class, o.err = classWrite, errStopped
		return o, sent
	}
	if _, err := nc.Write(req.raw); err != nil {
		c.drop(e)
		o.class, o.err = classify(err, classWrite), err
		return o, sent
	}
	resp, err := c.rd.readResponse(req.head)
	if err != nil {
		c.drop(e)
		o.class, o.err = classify(err, classRead), err
		return o, sent
	}
	o.status = resp.status
	if resp.checkErr != nil {
		o.class, o.err = classCheck, resp.checkErr
	}
	if resp.close || r.opts.Close {
		c.drop(e)
	}
	return o, sent
}

var (
	errStopped = errors.New("load stopped")
	errLate    = errors.New("no complete response within the timeout")
)

// classify maps an I/O error to its class; fallback is the phase's class.
func classify(err error, fallback int) int {
	var pe *parseError
	switch {
	case errors.As(err, &pe):
		return classParse
	case isTimeout(err):
		return classTimeout
	}
	return fallback
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// drop closes the connection to endpoint e.
func (c *conn) drop(e int) {
	if nc := c.ncs[e]; nc != nil {
		nc.Close()
		c.ncs[e] = nil
		if c.cur == e {
			c.cur = -1
		}
		c.mu.Lock()
		if c.active == nc {
			c.active = nil
		}
		c.mu.Unlock()
	}
}

func (c *conn) closeAll() {
	for e := range c.ncs {
		c.drop(e)
	}
}

// sleep waits d or until the load stops; false means stopped.
func (c *conn) sleep(d time.Duration) bool {
	return c.sleeper.Sleep(d, c.r.stopCh, nil)
}

// pick chooses a request by weight (xorshift; no shared state).
func (c *conn) pick() int {
	r := c.r
	if len(r.reqs) == 1 {
		return 0
	}
	c.rng ^= c.rng << 13
	c.rng ^= c.rng >> 7
	c.rng ^= c.rng << 17
	n := int(c.rng % uint64(r.totalWeight))
	// Binary search over the cumulative weights: the first index whose
	// cumulative weight exceeds n (request scripts rotate over thousands).
	lo, hi := 0, len(r.cum)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if n < r.cum[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// record adds one exchange to the slot's measurements: intended is where
// its latency counts from (runner.origin), sent its actual send and done
// its end. Every engine records through it, so the timeout rule
// (runner.late) holds alike for all: an exchange that ended after the
// timeout is a timeout, whatever the engine saw of it.
func (c *conn) record(req *request, o outcome, intended, sent, done time.Duration) {
	r := c.r
	if !c.seen {
		c.seen = true
		r.firstOutcome(o)
	}
	c.mu.Lock()
	c.bytes += c.rd.nread
	c.rd.nread = 0
	if o.connect > 0 {
		c.connect.RecordValue(r.clamp(o.connect))
		if o.reconnect && !r.opts.Close {
			c.reconnects++
		}
	}
	if r.late(intended, done) && !(o.err != nil && o.class == classTimeout) {
		// Whatever the engine saw, the exchange ended after the timeout:
		// a timeout, its latency not recorded (one message per slot is
		// formatted, for the sample).
		o.class, o.err = classTimeout, errLate
		if c.errSample[classTimeout] == "" {
			o.err = fmt.Errorf("no complete response within the timeout %s (the exchange ended after %s)",
				r.opts.Timeout, (done - intended).Round(time.Microsecond))
		}
	}
	if o.err != nil {
		c.errors++
		c.errs[o.class]++
		if c.errSample[o.class] == "" {
			c.errSample[o.class] = o.err.Error()
		}
		c.mu.Unlock()
		return
	}
	c.requests++
	lat := r.clamp(done - intended)
	c.ival.RecordValue(lat)
	v := uint64(lat)
	if r.openLoop {
		v |= uint64(r.clamp(done-sent)) << 32
		if behind := sent - intended; behind > 0 {
			c.sumBehind += behind
			if behind > c.maxBehind {
				c.maxBehind = behind
			}
			if behind > time.Millisecond {
				c.lateSends++
			}
		}
	}
	c.status[min(o.status, maxStatus-1)]++
	if o.status >= 400 {
		c.errors++
		c.errs[classHTTP]++
	}
	c.mu.Unlock()
	if r.opts.OnResponse != nil {
		r.opts.OnResponse(o.status)
	}
	c.pend = append(c.pend, v)
	if len(c.pend) == cap(c.pend) {
		c.flush()
	}
}

// pendSize is how many latencies a slot buffers before recording them
// into its shard.
const pendSize = 256

// shard is a group of slots' full-resolution latency histograms (one per
// thread, -t), so memory grows with threads rather than connections.
type shard struct {
	mu       sync.Mutex
	lat, unc *hdrhistogram.Histogram
}

// flush records the buffered latencies into the slot's shard.
func (c *conn) flush() {
	if len(c.pend) == 0 {
		return
	}
	sh := c.shard
	sh.mu.Lock()
	for _, v := range c.pend {
		sh.lat.RecordValue(int64(uint32(v)))
		if sh.unc != nil {
			sh.unc.RecordValue(int64(v >> 32))
		}
	}
	sh.mu.Unlock()
	c.pend = c.pend[:0]
}

// interrupt unblocks the slot's I/O (called when the load is cancelled).
func (c *conn) interrupt() {
	c.mu.Lock()
	if c.active != nil {
		c.active.SetDeadline(time.Unix(1, 0))
	}
	c.mu.Unlock()
}

// dialTLS wraps a TCP connection in TLS and completes the handshake
// within deadline, then lifts the deadline: the connection's users set
// their own (HTTP/1.1 per request, HTTP/2 read deadlines per session), and
// a write deadline left from the handshake would fail an HTTP/2
// connection's writes once the handshake's timeout had passed.
func dialTLS(nc net.Conn, cfg *tls.Config, deadline time.Time) (net.Conn, error) {
	tc := tls.Client(nc, cfg)
	tc.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		nc.Close()
		return nil, err
	}
	tc.SetDeadline(time.Time{})
	return tc, nil
}
