package load

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/benchflow/benchflow/engine/measure"
)

// Histogram geometry: 1 µs up to a ceiling derived from the timeout, at 3
// significant digits (2 for the per-interval histograms).
const (
	sigFigs         = 3
	intervalSigFigs = 2
)

// runner is one load in progress.
type runner struct {
	opts      Options
	endpoints []endpoint
	reqs      []request
	cum       []int // cumulative weights of reqs
	// totalWeight is the sum of weights.
	totalWeight int
	openLoop    bool
	bounded     bool // -n given
	remaining   atomic.Int64
	chunk       int64
	highest     int64 // µs, histogram ceiling

	start     time.Time // monotonic base of all offsets
	startWall time.Time
	// cpuStart is the process's CPU time when the measured phase began.
	cpuStart time.Duration
	hasEnd   bool
	endOff   time.Duration
	endWall  time.Time

	stop     atomic.Bool
	stopCh   chan struct{}
	stopOnce sync.Once
	dialCtx  context.Context
	dialStop context.CancelFunc
	dialer   net.Dialer // KeepAlive -1: no TCP keep-alive probes (saves setsockopt calls per connection)

	conns  []*conn
	shards []*shard // full-resolution latency histograms, one per thread
	urls   []string
	// engine is the engine that ran the slots: EngineUring
	// (uring_linux.go), EngineEpoll (poll_linux.go) or EngineGoroutines
	// (conn.go); engineWanted is the one asked for ("" automatic).
	engine, engineWanted string
	// wake interrupts the event loops' waits (nil on the goroutine
	// engine).
	wake func()
	// h2spin is --busy-poll and --nap on the HTTP/2 client (nil without
	// them).
	h2spin *h2Spin
	h3TLS  sync.Once // HTTP/3: the first connection's TLS state is reported
	// HTTP/3: the first connection's UDP socket, read back (h3udp.go).
	h3UDP            sync.Once
	udpRecv, udpSend int64
	udpGSO           bool
	// Each slot's first outcome: refused counts the slots whose first
	// connect was refused; allRefused is set when that is every slot,
	// and the load stops then (refused.go).
	refused    atomic.Int64
	allRefused atomic.Bool
	// The first TLS handshake's outcome, for the result.
	tlsOnce                     sync.Once
	tlsVersion, tlsCipher, alpn string
	// slotRamp is the schedule of a load with stages of connections
	// (stages.go); nil without.
	slotRamp *slotRamp
	// ramp is the schedule of a load with stages (stages.go); nil
	// without.
	ramp *ramp
	// checks are Options.Checks parsed (check.go); nil without any.
	checks []check
}

// Run drives one load and returns what it measured. It returns an error
// only when nothing could be measured: invalid options, or every request
// failed (the Result is then returned too, with the failures counted).
// Cancelling ctx stops the load promptly; the Result then covers the time
// until cancellation.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := Validate(Defaults(opts)); err != nil {
		return nil, err
	}
	return RunValidated(ctx, opts)
}

// RunValidated is Run for options that Validate has accepted already, as
// steps.LoadOptions returns them (a pipeline's load step is checked once
// per trial, when it is decoded): it does not check them again. Setting
// Requester, Progress or OnResponse after the check keeps it valid;
// changing any other field does not (Run checks them).
func RunValidated(ctx context.Context, opts Options) (*Result, error) {
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// newRunner builds the load of opts, which Validate accepted.
func newRunner(opts Options) (*runner, error) {
	opts = Defaults(opts)
	targets := opts.Targets
	if opts.Requester != nil {
		pool, err := opts.Requester.Pool()
		if err != nil {
			return nil, fmt.Errorf("building requests: %w", err)
		}
		if len(pool) == 0 {
			return nil, errors.New("building requests: the request script returned no requests")
		}
		targets = Defaults(Options{Targets: pool}).Targets
	}
	var slots *slotRamp
	if ConnectionStages(opts.Stages) {
		// The slots are the ramp's peak; -c is where it starts.
		slots = newSlotRamp(opts.Connections, opts.Stages)
		opts.Connections = slots.peak
		opts.Threads = min(opts.Threads, opts.Connections)
	}
	r := &runner{opts: opts, slotRamp: slots, openLoop: opts.Rate > 0 || (len(opts.Stages) > 0 && slots == nil), stopCh: make(chan struct{}), dialer: net.Dialer{KeepAlive: -1}}
	epIndex := map[string]int{}
	for i, t := range targets {
		ep, host, path, err := parseTarget(t.URL)
		if err != nil {
			return nil, fmt.Errorf("parsing target %d: %w", i+1, err)
		}
		t = withUserinfoAuth(t)
		raw, err := buildRequest(t, host, path, opts.Close)
		if err != nil {
			return nil, fmt.Errorf("building request for %q: %w", redactURL(t.URL), err)
		}
		var h2r h2Request
		if opts.Protocol == ProtoH2 {
			scheme := "http"
			if ep.tls != nil {
				scheme = "https"
			}
			if h2r, err = buildH2Request(t, scheme, host, path); err != nil {
				return nil, fmt.Errorf("building request for %q: %w", redactURL(t.URL), err)
			}
		}
		var h3r *h3Request
		if opts.Protocol == ProtoH3 {
			if ep.tls == nil {
				return nil, fmt.Errorf("protocol h3: %s is not an https:// URL (HTTP/3 runs over QUIC, which is always TLS)", redactURL(t.URL))
			}
			if h3r, err = buildH3Request(t, host, path, opts.H3ZeroRTT); err != nil {
				return nil, fmt.Errorf("building request for %q: %w", redactURL(t.URL), err)
			}
		}
		if ep.tls != nil {
			if err := configureTLS(ep.tls, opts); err != nil {
				return nil, err
			}
		}
		key := ep.network + " " + ep.addr
		if ep.tls != nil {
			key += " tls"
		}
		e, ok := epIndex[key]
		if !ok {
			e = len(r.endpoints)
			epIndex[key] = e
			r.endpoints = append(r.endpoints, ep)
		}
		r.urls = append(r.urls, redactURL(t.URL))
		r.totalWeight += t.Weight
		r.cum = append(r.cum, r.totalWeight)
		r.reqs = append(r.reqs, request{raw: raw, h2: h2r, h3: h3r, head: strings.EqualFold(t.Method, "HEAD"), endpoint: e, weight: t.Weight})
	}
	if (opts.Protocol == ProtoH2 || opts.Protocol == ProtoH3) && len(r.endpoints) > 1 {
		return nil, r.mixedEndpoints(opts.Protocol, opts.Requester != nil)
	}
	if err := checkFDLimit(opts.Connections, len(r.endpoints)); err != nil {
		return nil, err
	}
	if len(opts.Checks) > 0 {
		checks, err := parseChecks(opts.Checks)
		if err != nil {
			return nil, err
		}
		r.checks = checks
	}
	if len(opts.Stages) > 0 && slots == nil {
		r.ramp = newRamp(opts.Rate, opts.Stages)
	}
	engine, err := wantedEngine(opts.Engine)
	if err != nil {
		return nil, err
	}
	r.engineWanted = engine
	if opts.Requests > 0 {
		r.bounded = true
		r.remaining.Store(opts.Requests)
		r.chunk = max(1, min(256, opts.Requests/int64(opts.Connections*8)))
	}
	// The ceiling must hold a timed-out connect plus a timed-out exchange;
	// in open loop a corrected latency can also include the whole backlog.
	// Seconds as floats, so that no product overflows before the cap.
	ceiling := 2*opts.Timeout.Seconds() + 1
	if r.openLoop {
		expected := opts.Duration.Seconds()
		if expected == 0 {
			expected = float64(opts.Requests) / opts.Rate
		}
		ceiling += 2 * expected
	}
	ceiling = min(ceiling, time.Hour.Seconds())
	r.highest = max(int64(ceiling*1e6), 1000)
	return r, nil
}

// mixedEndpoints words the error of HTTP/2 or HTTP/3 requests to more than
// one endpoint, naming the first request that leaves the first one's
// (Validate catches targets; a request script's requests are known only
// here).
func (r *runner) mixedEndpoints(proto string, scripted bool) error {
	name := map[string]string{ProtoH2: "HTTP/2", ProtoH3: "HTTP/3"}[proto]
	why := "one " + name + " connection per slot carries all its streams, so every request must go to the same scheme, host and port"
	for i, q := range r.reqs {
		if q.endpoint != 0 {
			what := fmt.Sprintf("targets 1 and %d", i+1)
			if scripted {
				what = "the request script's requests"
			}
			return fmt.Errorf("protocol %s: %s go to more than one scheme, host and port (%s, %s): %s", proto, what, r.urls[0], r.urls[i], why)
		}
	}
	return errors.New("protocol " + proto + ": " + why)
}

func (r *runner) newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, r.highest, sigFigs)
}

func (r *runner) newIntervalHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, r.highest, intervalSigFigs)
}

// clamp converts d to µs within the histogram range.
func (r *runner) clamp(d time.Duration) int64 {
	v := int64(d / time.Microsecond)
	if v < 1 {
		return 1
	}
	if v > r.highest {
		return r.highest
	}
	return v
}

// claim takes a batch of requests from the -n budget.
func (r *runner) claim() int64 {
	for {
		cur := r.remaining.Load()
		if cur <= 0 {
			return 0
		}
		n := min(r.chunk, cur)
		if r.remaining.CompareAndSwap(cur, cur-n) {
			return n
		}
	}
}

// origin is where an exchange's latency, and so its timeout, counts
// from: the intended send in open loop, else the send (in keep-alive mode
// after connecting, since the connect is not latency; with --close before
// it). Every engine passes the same two offsets to record.
func (r *runner) origin(intended, sent time.Duration) time.Duration {
	if r.openLoop {
		return intended
	}
	return sent
}

// deadline is when an engine gives up on an exchange that began at begun
// (before any connect) and whose latency counts from origin (offsets from
// r.start): the timeout after the later of the two, never after the end
// of the load. In closed loop that is the timeout after the origin; an
// open-loop send behind its schedule is still waited for a timeout after
// it went out, so that it keeps its connection in step rather than fail
// before it is written, and record counts it by the rule of late (a
// timeout when it ends more than the timeout after its intended send).
// Whatever ends after the deadline because an engine noticed it late is a
// timeout as well (late): a response is never a success after the
// timeout.
func (r *runner) deadline(origin, begun time.Duration) time.Duration {
	d := max(origin, begun) + r.opts.Timeout
	if r.hasEnd {
		d = min(d, r.endOff)
	}
	return d
}

// late reports whether an exchange whose latency counts from origin and
// that ended at done missed the timeout: the one rule of what a timeout
// is, applied by record to every engine's exchanges.
func (r *runner) late(origin, done time.Duration) bool {
	return done-origin > r.opts.Timeout
}

// dial dials endpoint e for the goroutine engine's HTTP/1.1 loop, its
// reads and writes raw (rawSock), giving up at the offset deadline.
func (r *runner) dial(e int, deadline time.Duration) (net.Conn, error) {
	return r.dialBy(e, wrapRaw, r.startWall.Add(deadline))
}

// dialVia dials endpoint e within the timeout; wrap, if not nil, wraps the
// socket before TLS (if any) is layered on it.
func (r *runner) dialVia(e int, wrap func(net.Conn) net.Conn) (net.Conn, error) {
	deadline := time.Now().Add(r.opts.Timeout)
	if r.hasEnd && deadline.After(r.endWall) {
		deadline = r.endWall
	}
	return r.dialBy(e, wrap, deadline)
}

// dialBy dials endpoint e, giving up at deadline.
func (r *runner) dialBy(e int, wrap func(net.Conn) net.Conn, deadline time.Time) (net.Conn, error) {
	ep := r.endpoints[e]
	// A context with a deadline but no Done channel: the dialer then
	// bounds the connect with a socket deadline instead of starting a
	// goroutine per dial to watch the context. halt does not interrupt a
	// dial; the deadline (never later than the end of the load) does.
	nc, err := r.dialer.DialContext(&deadlineCtx{deadline: deadline}, ep.network, ep.addr)
	if err != nil {
		return nil, err
	}
	if wrap != nil {
		nc = wrap(nc)
	}
	if ep.tls != nil {
		tc, err := dialTLS(nc, ep.tls, deadline)
		if err == nil {
			r.tlsOnce.Do(func() {
				st := tc.(*tls.Conn).ConnectionState()
				r.tlsVersion, r.tlsCipher, r.alpn = tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), st.NegotiatedProtocol
			})
		}
		return tc, err
	}
	return nc, nil
}

// deadlineCtx is a context.Context with a deadline and nothing else.
type deadlineCtx struct{ deadline time.Time }

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return nil }
func (c *deadlineCtx) Err() error                  { return nil }
func (c *deadlineCtx) Value(any) any               { return nil }

// halt stops every slot: no new sends, and blocked I/O returns.
func (r *runner) halt() {
	r.stopOnce.Do(func() {
		r.stop.Store(true)
		close(r.stopCh)
		r.dialStop()
		for _, c := range r.conns {
			c.interrupt()
		}
		if r.wake != nil {
			r.wake()
		}
	})
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	opts := r.opts
	r.initConns()
	defer r.dialStop()
	r.begin()
	if r.opts.OnStart != nil {
		r.opts.OnStart(&Observer{r: r})
	}
	var wg sync.WaitGroup
	r.startSlots(&wg)
	defer r.h2spin.close() // after every slot ended: each wait below ends with them
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()

	col := newCollector(r)
	ticker := time.NewTicker(opts.Interval)
	defer ticker.Stop()
	var endC <-chan time.Time
	if r.hasEnd {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		endC = t.C
	}
	var measured time.Duration
	cancelled := false
wait:
	for {
		select {
		case <-ticker.C:
			col.tick(time.Since(r.start), true)
		case <-allDone:
			if r.openLoop && r.hasEnd && opts.Requests == 0 {
				// Every slot's next send falls after the end (a low
				// rate): the load still lasts its duration, so the rate
				// is measured over the time it was offered.
				allDone = nil
				continue
			}
			measured = time.Since(r.start)
			break wait
		case <-endC:
			measured = opts.Duration
			r.halt()
			if allDone != nil {
				<-allDone
			}
			break wait
		case <-ctx.Done():
			measured = time.Since(r.start)
			cancelled = true
			r.halt()
			if allDone != nil {
				<-allDone
			}
			break wait
		}
	}
	elapsed := time.Since(r.start) // every slot stopped, as wrk's runtime
	r.halt()
	if r.hasEnd && measured > opts.Duration {
		measured = opts.Duration
	}
	col.finish(measured)
	res := r.result(col, measured)
	res.Elapsed = max(elapsed, measured)
	if res.Requests == 0 {
		failed := res.Errors
		switch {
		case failed > 0:
			return res, fmt.Errorf("all %d requests failed: %s%s%s%s", failed, res.ErrorSummary(), h2Hint(res), r.h3Hint(res.ErrorSummary()), r.refusedHint())
		case cancelled:
			return res, fmt.Errorf("load cancelled before any response%s: %w", r.h3Hint(""), ctx.Err())
		default:
			return res, errors.New("no request completed within the load's duration" + r.h3Hint(""))
		}
	}
	return res, nil
}

// h2Hint is what an HTTP/1.1 load whose every request failed because the
// server closed (or reset) the connection before answering adds to its
// error: a server that speaks only HTTP/2 does that (Go's h2c server, a
// gRPC server; nginx and nghttpx send HTTP/2 frames first, which the
// parser names: errHTTP2Answer), and --h2 is what was missing.
func h2Hint(res *Result) string {
	sample := res.ErrorSample["read"]
	if res.Protocol != ProtoHTTP1 || res.Errors == 0 || res.ErrorsBy["read"] != res.Errors ||
		(sample != errClosedBeforeResponse.Error() && !strings.HasSuffix(sample, syscall.ECONNRESET.Error())) {
		return ""
	}
	return `; the server closed every connection without a response: if it speaks only HTTP/2 on this port, use --h2 (protocol = "h2" in a step)`
}

// Engine names, as reported in Result.Engine.
const (
	EngineUring      = "uring"
	EngineEpoll      = "epoll"
	EngineGoroutines = "goroutines"
)

// pollEngineEnv selects the engine for diagnosis and comparison when
// Options.Engine is empty: BENCHFLOW_LOAD_ENGINE=uring, epoll or
// goroutines (empty or auto: automatic).
const pollEngineEnv = "BENCHFLOW_LOAD_ENGINE"

// wantedEngine is the engine asked for by Options.Engine, else by the
// environment; "" is the automatic choice. Asking for uring where it
// cannot run is an error, so a comparison never measures another engine
// by mistake.
func wantedEngine(opt string) (string, error) {
	v, from := opt, "engine"
	if v == "" {
		v, from = os.Getenv(pollEngineEnv), pollEngineEnv
	}
	switch v {
	case "", "auto":
		return "", nil
	case EngineEpoll, EngineGoroutines:
		return v, nil
	case EngineUring:
		if runtime.GOOS != "linux" {
			return "", fmt.Errorf("%s %q: io_uring is Linux only", from, v)
		}
		if err := UringAvailable(); err != nil {
			return "", fmt.Errorf("%s %q: io_uring cannot run here: %w", from, v, err)
		}
		return v, nil
	}
	return "", fmt.Errorf("%s %q: want auto, uring, epoll or goroutines", from, v)
}

// EventLoops reports whether a load with these options runs on event
// loops (uring or epoll) rather than a goroutine per connection: plain
// http:// and unix: targets on Linux, unless the goroutine engine is
// asked for. Request scripts' targets count as their first URL's.
func EventLoops(opts Options) bool {
	if runtime.GOOS != "linux" || opts.Protocol == ProtoH2 || opts.Protocol == ProtoH3 || ConnectionStages(opts.Stages) {
		return false
	}
	if e, err := wantedEngine(opts.Engine); err != nil || e == EngineGoroutines {
		return false
	}
	for _, t := range opts.Targets {
		if !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "unix:") {
			return false
		}
	}
	return len(opts.Targets) > 0
}

// startSlots runs the slots on the event loops where they can serve the
// load (uring_linux.go, poll_linux.go), else one goroutine per slot.
func (r *runner) startSlots(wg *sync.WaitGroup) {
	if r.opts.Protocol == ProtoH3 {
		r.engine = EngineGoroutines
		h3QuietQuicGo()
		wg.Add(len(r.conns))
		for _, c := range r.conns {
			if r.opts.Close {
				go c.h3CloseLoop(wg)
			} else {
				go c.h3Loop(wg)
			}
		}
		return
	}
	if r.opts.Protocol == ProtoH2 {
		r.engine = EngineGoroutines
		r.h2spin = newH2Spin(r.opts.BusyPoll, r.opts.Nap)
		wg.Add(len(r.conns))
		for _, c := range r.conns {
			go c.h2Loop(wg)
		}
		return
	}
	if r.slotRamp != nil {
		r.engine = EngineGoroutines
		wg.Add(len(r.conns))
		for _, c := range r.conns {
			go c.stagedLoop(wg)
		}
		return
	}
	if eps, ok := r.resolveForPoll(); ok {
		if engine, wake, ok := r.startPoll(eps, wg); ok {
			r.engine, r.wake = engine, wake
			return
		}
	}
	r.engine = EngineGoroutines
	wg.Add(len(r.conns))
	for _, c := range r.conns {
		go c.loop(wg)
	}
}

// initConns creates the connection slots (not connected yet).
func (r *runner) initConns() {
	opts := r.opts
	r.dialCtx, r.dialStop = context.WithCancel(context.Background())
	r.shards = make([]*shard, opts.Threads)
	for i := range r.shards {
		r.shards[i] = &shard{lat: r.newHist()}
		if r.openLoop {
			r.shards[i].unc = r.newHist()
		}
	}
	r.conns = make([]*conn, opts.Connections)
	for i := range r.conns {
		c := &conn{
			r:       r,
			id:      i,
			ncs:     make([]net.Conn, len(r.endpoints)),
			dialed:  make([]bool, len(r.endpoints)),
			cur:     -1,
			rd:      r.newReader(),
			rng:     uint64(i)*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D,
			shard:   r.shards[i%len(r.shards)],
			pend:    make([]uint64, 0, pendSize),
			connect: r.newIntervalHist(), // 2 digits: connect times need less precision
			ival:    r.newIntervalHist(),
		}
		if r.ramp != nil {
			c.ramp = r.ramp
			c.next = r.ramp.at(int64(i))
			c.first = c.next
		} else if r.openLoop {
			// Validate bounds the rate (MinRate, MaxRatePerConnection), so
			// the period fits a Duration; the stagger is computed as a
			// float so that period × i cannot overflow.
			perConn := opts.Rate / float64(opts.Connections)
			c.period = time.Duration(float64(time.Second) / perConn)
			// Stagger the slots so sends are spread over the period.
			c.next = time.Duration(float64(c.period) * float64(i) / float64(opts.Connections))
			c.first = c.next
		}
		r.conns[i] = c
	}
}

// begin fixes the start of the measured phase.
func (r *runner) begin() {
	opts := r.opts
	r.start = time.Now()
	r.startWall = r.start
	r.cpuStart = cpuTime()
	if opts.Duration > 0 {
		r.hasEnd = true
		r.endOff = opts.Duration
		r.endWall = r.start.Add(opts.Duration)
	}
}

// result merges the slots' measurements.
func (r *runner) result(col *collector, measured time.Duration) *Result {
	opts := r.opts
	res := &Result{
		Tag:         opts.Tag,
		Started:     r.startWall,
		Duration:    measured,
		LoaderCPU:   max(cpuTime()-r.cpuStart, 0),
		Latency:     r.newHist(),
		Connect:     r.newIntervalHist(),
		Status:      map[int]int64{},
		ErrorsBy:    map[string]int64{},
		ErrorSample: map[string]string{},
		Intervals:   col.intervals,
		TargetRate:  opts.Rate,
		MaxRequests: opts.Requests,
		TimeLimit:   opts.Duration,
		Connections: opts.Connections,
		Threads:     opts.Threads,
		Close:       opts.Close,
		Engine:      r.engine,
		Protocol:    ProtoHTTP1,
		Streams:     1,
		StreamLimit: 1,
		TLSVersion:  r.tlsVersion,
		TLSCipher:   r.tlsCipher,
		ALPN:        r.alpn,
	}
	if opts.Protocol == ProtoH2 {
		res.Protocol, res.Streams, res.StreamLimit = ProtoH2C, opts.Streams, opts.Streams
		if len(r.endpoints) > 0 && r.endpoints[0].tls != nil {
			res.Protocol = ProtoH2
		}
	}
	if opts.Protocol == ProtoH3 {
		res.Protocol, res.Streams, res.StreamLimit = ProtoH3, opts.Streams, opts.Streams
		res.H3ZeroRTT = opts.H3ZeroRTT
		res.UDPRecvBuf, res.UDPSendBuf, res.UDPGSO = r.udpRecv, r.udpSend, r.udpGSO
	}
	res.Targets = r.urls
	if r.openLoop {
		res.Uncorrected = r.newHist()
	}
	for _, sh := range r.shards {
		sh.mu.Lock()
		res.Latency.Merge(sh.lat)
		if sh.unc != nil {
			res.Uncorrected.Merge(sh.unc)
		}
		sh.mu.Unlock()
	}
	var sumBehind time.Duration
	var sends int64
	for _, c := range r.conns {
		c.mu.Lock()
		res.Requests += c.requests
		res.Errors += c.errors
		res.Bytes += c.bytes
		res.Connect.Merge(c.connect)
		for s, n := range c.status {
			if n > 0 {
				res.Status[s] += n
			}
		}
		for k, n := range c.errs {
			if n > 0 {
				res.ErrorsBy[ErrorClasses[k]] += n
				if _, ok := res.ErrorSample[ErrorClasses[k]]; !ok && c.errSample[k] != "" {
					res.ErrorSample[ErrorClasses[k]] = c.errSample[k]
				}
			}
		}
		if c.maxBehind > res.MaxBehind {
			res.MaxBehind = c.maxBehind
		}
		sumBehind += c.sumBehind
		sends += c.requests
		res.LateSends += c.lateSends
		res.Reconnects += c.reconnects
		res.MaxInFlight = max(res.MaxInFlight, c.maxStreams)
		if c.streamLimit > 0 {
			res.StreamLimit = min(res.StreamLimit, c.streamLimit)
		}
		res.Goaways += c.goaways
		res.Used0RTT += c.used0RTT
		res.Naps += c.naps.Load()
		res.NapTime += time.Duration(c.napTime.Load())
		c.mu.Unlock()
	}
	if sends > 0 {
		res.MeanBehind = sumBehind / time.Duration(sends)
	}
	r.countMissed(res, measured)
	if r.ramp != nil && measured > 0 {
		// The rate a ramp offered: its mean over the load.
		res.TargetRate = float64(res.Intended) / measured.Seconds()
	}
	if r.openLoop && measured > 0 {
		achieved := float64(res.Requests+res.Errors-res.ErrorsBy["http"]) / measured.Seconds()
		if achieved < 0.95*res.TargetRate && r.ramp != nil {
			res.Warning = fmt.Sprintf("achieved %.0f req/s, below 95%% of the %.0f req/s the stages offered on average (sends were up to %s behind schedule)",
				achieved, res.TargetRate, res.MaxBehind.Round(time.Microsecond))
		} else if achieved < 0.95*res.TargetRate {
			res.Warning = fmt.Sprintf("achieved %.0f req/s, below 95%% of the target rate -R %g (sends were up to %s behind schedule)",
				achieved, res.TargetRate, res.MaxBehind.Round(time.Microsecond))
		}
		res.Warning = measure.JoinWarnings(res.Warning, res.MissedWarning())
	}
	return res
}

// collector builds the timeseries from the slots at each interval tick.
type collector struct {
	r         *runner
	agg       *hdrhistogram.Histogram
	prev      []struct{ req, errs, bytes int64 }
	last      time.Duration
	intervals []Interval
	total     struct{ req, errs int64 }
}

func newCollector(r *runner) *collector {
	return &collector{r: r, agg: r.newIntervalHist(), prev: make([]struct{ req, errs, bytes int64 }, len(r.conns))}
}

func (col *collector) tick(now time.Duration, report bool) {
	iv := Interval{Start: col.last, Duration: now - col.last, Latency: col.r.newIntervalHist()}
	for i, c := range col.r.conns {
		c.mu.Lock()
		iv.Latency.Merge(c.ival)
		c.ival.Reset()
		req, errs, b := c.requests, c.errors, c.bytes
		c.mu.Unlock()
		p := &col.prev[i]
		iv.Requests += req - p.req
		iv.Errors += errs - p.errs
		iv.Bytes += b - p.bytes
		p.req, p.errs, p.bytes = req, errs, b
	}
	col.last = now
	col.intervals = append(col.intervals, iv)
	col.total.req += iv.Requests
	col.total.errs += iv.Errors
	if f := col.r.opts.Progress; f != nil && report {
		rps := 0.0
		if iv.Duration > 0 {
			rps = float64(iv.Requests) / iv.Duration.Seconds()
		}
		f(Progress{Elapsed: now, Requests: col.total.req, Errors: col.total.errs, RPS: rps})
	}
}

// finish collects the last, possibly partial, interval.
func (col *collector) finish(measured time.Duration) {
	if measured > col.last || len(col.intervals) == 0 {
		col.tick(measured, false)
		if n := len(col.intervals); n > 1 && col.intervals[n-1].Requests == 0 && col.intervals[n-1].Errors == 0 &&
			col.intervals[n-1].Duration < col.r.opts.Interval/10 {
			col.intervals = col.intervals[:n-1] // a sliver with nothing in it
		}
	}
}
