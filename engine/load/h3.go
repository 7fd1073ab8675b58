package load

// HTTP/3 (Options.Protocol "h3"): each connection slot is one QUIC
// connection (github.com/quic-go/quic-go) carrying Options.Streams
// concurrent request streams. QUIC and the connection's control stream
// are the library's (http3.ClientConn); a request is benchflow's own
// (h3raw.go: a pre-encoded HEADERS frame, a status-only QPACK decoder),
// except one with a large body, which goes through the library's
// RoundTrip (exchangeLib). Every exchange is recorded through conn.record,
// so the shared timeout rule (runner.late), the HDR histograms and the
// open loop's coordinated-omission correction hold as for HTTP/1.1 and
// HTTP/2.
//
// QUIC's own failures map onto the existing error classes, their message
// naming them: a failed handshake or version negotiation is a connect
// error, an idle timeout a timeout, a stateless reset a read error.
//
// With Options.Close each slot opens a new QUIC connection per request
// (h3CloseLoop): the handshake is part of the latency, as for HTTP/1.1's
// --close. Options.H3ZeroRTT makes new connections resume a TLS session
// from the load's shared session cache and send their first request as
// 0-RTT early data (quic.Transport.DialEarly; a GET or HEAD is written
// without waiting for the handshake, as http3.MethodGet0RTT); the
// connections the server accepted early data on are counted
// (Result.Used0RTT).

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/clock"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
)

// h3MaxHeaderBytes bounds a response's header section (QPACK-decoded), so
// a hostile server cannot grow it without limit.
const h3MaxHeaderBytes = 64 << 10

// h3Request is the HTTP/3 form of a target.
type h3Request struct {
	// wire is the request's frames for the raw path (encodeH3Request);
	// nil when its body is too large for it (h3RawMaxBody): then it goes
	// through the library's RoundTrip.
	wire []byte
	// early: with 0-RTT a GET or HEAD goes without waiting for the
	// handshake (other methods are not replay-safe and wait).
	early bool
	// method is the request's method for RoundTrip; with 0-RTT a GET or
	// HEAD is sent as http3's GET_0RTT or HEAD_0RTT.
	method  string
	url     string
	headers [][2]string
	body    []byte
}

func buildH3Request(t Target, host, path string, zeroRTT bool) (*h3Request, error) {
	m := t.Method
	if m == "" {
		m = http.MethodGet
	}
	q := &h3Request{method: m, url: t.URL, headers: t.Headers, body: t.Body}
	if zeroRTT {
		switch m {
		case http.MethodGet:
			q.method, q.early = http3.MethodGet0RTT, true
		case http.MethodHead:
			q.method, q.early = http3.MethodHead0RTT, true
		}
	}
	if len(t.Body) <= h3RawMaxBody && !h3LibraryOnly {
		wire, err := encodeH3Request(t, host, path)
		if err != nil {
			return nil, err
		}
		q.wire = wire
	}
	return q, nil
}

// h3LibraryOnly sends every request through the library's RoundTrip (the
// tests compare the two paths).
var h3LibraryOnly = false

func (q *h3Request) newHTTP(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if len(q.body) > 0 {
		body = bytes.NewReader(q.body)
	}
	req, err := http.NewRequestWithContext(ctx, q.method, q.url, body)
	if err != nil {
		return nil, err
	}
	for _, h := range q.headers {
		if http.CanonicalHeaderKey(h[0]) == "Host" {
			req.Host = h[1]
			continue
		}
		req.Header.Add(h[0], h[1])
	}
	return req, nil
}

// h3Session is one QUIC connection of a slot; mu serialises the slot's
// bookkeeping (budget, open-loop schedule, record) among its streams.
type h3Session struct {
	c    *conn
	cc   *http3.ClientConn
	qc   *quic.Conn
	mu   sync.Mutex
	dead error // the connection failed: the streams end
	away bool  // the server sent GOAWAY: no new request (h3control.go)
}

// h3Config is the QUIC configuration of the load: the idle timeout well
// above the request timeout (0-RTT is the dial's choice: h3Dial).
func (r *runner) h3Config() *quic.Config {
	idle := 30 * time.Second
	if r.opts.Timeout > 0 && 2*r.opts.Timeout > idle {
		idle = 2 * r.opts.Timeout
	}
	return &quic.Config{MaxIdleTimeout: idle, KeepAlivePeriod: 0}
}

// h3Loop is the slot loop for HTTP/3: connect, run the streams until the
// connection ends, reconnect, until the load ends.
func (c *conn) h3Loop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.flush()
	r := c.r
	for !r.stop.Load() {
		if r.bounded && c.quota == 0 && r.remaining.Load() <= 0 {
			return
		}
		if r.openLoop && r.hasEnd && c.next >= r.endOff {
			return
		}
		start := time.Since(r.start)
		e := r.reqs[0].endpoint
		qc, err := c.h3Dial(e, r.deadline(start, start))
		now := time.Since(r.start)
		if err != nil {
			if r.stop.Load() || (r.hasEnd && now >= r.endOff) {
				return
			}
			if !c.h2Failed(h3DialFailure(err, r.endpoints[e].addr), start, now) {
				return
			}
			continue
		}
		c.connFails = 0
		st := qc.ConnectionState().TLS
		c.mu.Lock()
		c.connect.RecordValue(r.clamp(now - start))
		if c.dialed[e] {
			c.reconnects++
		}
		c.mu.Unlock()
		c.dialed[e] = true
		r.h3Report(st)
		tr := &http3.Transport{MaxResponseHeaderBytes: h3MaxHeaderBytes}
		s := newH3Session(c, qc, tr)
		finished := s.run()
		c.h3Count0RTT(qc)
		c.h3Hangup(qc)
		if finished {
			return
		}
	}
}

// h3Dial opens a QUIC connection to endpoint e, giving up at the offset
// deadline. With 0-RTT it returns as soon as the connection can carry
// early data (a resumed session), before the handshake completes.
func (c *conn) h3Dial(e int, deadline time.Duration) (*quic.Conn, error) {
	r := c.r
	ep := r.endpoints[e]
	cfg := ep.tls.Clone() // shares the session cache
	cfg.NextProtos = []string{http3.NextProtoH3}
	ctx, cancel := context.WithDeadline(context.Background(), r.startWall.Add(deadline))
	defer cancel()
	return c.h3DialOwn(ctx, ep.addr, cfg, r.opts.H3ZeroRTT)
}

// h3DialFailure is the outcome of a failed QUIC dial to addr.
func h3DialFailure(err error, addr string) outcome {
	o := outcome{class: classConnect, err: h3Error(err)}
	if isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
		o.class = classTimeout
		o.err = fmt.Errorf("no QUIC handshake with %s within the timeout (is an HTTP/3 server listening on UDP there?): %w", addr, err)
	}
	return o
}

// h3SessionCache hands each QUIC connection its own copy of a cached TLS
// session: quic-go sets the session's EarlyData when a connection resumes
// it, so connections resuming one session at once would write the shared
// state concurrently (the race detector sees it in TestH3CloseZeroRTT).
type h3SessionCache struct{ tls.ClientSessionCache }

func (c h3SessionCache) Get(key string) (*tls.ClientSessionState, bool) {
	cs, ok := c.ClientSessionCache.Get(key)
	if !ok || cs == nil {
		return cs, ok
	}
	ticket, st, err := cs.ResumptionState()
	if err != nil || st == nil {
		return nil, false
	}
	cp := *st
	own, err := tls.NewResumptionState(ticket, &cp)
	if err != nil {
		return nil, false
	}
	return own, true
}

// h3Hint is what an HTTP/3 load that never completed a QUIC handshake
// adds to its error, whatever ended it (every dial timing out, the
// duration ending first, Ctrl-C): the server may not listen on UDP. ""
// for other protocols, once a handshake completed, or when msg has it.
func (r *runner) h3Hint(msg string) string {
	if r.opts.Protocol != ProtoH3 || r.alpn != "" || strings.Contains(msg, "listening on UDP") {
		return ""
	}
	var addrs []string
	for _, e := range r.endpoints {
		addrs = append(addrs, e.addr)
	}
	return fmt.Sprintf(" (no QUIC handshake with %s completed: is an HTTP/3 server listening on UDP there?)", strings.Join(addrs, ", "))
}

// h3Report keeps the first connection's TLS state for the result.
func (r *runner) h3Report(st tls.ConnectionState) {
	r.h3TLS.Do(func() {
		r.tlsVersion, r.tlsCipher, r.alpn = tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), st.NegotiatedProtocol
	})
}

// h3Count0RTT counts a connection the server accepted 0-RTT early data
// on (read once its requests are done: by then the server's handshake
// flight, which says so, has been processed).
func (c *conn) h3Count0RTT(qc *quic.Conn) {
	if !c.r.opts.H3ZeroRTT || !qc.ConnectionState().Used0RTT {
		return
	}
	c.mu.Lock()
	c.used0RTT++
	c.mu.Unlock()
}

// h3CloseLoop is the slot loop for HTTP/3 with a new connection per
// request (Options.Close): claim a request, dial, send it, read the
// response, close the connection. Its latency counts from before the
// dial, so it holds the handshake (or, with 0-RTT, none of it), as
// HTTP/1.1's --close does.
func (c *conn) h3CloseLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.flush()
	r := c.r
	tr := &http3.Transport{MaxResponseHeaderBytes: h3MaxHeaderBytes}
	x := newH3Raw()
	defer x.stop()
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
		sent := time.Since(r.start)
		if !r.openLoop {
			intended = sent
		}
		e := req.endpoint
		var o outcome
		var n int64
		qc, err := c.h3Dial(e, r.deadline(r.origin(intended, sent), sent))
		if err != nil {
			o = h3DialFailure(err, r.endpoints[e].addr)
		} else {
			o.connect = max(time.Since(r.start)-sent, 1)
			s := newH3Session(c, qc, tr)
			conn0 := o.connect
			o, n = s.exchange(x, req, intended, sent)
			o.connect = conn0
			r.h3Report(qc.ConnectionState().TLS) // complete by now, also with 0-RTT
			c.h3Count0RTT(qc)
			c.h3Hangup(qc)
		}
		done := time.Since(r.start)
		if r.stop.Load() || (r.hasEnd && done >= r.endOff) {
			return // in flight when the load ended: not measured
		}
		c.mu.Lock()
		c.bytes += n
		c.mu.Unlock()
		c.record(req, o, intended, sent, done)
		if d := c.backoff(o); d > 0 && !c.sleep(d) {
			return
		}
	}
}

// run runs the session's streams until the load ends (true) or the
// connection fails (false).
func (s *h3Session) run() bool {
	r := s.c.r
	n := max(r.opts.Streams, 1)
	done := make(chan bool, n)
	for range n {
		go func() { done <- s.stream() }()
	}
	finished := true
	for range n {
		if !<-done {
			finished = false
		}
	}
	if n > s.c.maxStreams {
		s.c.mu.Lock()
		s.c.maxStreams = n
		s.c.mu.Unlock()
	}
	return finished
}

// next claims the next request of the slot: false when the load is over.
func (s *h3Session) next() (intended time.Duration, ok bool) {
	c, r := s.c, s.c.r
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.stop.Load() || s.dead != nil || s.away {
		return 0, false
	}
	if r.bounded {
		if c.quota == 0 {
			if c.quota = r.claim(); c.quota == 0 {
				return 0, false
			}
		}
		c.quota--
	}
	if r.openLoop {
		intended = c.next
		c.advance()
		if r.hasEnd && intended >= r.endOff {
			return 0, false
		}
	}
	return intended, true
}

// stream is one stream's loop: true when the load ended, false when the
// connection failed.
func (s *h3Session) stream() bool {
	c, r := s.c, s.c.r
	var sleeper clock.Sleeper // the stream's own: conn.sleep's is the slot's
	x := newH3Raw()
	defer x.stop()
	for {
		intended, ok := s.next()
		if !ok {
			s.mu.Lock()
			dead, away := s.dead, s.away
			s.mu.Unlock()
			// After a GOAWAY the slot reconnects unless the load is over.
			return dead == nil && (!away || r.stop.Load())
		}
		if r.openLoop {
			if d := intended - time.Since(r.start); d > 0 && !sleeper.Sleep(d, r.stopCh, nil) {
				return true
			}
		}
		s.mu.Lock()
		req := &r.reqs[c.pick()] // the slot's generator, shared by its streams
		s.mu.Unlock()
		sent := time.Since(r.start)
		o, n := s.exchange(x, req, intended, sent)
		done := time.Since(r.start)
		if r.stop.Load() || (r.hasEnd && done >= r.endOff) {
			return true
		}
		if !r.openLoop {
			intended = sent
		}
		s.mu.Lock()
		c.mu.Lock()
		c.bytes += n
		c.mu.Unlock()
		c.record(req, o, intended, sent, done)
		if o.err != nil && o.class != classTimeout && s.qc.Context().Err() != nil && s.dead == nil {
			s.dead = o.err
		}
		dead := s.dead
		s.mu.Unlock()
		if dead != nil {
			return false
		}
	}
}

// exchange sends one request on a new stream and reads its response to
// the end, within the shared deadline: on the raw path (h3raw.go) unless
// the request has no wire form.
func (s *h3Session) exchange(x *h3Raw, req *request, intended, sent time.Duration) (outcome, int64) {
	if req.h3.wire != nil {
		return s.exchangeRaw(x, req, intended, sent)
	}
	if s.c.r.checks != nil {
		return s.exchangeLibChecked(x, req, intended, sent)
	}
	return s.exchangeLib(req, intended, sent)
}

// exchangeLib is exchange through the library's ClientConn.RoundTrip.
func (s *h3Session) exchangeLib(req *request, intended, sent time.Duration) (outcome, int64) {
	r := s.c.r
	ctx, cancel := context.WithDeadline(context.Background(), r.startWall.Add(r.deadline(r.origin(intended, sent), sent)))
	defer cancel()
	hr, err := req.h3.newHTTP(ctx)
	if err != nil {
		return outcome{class: classWrite, err: err}, 0
	}
	resp, err := s.cc.RoundTrip(hr)
	if err != nil {
		return outcome{class: h3Class(err, classWrite), err: h3Error(err)}, 0
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	n += h3FramingEstimate(resp, n)
	if err != nil {
		return outcome{class: h3Class(err, classRead), err: h3Error(err)}, n
	}
	return outcome{status: resp.StatusCode}, n
}

// h3FramingEstimate is, for a response read through the library (which
// hides its frames), what its frames add to its body's n bytes: the
// HEADERS frame as QPACK encodes the fields without the dynamic table
// (what quic-go's and most servers' encoders do), and one DATA frame
// header. The raw path counts the frames themselves.
func h3FramingEstimate(resp *http.Response, n int64) int64 {
	var blk countWriter
	enc := qpack.NewEncoder(&blk)
	enc.WriteField(qpack.HeaderField{Name: ":status", Value: strconv.Itoa(resp.StatusCode)})
	for k, vs := range resp.Header {
		for _, v := range vs {
			enc.WriteField(qpack.HeaderField{Name: strings.ToLower(k), Value: v})
		}
	}
	enc.Close()
	est := int64(quicvarint.Len(h3FrameHeaders)+quicvarint.Len(uint64(blk))) + int64(blk)
	if n > 0 {
		est += int64(quicvarint.Len(h3FrameData) + quicvarint.Len(uint64(n)))
	}
	return est
}

// countWriter counts what is written to it.
type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// h3Class is the error class of a QUIC or HTTP/3 failure.
func h3Class(err error, fallback int) int {
	var idle *quic.IdleTimeoutError
	var hs *quic.HandshakeTimeoutError
	var vn *quic.VersionNegotiationError
	var reset *quic.StatelessResetError
	var se *quic.StreamError
	var h3e *http3.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &idle), isTimeout(err):
		return classTimeout
	case errors.As(err, &hs), errors.As(err, &vn):
		return classConnect
	case errors.As(err, &reset):
		return classRead
	case errors.As(err, &se) && se.Remote:
		// RESET_STREAM from the server (H3_REQUEST_REJECTED, …): as
		// HTTP/2's RST_STREAM.
		return classReset
	case errors.As(err, &h3e):
		return classParse
	}
	return fallback
}

// h3Error names QUIC's failures in the message.
func h3Error(err error) error {
	var idle *quic.IdleTimeoutError
	var hs *quic.HandshakeTimeoutError
	var vn *quic.VersionNegotiationError
	var reset *quic.StatelessResetError
	var se *quic.StreamError
	switch {
	case errors.As(err, &se) && se.Remote:
		return fmt.Errorf("stream reset by the server: %v", http3.ErrCode(se.ErrorCode))
	case errors.As(err, &idle):
		return fmt.Errorf("QUIC idle timeout: %w", err)
	case errors.As(err, &hs):
		return fmt.Errorf("QUIC handshake timeout: %w", err)
	case errors.As(err, &vn):
		return fmt.Errorf("QUIC version negotiation failed: %w", err)
	case errors.As(err, &reset):
		return fmt.Errorf("QUIC stateless reset: %w", err)
	}
	return err
}

// validateH3 checks what HTTP/3 cannot do: QUIC is always TLS, one QUIC
// connection per slot carries all its streams, and it runs on goroutines.
func validateH3(o Options, bad func(field, value, reason string)) {
	if d := Defaults(o); d.Close && d.Streams > 1 {
		bad("streams", fmt.Sprint(o.Streams), "a new connection per request (close) carries one request stream: leave streams out, or keep connections alive")
	}
	if o.Engine == EngineUring || o.Engine == EngineEpoll {
		bad("engine", o.Engine, "HTTP/3 runs on the goroutine engine only")
	}
	if o.BusyPoll > 0 || o.Nap > 0 {
		bad("protocol", o.Protocol, "busy polling and naps are for HTTP/2 only")
	}
	for i, t := range o.Targets {
		if len(t.URL) < 8 || t.URL[:8] != "https://" {
			bad("target", redactURL(t.URL), fmt.Sprintf("target %d: HTTP/3 runs over QUIC, which is always TLS: want an https:// URL", i+1))
		}
	}
	if err := sameEndpoint(o.Targets); err != nil {
		bad("protocol", o.Protocol, err.Error())
	}
}
