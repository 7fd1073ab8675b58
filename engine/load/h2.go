package load

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/benchflow/benchflow/engine/userfile"
)

// HTTP/2 (Options.Protocol "h2"): each connection slot is one HTTP/2
// connection carrying up to Options.Streams concurrent streams, bounded
// by the server's SETTINGS_MAX_CONCURRENT_STREAMS. Framing and HPACK are
// golang.org/x/net/http2's; the measurement is the slot's own, as over
// HTTP/1.1: latency per stream from its send (or, in open loop, from its
// intended send time), the same histograms and error classes, plus
// "reset" (RST_STREAM from the server) and "goaway" (streams the server
// refused with GOAWAY).
//
// One goroutine per connection reads frames and, in closed loop, sends
// the next request as soon as a stream completes; in open loop a second
// goroutine sends on the schedule. The request header blocks are encoded
// once (h2Request: literals that fit any connection, and, for a single
// request, a first block that fills HPACK's dynamic table and a steady one
// that names its entries); response header blocks are decoded
// for their :status only, without allocating (statusDecoder, h2hpack.go);
// what a session writes leaves when it next reads from the socket
// (h2Wire).

// MaxStreams bounds Options.Streams.
const MaxStreams = 1 << 16

// h2RecvWindow is the flow-control window the client grants per stream
// and per connection; WINDOW_UPDATE frames top it up as data arrives, so
// large bodies never stall.
const h2RecvWindow = 16 << 20

// What the client accepts from a server, checked before anything is read
// into memory, so that a connection's memory is bounded whatever the
// server sends (docs/load.md#what-the-client-accepts):
//   - h2MaxFrame is the client's SETTINGS_MAX_FRAME_SIZE, HTTP/2's
//     default (it sends no other): a longer frame is a FRAME_SIZE_ERROR,
//     found in its 9-byte header, before its payload is read.
//   - h2MaxHeaderList bounds a response header block (its HEADERS and
//     CONTINUATION frames, their 9-byte headers included), advertised as
//     SETTINGS_MAX_HEADER_LIST_SIZE: a block that would grow past it fails
//     the connection (ENHANCE_YOUR_CALM) before the frame is read, be it a
//     few large frames or endless empty CONTINUATIONs.
const (
	h2MaxFrame      = 16384
	h2MaxHeaderList = 64 << 10
)

// h2MaxWindow is the largest flow-control window (2^31-1, RFC 9113
// §6.9.1): a WINDOW_UPDATE or SETTINGS_INITIAL_WINDOW_SIZE beyond it is a
// FLOW_CONTROL_ERROR.
const h2MaxWindow = 1<<31 - 1

// h2Request is the HTTP/2 form of a request: its HPACK header block.
type h2Request struct {
	// block holds literals only and starts with a dynamic table size
	// update to 0, so it can be sent as is on any stream.
	block []byte
	body  []byte
	// first and steady are the request with HPACK's dynamic table, as a
	// browser or h2load sends it: first (the first request on a
	// connection) resets the table, sets its size to tableSize and adds
	// the fields the static table lacks; steady (every later request)
	// names them all by index, a few bytes the server decodes without
	// copying strings. Used when a connection sends this one request only
	// and the server's SETTINGS_HEADER_TABLE_SIZE is at least tableSize;
	// nil when the fields would not fit a 4,096-byte table.
	first, steady []byte
	tableSize     uint32
}

// h2DefaultTableSize is HPACK's default dynamic table size
// (SETTINGS_HEADER_TABLE_SIZE until the server says otherwise).
const h2DefaultTableSize = 4096

// requestFields is a target's request as HTTP/2 and HTTP/3 send it: the
// pseudo-header fields, the target's headers in lower case without the
// connection-specific ones (Host becomes :authority), and content-length
// for a body or a POST, PUT or PATCH.
func requestFields(t Target, scheme, host, path string) ([][2]string, error) {
	method := t.Method
	if method == "" {
		method = "GET"
	}
	authority := host
	var extra [][2]string
	hasLength := false
	for _, h := range t.Headers {
		k, v := strings.ToLower(strings.TrimSpace(h[0])), strings.TrimSpace(h[1])
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return nil, fmt.Errorf("invalid header name %q", h[0])
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("header %q: value contains a line break", k)
		}
		switch k {
		case "host":
			authority = v
			continue
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			continue // connection-specific: not allowed in HTTP/2 nor HTTP/3
		case "content-length":
			hasLength = true
		}
		extra = append(extra, [2]string{k, v})
	}
	fields := [][2]string{{":method", method}, {":scheme", scheme}, {":authority", authority}, {":path", path}}
	fields = append(fields, extra...)
	if !hasLength && (len(t.Body) > 0 || method == "POST" || method == "PUT" || method == "PATCH") {
		fields = append(fields, [2]string{"content-length", strconv.Itoa(len(t.Body))})
	}
	return fields, nil
}

// buildH2Request encodes a target's request as an HPACK header block.
func buildH2Request(t Target, scheme, host, path string) (h2Request, error) {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	// No dynamic table: the block starts with a table size update to 0
	// and holds literals only, so it can be sent as is on every stream.
	enc.SetMaxDynamicTableSizeLimit(0)
	pairs, err := requestFields(t, scheme, host, path)
	if err != nil {
		return h2Request{}, err
	}
	fields := make([]hpack.HeaderField, len(pairs))
	for i, f := range pairs {
		fields[i] = hpack.HeaderField{Name: f[0], Value: f[1]}
	}
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			return h2Request{}, err
		}
	}
	r := h2Request{block: buf.Bytes(), body: t.Body}
	need := uint32(0)
	for _, f := range fields {
		need += f.Size()
	}
	if need <= h2DefaultTableSize {
		var b bytes.Buffer
		e := hpack.NewEncoder(&b)
		e.SetMaxDynamicTableSize(0) // evict whatever the table holds,
		e.SetMaxDynamicTableSize(need)
		for _, f := range fields {
			if err := e.WriteField(f); err != nil {
				return h2Request{}, err
			}
		}
		r.first = bytes.Clone(b.Bytes())
		b.Reset()
		for _, f := range fields {
			if err := e.WriteField(f); err != nil {
				return h2Request{}, err
			}
		}
		r.steady = bytes.Clone(b.Bytes())
		r.tableSize = need
	}
	return r, nil
}

// h2Stream is one request in flight.
type h2Stream struct {
	id       uint32
	req      *request
	intended time.Duration
	sent     time.Duration
	deadline time.Duration
	status   int
	bytes    int64
	recv     int64  // DATA bytes not yet returned by WINDOW_UPDATE
	sendWin  int64  // what the server lets us send on the stream
	body     []byte // request body not sent yet
	// chk runs the response's checks from its final headers (h2check.go).
	chk *checkState
}

// h2Retry is a request refused by a graceful GOAWAY, to send again.
type h2Retry struct {
	req      *request
	intended time.Duration
}

// h2Session is one HTTP/2 connection of a slot.
type h2Session struct {
	c  *conn
	e  int
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	fr *http2.Framer

	dec       *statusDecoder
	payload   []byte // the HEADERS or CONTINUATION frame being read
	block     []byte // a header block split over CONTINUATION frames
	hdrStream uint32 // stream whose header block is being read
	hdrEnd    bool   // its HEADERS frame ends the stream
	hdrBytes  int64  // its frames' bytes, headers included
	// checks runs the load's response checks (h2check.go).
	checks h2Checks

	// mu guards the fields below and every write (the open-loop sender
	// writes too).
	mu       sync.Mutex
	streams  []h2Stream
	nextID   uint32
	limit    int   // concurrent streams: min(Options.Streams, the server's)
	peerInit int64 // server's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame int
	connSend int64
	connRecv int64
	settled  bool // the server's first SETTINGS arrived
	// peerTable is the server's SETTINGS_HEADER_TABLE_SIZE; indexed is
	// set while requests use HPACK's dynamic table (h2Request.first and
	// steady: one request on this connection, and a table large enough)
	// and primed once the first of them went out.
	peerTable       uint32
	indexed, primed bool
	goaway          bool
	done            bool // no more sends (budget spent or load over)
	dead            bool
	readDL          time.Duration // read deadline in force (offset), 0 none
	writeDL         time.Duration // write deadline in force (offset)
	tokens          chan struct{} // open loop: free streams
	werr            error
	// started: the open-loop sender runs; sendFinished: it has sent
	// everything the schedule or budget holds.
	started, sendFinished bool
	// unsent is how the connection failed when it failed before its
	// first stream (the server does not speak HTTP/2, or broke the
	// protocol in its first frames); h2Loop counts it as a request.
	unsent outcome
}

var errGoaway = errors.New("connection closed by GOAWAY")

// h2Loop is the slot loop for HTTP/2: connect, run a session until the
// connection ends, reconnect, until the load ends.
func (c *conn) h2Loop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.flush()
	defer c.closeAll()
	r := c.r
	for !r.stop.Load() {
		if r.bounded && c.quota == 0 && r.remaining.Load() <= 0 && len(c.retry) == 0 {
			return
		}
		if r.openLoop && r.hasEnd && c.next >= r.endOff && (len(c.retry) == 0 || time.Since(r.start) >= r.endOff) {
			return
		}
		start := time.Since(r.start)
		e := r.reqs[0].endpoint
		wire := &h2Wire{}
		nc, err := r.dialVia(e, wire.wrap)
		now := time.Since(r.start)
		if err == nil {
			err = r.checkALPN(nc)
			if err != nil {
				nc.Close()
			}
		} else if strings.Contains(err.Error(), "no application protocol") {
			err = fmt.Errorf("the server did not negotiate HTTP/2 by ALPN (%w): does it enable http2 on this port?", err)
		}
		if err != nil {
			if r.stop.Load() || (r.hasEnd && now >= r.endOff) {
				return
			}
			o := outcome{class: classConnect, err: err}
			if isTimeout(err) {
				o.class = classTimeout
			}
			if !c.h2Failed(o, start, now) {
				return
			}
			continue
		}
		c.connFails = 0
		c.mu.Lock()
		c.active = nc
		c.connect.RecordValue(r.clamp(now - start))
		if c.dialed[e] && !r.opts.Close {
			c.reconnects++
		}
		c.mu.Unlock()
		c.dialed[e] = true
		c.ncs[e] = nc
		s := newH2Session(c, e, nc)
		wire.s.Store(s)
		r.h2spin.add(wire, c.id)
		c.h2wire.Store(wire)
		finished := s.run()
		c.h2wire.Store(nil)
		c.drop(e)
		if finished {
			return
		}
		if s.unsent.err != nil && !c.h2Failed(s.unsent, start, time.Since(r.start)) {
			return
		}
	}
}

// h2Failed counts a connection that failed before carrying any stream
// (the connect failed, or the server does not speak HTTP/2 or broke it in
// its first frames) as one failed request, lest such a server count
// nothing at all, and waits as a failed connect does before the next; it
// returns false when the load is over. The request is one refused by a
// graceful GOAWAY when any waits (it was claimed from the budget
// already), else one claimed now; none is counted when the budget is
// spent.
func (c *conn) h2Failed(o outcome, start, now time.Duration) bool {
	r := c.r
	if n := len(c.retry); n > 0 {
		rt := c.retry[n-1]
		c.retry = c.retry[:n-1]
		c.record(rt.req, o, rt.intended, start, now)
	} else {
		if r.bounded {
			if c.quota == 0 {
				if c.quota = r.claim(); c.quota == 0 {
					return false
				}
			}
			c.quota--
		}
		intended := start
		if r.openLoop {
			intended = c.next
			c.advance()
		}
		c.record(&r.reqs[0], o, intended, start, now)
	}
	if d := c.backoff(o); d > 0 && !c.sleep(d) {
		return false
	}
	if r.openLoop {
		if d := c.next - time.Since(r.start); d > 0 && !c.sleep(d) {
			return false
		}
	}
	return true
}

// h2Wire is the socket under an HTTP/2 session (and under TLS, if any):
// it sends what the session has written (new requests, WINDOW_UPDATE,
// acks) when a read from the socket finds nothing to read (EAGAIN), so
// everything that has arrived is read and answered first, as an event
// loop (h2load) does, and one write carries the requests that replace
// every response of that batch — not one per frame nor per TLS record
// (crypto/tls returns one record per Read, and nginx sends about one per
// response). Flushing before every read from the socket instead wrote
// twice as often at 10 streams. A socket without a file descriptor
// (SyscallConn) is flushed before every read.
type h2Wire struct {
	rawSock
	s atomic.Pointer[h2Session] // nil during the TLS handshake
	// parked is set while the reader waits in the netpoller; events is
	// the busy poll's buffer (nil when the socket is not registered:
	// h2spin_linux.go).
	parked atomic.Bool
	events []h2Event
	// stamp, with naps, reads the socket with the kernel's receive times
	// (h2spin_linux.go); nil without.
	stamp *h2Stamp
}

func (w *h2Wire) wrap(nc net.Conn) net.Conn {
	w.init(nc)
	if w.raw != nil {
		w.readFn = w.h2Read
	}
	return w
}

// h2Read is the raw read's callback: it reads into w.p, and when nothing
// has arrived it flushes and, after the busy poll if any (spin), waits
// (returns false) for the socket to be readable.
func (w *h2Wire) h2Read(fd uintptr) bool {
	w.parked.Store(false)
	yielded := false
	for !w.read(fd) {
		s := w.s.Load()
		if s == nil {
			return false // the TLS handshake
		}
		if !yielded && w.buffered(s) {
			// Before writing, let the other connections' readers run
			// and look again, as an event loop (h2load) reads every
			// ready socket before it writes: the responses that arrive
			// meanwhile are answered in the same write.
			yielded = true
			runtime.Gosched()
			continue
		}
		w.flush(s) // nothing more has arrived: answer what has
		if !w.spin(s.c) {
			w.parked.Store(true)
			return false
		}
	}
	return true
}

// read is rawRead, with the receive time when the wire keeps it.
func (w *h2Wire) read(fd uintptr) bool {
	if w.stamp != nil {
		return w.stampedRead(fd)
	}
	return w.rawRead(fd)
}

// buffered reports whether the session has written anything since the
// last flush.
func (w *h2Wire) buffered(s *h2Session) bool {
	s.mu.Lock()
	n := s.bw.Buffered()
	s.mu.Unlock()
	return n > 0
}

// flush sends what the session has written since the last flush.
func (w *h2Wire) flush(s *h2Session) {
	s.mu.Lock()
	if s.werr == nil && s.bw.Buffered() > 0 {
		s.write(s.bw.Flush())
	}
	s.mu.Unlock()
}

func (w *h2Wire) Read(p []byte) (int, error) {
	if w.raw == nil {
		if s := w.s.Load(); s != nil {
			w.flush(s) // no EAGAIN to wait for: flush before every read
		}
	}
	return w.rawSock.Read(p)
}

// checkALPN verifies that a TLS connection negotiated h2 and notes the
// negotiated protocol and cipher for the result.
func (r *runner) checkALPN(nc net.Conn) error {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
	if r.opts.Protocol == ProtoH2 && st.NegotiatedProtocol != "h2" {
		got := st.NegotiatedProtocol
		if got == "" {
			got = "none"
		}
		return fmt.Errorf("the server did not negotiate HTTP/2 by ALPN (got %s): does it enable http2 on this port?", got)
	}
	return nil
}

func newH2Session(c *conn, e int, nc net.Conn) *h2Session {
	s := &h2Session{
		c: c, e: e, nc: nc,
		br:       bufio.NewReaderSize(nc, 32<<10),
		bw:       bufio.NewWriterSize(nc, 16<<10),
		nextID:   1,
		limit:    1,
		peerInit: 65535, peerTable: h2DefaultTableSize,
		maxFrame: 16384,
		connSend: 65535,
		streams:  make([]h2Stream, 0, c.r.opts.Streams),
	}
	s.fr = http2.NewFramer(s.bw, s.br)
	s.fr.SetReuseFrames()
	s.fr.SetMaxReadFrameSize(h2MaxFrame)
	s.dec = newStatusDecoder()
	s.checks.init(c.r.checks)
	return s
}

// run drives the session; it returns true when the slot is finished (the
// load is over or the request budget spent), false to reconnect.
func (s *h2Session) run() (finished bool) {
	c, r := s.c, s.c.r
	s.mu.Lock()
	s.armWrite(time.Since(r.start))
	s.bw.WriteString(http2.ClientPreface)
	s.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2RecvWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: h2MaxHeaderList},
	)
	s.fr.WriteWindowUpdate(0, h2RecvWindow-65535)
	err := s.bw.Flush()
	s.settleDeadline(time.Since(r.start))
	s.mu.Unlock()
	var senderDone chan struct{}
	if err == nil && r.openLoop {
		s.tokens = make(chan struct{}, r.opts.Streams)
		senderDone = make(chan struct{})
	}
	for err == nil {
		// Header blocks are read here, not by the Framer (which allocates
		// a frame per HEADERS), into buffers reused for the session; the
		// Framer still checks the frame size (h2MaxFrame, from the frame
		// header, before any payload is read) and that CONTINUATION
		// frames follow their HEADERS.
		var fh http2.FrameHeader
		fh, err = s.fr.ReadFrameHeader()
		if err != nil {
			err = s.readError(fh, err)
			break
		}
		var f http2.Frame
		var serr http2.StreamError
		streamErr := false // the Framer's StreamError, unwrapped (errors.As would allocate)
		if fh.Type == http2.FrameHeaders || fh.Type == http2.FrameContinuation {
			if err = s.checkHeaderBlock(fh); err != nil {
				break
			}
			if cap(s.payload) < int(fh.Length) {
				s.payload = make([]byte, fh.Length)
			}
			s.payload = s.payload[:fh.Length]
			if _, err = io.ReadFull(s.br, s.payload); err != nil {
				break
			}
		} else if f, err = s.fr.ReadFrameForHeader(fh); err == nil {
		} else if serr, streamErr = err.(http2.StreamError); streamErr {
			err = nil // that stream is reset, the others go on
		} else {
			err = s.readError(fh, err)
			break
		}
		s.mu.Lock()
		s.armWrite(time.Since(r.start))
		switch {
		case streamErr:
			s.resetStream(serr.StreamID, serr.Code, fmt.Sprintf("invalid %v frame on stream %d", fh.Type, fh.StreamID))
		case f != nil:
			if err = s.checkStream(fh); err == nil {
				err = s.handle(f)
			}
		default:
			if err = s.checkStream(fh); err == nil {
				err = s.headers(fh)
			}
		}
		if err == nil {
			s.expire()
			if !s.settled {
				// wait for the server's SETTINGS before the first send
			} else if !r.openLoop {
				s.fill()
			} else if !s.started {
				s.startSender(senderDone)
			}
			if s.werr != nil {
				err = s.werr
			}
			if s.goaway && len(s.streams) == 0 {
				err = errGoaway
			}
			if s.done && len(s.streams) == 0 && len(c.retry) == 0 {
				s.dead = true
				s.mu.Unlock()
				finished = true
				break
			}
			s.setReadDeadline()
		}
		s.mu.Unlock()
	}
	s.goAway(err)
	s.mu.Lock()
	s.dead = true
	stopped := r.stop.Load()
	now := time.Since(r.start)
	if !finished && !stopped && !(r.hasEnd && now >= r.endOff) {
		// The connection failed: every stream in flight failed with it.
		class := classRead
		switch {
		case errors.Is(err, errGoaway):
			class = -1 // streams the server will not process were counted already
		case isTimeout(err):
			class = classTimeout
		case isFrameError(err):
			class = classParse
		}
		if class >= 0 {
			for i := range s.streams {
				st := &s.streams[i]
				c.rd.nread = st.bytes
				c.record(st.req, outcome{class: class, err: err}, st.intended, st.sent, now)
			}
		}
		if class >= 0 && s.nextID == 1 {
			s.unsent = outcome{class: class, err: err} // h2Loop counts it
		}
	}
	s.streams = s.streams[:0]
	s.mu.Unlock()
	if w := c.h2wire.Load(); w != nil {
		r.h2spin.remove(w) // before the socket is closed
	}
	s.nc.Close()
	if senderDone != nil && s.started {
		close(s.tokens) // wakes a sender waiting for a stream
		<-senderDone
		s.mu.Lock()
		finished = finished || s.done && s.sendFinished && len(c.retry) == 0
		s.mu.Unlock()
	}
	c.flush()
	if stopped || (r.hasEnd && time.Since(r.start) >= r.endOff) {
		return true
	}
	return finished
}

// armWrite keeps the write deadline at least half of Options.Timeout
// ahead, so that a server that stops reading fails the connection instead
// of blocking the slot; it is moved only when less than half of the
// timeout is left, not per write (s.mu held).
func (s *h2Session) armWrite(now time.Duration) {
	r := s.c.r
	if s.writeDL != 0 && now+r.opts.Timeout/2 < s.writeDL {
		return
	}
	s.writeDL = now + r.opts.Timeout
	s.nc.SetWriteDeadline(r.startWall.Add(s.writeDL))
}

func isFrameError(err error) bool {
	var ce http2.ConnectionError
	var se http2.StreamError
	var he *h2ConnError
	var pe *parseError
	return errors.As(err, &he) || errors.As(err, &pe) || errors.As(err, &ce) || errors.As(err, &se) ||
		errors.Is(err, http2.ErrFrameTooLarge) || errors.Is(err, io.ErrUnexpectedEOF)
}

// h2ConnError is a connection error the client found in what the server
// sent (RFC 9113 §5.4.1): the client closes the connection with a GOAWAY
// carrying code and msg, and its streams in flight count as "parse"
// errors.
type h2ConnError struct {
	code http2.ErrCode
	msg  string
}

func (e *h2ConnError) Error() string {
	return e.code.String() + ": " + e.msg + " (the client closed the connection with GOAWAY)"
}

func connError(code http2.ErrCode, format string, args ...any) error {
	return &h2ConnError{code: code, msg: fmt.Sprintf(format, args...)}
}

// errNotH2C is a server that answers the h2c preface as HTTP/1.x would
// ("HTTP/1.1 400 Bad Request"): the bytes it sends cannot be HTTP/2.
var errNotH2C = &parseError{"the server does not speak h2c (it answered HTTP/1.1): drop --h2, or use https:// for ALPN"}

// looksHTTP1 reports whether a frame header's 9 bytes begin "HTTP/", as
// an HTTP/1.x status line does (its length reads 0x485454, "HTT").
func looksHTTP1(fh http2.FrameHeader) bool {
	return fh.Length == 'H'<<16|'T'<<8|'T' && fh.Type == 'P' && fh.Flags == '/'
}

// readError explains an error from reading a frame (fh is its header as
// far as it was read).
func (s *h2Session) readError(fh http2.FrameHeader, err error) error {
	var ce http2.ConnectionError
	switch {
	case errors.Is(err, http2.ErrFrameTooLarge) && looksHTTP1(fh):
		if _, tls := s.nc.(*tls.Conn); tls {
			return &parseError{"the server answered HTTP/1.1 on a connection that negotiated h2 by ALPN"}
		}
		return errNotH2C
	case errors.Is(err, http2.ErrFrameTooLarge):
		return connError(http2.ErrCodeFrameSize, "the server sent a %v frame of %d bytes on stream %d, above the client's SETTINGS_MAX_FRAME_SIZE of %d",
			fh.Type, fh.Length, fh.StreamID, h2MaxFrame)
	case errors.As(err, &ce):
		// The Framer's own checks (CONTINUATION out of order, a frame
		// that cannot be parsed): its detail says what was wrong.
		msg := fmt.Sprintf("invalid %v frame on stream %d", fh.Type, fh.StreamID)
		if d := s.fr.ErrorDetail(); d != nil {
			msg += ": " + d.Error()
		}
		return connError(http2.ErrCode(ce), "%s", msg)
	case s.settled:
		return err
	case errors.Is(err, io.EOF):
		return fmt.Errorf("the server closed the connection without sending its SETTINGS: does it speak HTTP/2 on this port? (%w)", err)
	case isTimeout(err) && !s.c.r.stop.Load():
		return fmt.Errorf("no SETTINGS frame from the server within the timeout (%s) of connecting: does it speak HTTP/2 on this port? (%w)", s.c.r.opts.Timeout, err)
	}
	return err
}

// settleDeadline bounds the wait for the server's first SETTINGS, the
// one read before it, by Options.Timeout from now (and by the end of the
// load) (s.mu held).
func (s *h2Session) settleDeadline(now time.Duration) {
	r := s.c.r
	dl := now + r.opts.Timeout
	if r.hasEnd && dl > r.endOff {
		dl = r.endOff
	}
	s.readDL = dl
	s.nc.SetReadDeadline(r.startWall.Add(dl))
}

// checkHeaderBlock bounds a header block before the payload of its next
// frame is read: h2MaxHeaderList over its frames, headers included.
func (s *h2Session) checkHeaderBlock(fh http2.FrameHeader) error {
	n := int64(fh.Length) + 9
	if fh.Type == http2.FrameContinuation {
		n += s.hdrBytes
	}
	if n > h2MaxHeaderList {
		return connError(http2.ErrCodeEnhanceYourCalm, "the response header block of stream %d exceeds %d bytes, the client's SETTINGS_MAX_HEADER_LIST_SIZE (frame headers included)",
			fh.StreamID, h2MaxHeaderList)
	}
	return nil
}

// checkStream checks that a frame belongs where it arrived (s.mu held):
// the server's first frame is its SETTINGS; a stream the server names is
// one the client opened (odd, below s.nextID), for the server opens none
// (push is disabled: PUSH_PROMISE is an error too).
func (s *h2Session) checkStream(fh http2.FrameHeader) error {
	if !s.settled && (fh.Type != http2.FrameSettings || fh.Flags.Has(http2.FlagSettingsAck)) {
		return connError(http2.ErrCodeProtocol, "the server's first frame is %v, not its SETTINGS", fh.Type)
	}
	switch fh.Type {
	case http2.FramePushPromise:
		return connError(http2.ErrCodeProtocol, "PUSH_PROMISE on stream %d, while the client's SETTINGS_ENABLE_PUSH is 0", fh.StreamID)
	case http2.FrameHeaders, http2.FrameData, http2.FrameRSTStream, http2.FrameWindowUpdate:
	default:
		return nil
	}
	switch id := fh.StreamID; {
	case id == 0:
		return nil // the Framer or the frame's handler refuses it where it is wrong
	case id%2 == 0:
		return connError(http2.ErrCodeProtocol, "%v on stream %d, an even stream: only the server opens those, and push is disabled", fh.Type, id)
	case id >= s.nextID:
		return connError(http2.ErrCodeProtocol, "%v on stream %d, which the client has not opened", fh.Type, id)
	}
	return nil
}

// resetStream resets a stream the server broke the protocol on (a stream
// error, RFC 9113 §5.4.2): RST_STREAM with code, and the stream, if still
// in flight, counts as a "parse" error (s.mu held).
func (s *h2Session) resetStream(id uint32, code http2.ErrCode, msg string) {
	s.write(s.fr.WriteRSTStream(id, code))
	if i := s.find(id); i >= 0 {
		s.complete(i, outcome{class: classParse, err: fmt.Errorf("%v: %s (the client reset the stream)", code, msg)})
	}
}

// goAway sends GOAWAY when the connection ends on a connection error the
// client found, telling the server why.
func (s *h2Session) goAway(err error) {
	var ce *h2ConnError
	if !errors.As(err, &ce) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.werr != nil {
		return
	}
	s.armWrite(time.Since(s.c.r.start))
	s.write(s.fr.WriteGoAway(0, ce.code, []byte(ce.msg)))
	s.write(s.bw.Flush())
}

// setReadDeadline bounds the next read by the oldest stream's deadline
// (a server that sends nothing at all), else by the end of the load. The
// deadline in force may be up to Options.Timeout/16 later than that: it
// is moved when it falls outside, not every time the oldest stream
// changes (streams that time out while others are answered are reset by
// expire, on time).
func (s *h2Session) setReadDeadline() {
	r := s.c.r
	var dl time.Duration
	for i := range s.streams {
		if d := s.streams[i].deadline; dl == 0 || d < dl {
			dl = d
		}
	}
	if dl == 0 {
		if !r.hasEnd {
			dl = time.Since(r.start) + time.Hour
		} else {
			dl = r.endOff
		}
	}
	slack := r.opts.Timeout / 16
	if s.readDL >= dl && s.readDL <= dl+slack {
		return
	}
	dl += slack
	if r.hasEnd && dl > r.endOff {
		dl = r.endOff
	}
	if dl != s.readDL {
		s.readDL = dl
		s.nc.SetReadDeadline(r.startWall.Add(dl))
	}
}

// handle processes one frame (s.mu held).
func (s *h2Session) handle(f http2.Frame) error {
	c, r := s.c, s.c.r
	h := f.Header()
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		err := f.ForeachSetting(func(st http2.Setting) error {
			if err := st.Valid(); err != nil {
				var code http2.ConnectionError
				errors.As(err, &code)
				return connError(http2.ErrCode(code), "invalid SETTINGS: %v", st)
			}
			switch st.ID {
			case http2.SettingMaxConcurrentStreams:
				s.limit = int(min(st.Val, uint32(r.opts.Streams)))
			case http2.SettingInitialWindowSize:
				delta := int64(st.Val) - s.peerInit
				for i := range s.streams {
					if w := s.streams[i].sendWin + delta; w > h2MaxWindow {
						return connError(http2.ErrCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE %d takes the send window of stream %d to %d, above 2^31-1", st.Val, s.streams[i].id, w)
					}
				}
				s.peerInit = int64(st.Val)
				for i := range s.streams {
					s.streams[i].sendWin += delta
				}
			case http2.SettingMaxFrameSize:
				s.maxFrame = int(st.Val)
			case http2.SettingHeaderTableSize:
				s.peerTable = st.Val
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !s.settled {
			s.settled = true
			if !hasMaxStreams(f) {
				s.limit = r.opts.Streams
			}
			if s.tokens != nil {
				for range s.limit {
					s.tokens <- struct{}{}
				}
			}
			s.indexed = len(r.reqs) == 1 && r.reqs[0].h2.steady != nil
		}
		if s.indexed && s.peerTable < r.reqs[0].h2.tableSize {
			// The server's table is (now) too small: literals from here
			// on (their block sets the table size to 0, as a smaller
			// SETTINGS_HEADER_TABLE_SIZE requires).
			s.indexed = false
		}
		c.mu.Lock()
		if c.streamLimit == 0 || s.limit < c.streamLimit {
			c.streamLimit = s.limit
		}
		c.mu.Unlock()
		s.write(s.fr.WriteSettingsAck())
		s.pump()
	case *http2.DataFrame:
		n := int64(h.Length)
		if s.connRecv+n > h2RecvWindow {
			return connError(http2.ErrCodeFlowControl, "%d bytes of DATA on stream %d exceed the connection's receive window (%d bytes left of %d)", n, h.StreamID, h2RecvWindow-s.connRecv, h2RecvWindow)
		}
		s.connRecv += n
		if s.connRecv >= h2RecvWindow/2 {
			s.write(s.fr.WriteWindowUpdate(0, uint32(s.connRecv)))
			s.connRecv = 0
		}
		i := s.find(h.StreamID)
		if i < 0 {
			return nil
		}
		st := &s.streams[i]
		if st.recv+n > h2RecvWindow {
			return connError(http2.ErrCodeFlowControl, "%d bytes of DATA on stream %d exceed its receive window (%d bytes left of %d)", n, h.StreamID, h2RecvWindow-st.recv, h2RecvWindow)
		}
		if st.status == 0 {
			s.resetStream(st.id, http2.ErrCodeProtocol, "DATA before the response's HEADERS")
			return nil
		}
		st.bytes += n + 9
		if st.chk != nil {
			st.chk.body(f.Data())
		}
		if f.StreamEnded() {
			s.complete(i, outcome{status: st.status})
			return nil
		}
		st.recv += n
		if st.recv >= h2RecvWindow/2 {
			s.write(s.fr.WriteWindowUpdate(st.id, uint32(st.recv)))
			st.recv = 0
		}
	case *http2.RSTStreamFrame:
		if i := s.find(h.StreamID); i >= 0 {
			s.complete(i, outcome{class: classReset, err: fmt.Errorf("stream reset by the server: %v", f.ErrCode)})
		}
	case *http2.GoAwayFrame:
		s.goaway = true
		c.mu.Lock()
		c.goaways++
		c.mu.Unlock()
		for i := len(s.streams) - 1; i >= 0; i-- {
			st := s.streams[i]
			if st.id <= f.LastStreamID {
				continue
			}
			if f.ErrCode == http2.ErrCodeNo && f.LastStreamID > 0 {
				// A graceful GOAWAY (nginx after keepalive_requests):
				// the server did not process the stream, so it is sent
				// again on the next connection, keeping its intended
				// time (its latency includes the reconnect). One that
				// names no stream (last 0) processed nothing on the
				// connection: its streams count as errors, lest a
				// server that refuses everything be retried forever.
				last := len(s.streams) - 1
				s.streams[i] = s.streams[last]
				s.streams = s.streams[:last]
				c.retry = append(c.retry, h2Retry{req: st.req, intended: st.intended})
				continue
			}
			s.complete(i, outcome{class: classGoaway, err: fmt.Errorf("GOAWAY from the server (%v, last stream %d)", f.ErrCode, f.LastStreamID)})
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			s.write(s.fr.WritePing(true, f.Data))
		}
	case *http2.WindowUpdateFrame:
		inc := int64(f.Increment)
		if h.StreamID == 0 {
			if w := s.connSend + inc; w > h2MaxWindow {
				return connError(http2.ErrCodeFlowControl, "WINDOW_UPDATE of %d takes the connection's send window to %d, above 2^31-1", inc, w)
			}
			s.connSend += inc
		} else if i := s.find(h.StreamID); i >= 0 {
			st := &s.streams[i]
			if w := st.sendWin + inc; w > h2MaxWindow {
				s.resetStream(st.id, http2.ErrCodeFlowControl, fmt.Sprintf("WINDOW_UPDATE of %d takes the send window of stream %d to %d, above 2^31-1", inc, st.id, w))
				return nil
			}
			st.sendWin += inc
		}
		s.pump()
	}
	return nil
}

func hasMaxStreams(f *http2.SettingsFrame) bool {
	_, ok := f.Value(http2.SettingMaxConcurrentStreams)
	return ok
}

// headers processes a HEADERS or CONTINUATION frame whose payload is in
// s.payload (s.mu held).
func (s *h2Session) headers(fh http2.FrameHeader) error {
	p := s.payload
	if fh.Type == http2.FrameContinuation {
		// The Framer checked it continues the block of s.hdrStream.
		s.hdrBytes += int64(fh.Length) + 9 // bounded by checkHeaderBlock
		s.block = append(s.block, p...)
		if fh.Flags.Has(http2.FlagContinuationEndHeaders) {
			return s.headerBlock(s.block)
		}
		return nil
	}
	if fh.StreamID == 0 {
		return connError(http2.ErrCodeProtocol, "HEADERS on stream 0")
	}
	pad := 0
	if fh.Flags.Has(http2.FlagHeadersPadded) {
		if len(p) < 1 {
			return connError(http2.ErrCodeProtocol, "padded HEADERS of stream %d without its pad length", fh.StreamID)
		}
		pad, p = int(p[0]), p[1:]
	}
	if fh.Flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return connError(http2.ErrCodeProtocol, "HEADERS of stream %d too short for its priority fields", fh.StreamID)
		}
		p = p[5:]
	}
	if len(p) < pad {
		return connError(http2.ErrCodeProtocol, "HEADERS of stream %d: %d bytes of padding in a %d-byte payload", fh.StreamID, pad, fh.Length)
	}
	p = p[:len(p)-pad]
	s.hdrStream, s.hdrEnd, s.hdrBytes = fh.StreamID, fh.Flags.Has(http2.FlagHeadersEndStream), int64(fh.Length)+9
	if !fh.Flags.Has(http2.FlagHeadersEndHeaders) {
		s.block = append(s.block[:0], p...)
		return nil
	}
	return s.headerBlock(p)
}

// headerBlock decodes a complete header block of s.hdrStream: a final
// response's headers, an interim (1xx) response's, or trailers (s.mu
// held). Every block is decoded, for a stream in flight or not, to keep
// the HPACK table in step.
func (s *h2Session) headerBlock(block []byte) error {
	status, err := s.dec.decode(block)
	if err == nil {
		err = s.checks.decode(block)
	}
	if err != nil {
		return connError(http2.ErrCodeCompression, "the response header block of stream %d is not valid HPACK", s.hdrStream)
	}
	i := s.find(s.hdrStream)
	if i < 0 {
		return nil
	}
	st := &s.streams[i]
	st.bytes += s.hdrBytes
	switch {
	case st.status != 0:
		// trailers, after the final response's headers
	case status >= 100 && status < 200:
		return nil // interim response: the final one follows
	case status == 0:
		s.complete(i, outcome{class: classParse, err: errors.New("response without :status")})
		return nil
	default:
		st.status = status
		s.checks.begin(st)
	}
	if s.hdrEnd {
		s.complete(i, outcome{status: st.status})
	}
	return nil
}

func (s *h2Session) find(id uint32) int {
	for i := range s.streams {
		if s.streams[i].id == id {
			return i
		}
	}
	return -1
}

func (s *h2Session) write(err error) {
	if err != nil && s.werr == nil {
		s.werr = err
	}
}

// complete records stream i and removes it (s.mu held).
func (s *h2Session) complete(i int, o outcome) {
	c, r := s.c, s.c.r
	st := s.streams[i]
	last := len(s.streams) - 1
	s.streams[i] = s.streams[last]
	s.streams = s.streams[:last]
	o = s.checks.end(&st, o)
	if s.tokens != nil && !s.dead {
		select {
		case s.tokens <- struct{}{}:
		default:
		}
	}
	done := time.Since(r.start)
	if r.stop.Load() || (r.hasEnd && done >= r.endOff) {
		return // in flight when the load ended: not measured
	}
	if o.class != classTimeout {
		// With naps: when the kernel received the response's end.
		done = c.h2wire.Load().receivedAt(r, st.sent, done)
	}
	c.rd.nread = st.bytes
	c.record(st.req, o, st.intended, st.sent, done)
}

// expire resets streams past their deadline (s.mu held).
func (s *h2Session) expire() {
	r := s.c.r
	if len(s.streams) == 0 {
		return
	}
	now := time.Since(r.start)
	for i := len(s.streams) - 1; i >= 0; i-- {
		if st := &s.streams[i]; now >= st.deadline {
			s.write(s.fr.WriteRSTStream(st.id, http2.ErrCodeCancel))
			s.complete(i, outcome{class: classTimeout, err: fmt.Errorf("stream timed out after %s", r.opts.Timeout)})
		}
	}
}

// fill sends requests while streams are free (closed loop; s.mu held).
func (s *h2Session) fill() {
	c, r := s.c, s.c.r
	for len(s.streams) < s.limit && !s.goaway && !s.done && s.werr == nil {
		if r.stop.Load() {
			s.done = true
			return
		}
		if n := len(c.retry); n > 0 {
			// Refused by a graceful GOAWAY on the previous connection:
			// sent again before any new request, outside the budget
			// (claimed already), keeping its intended time.
			rt := c.retry[n-1]
			c.retry = c.retry[:n-1]
			s.send(rt.req, rt.intended, time.Since(r.start))
			continue
		}
		if r.bounded {
			if c.quota == 0 {
				if c.quota = r.claim(); c.quota == 0 {
					s.done = true
					return
				}
			}
			c.quota--
		}
		now := time.Since(r.start)
		s.send(&r.reqs[c.pick()], now, now)
	}
}

// send opens a stream for req (s.mu held).
func (s *h2Session) send(req *request, intended, now time.Duration) {
	id := s.nextID
	s.nextID += 2
	if s.nextID > 1<<31-1 {
		s.goaway = true // stream IDs exhausted: the next connection takes over
	}
	h2r := &req.h2
	block := h2r.block
	if s.indexed {
		block = h2r.steady
		if !s.primed {
			block, s.primed = h2r.first, true
		}
	}
	s.streams = append(s.streams, h2Stream{
		id: id, req: req, intended: intended, sent: now,
		deadline: s.c.r.deadline(intended, now),
		sendWin:  s.peerInit, body: h2r.body,
	})
	s.write(s.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID:      id,
		BlockFragment: block,
		EndStream:     len(h2r.body) == 0,
		EndHeaders:    true,
	}))
	if len(h2r.body) > 0 {
		s.pump()
	}
	if n := len(s.streams); n > s.c.maxStreams {
		c := s.c
		c.mu.Lock()
		c.maxStreams = n
		c.mu.Unlock()
	}
}

// pump sends request bodies as far as the flow-control windows allow
// (s.mu held).
func (s *h2Session) pump() {
	for i := range s.streams {
		st := &s.streams[i]
		for len(st.body) > 0 && s.connSend > 0 && st.sendWin > 0 {
			n := min(int64(len(st.body)), s.connSend, st.sendWin, int64(s.maxFrame))
			s.write(s.fr.WriteData(st.id, n == int64(len(st.body)), st.body[:n]))
			st.body = st.body[n:]
			s.connSend -= n
			st.sendWin -= n
		}
	}
}

// startSender starts the open-loop sender of the session (s.mu held).
func (s *h2Session) startSender(done chan struct{}) {
	s.started = true
	go s.sender(done)
}

// sender sends on the open-loop schedule: each request at its intended
// time, or as soon as a stream is free after it (its latency still counts
// from the intended time).
func (s *h2Session) sender(done chan struct{}) {
	defer close(done)
	c, r := s.c, s.c.r
	finish := func() {
		s.mu.Lock()
		s.done, s.sendFinished = true, true
		if len(s.streams) == 0 && !s.dead {
			s.nc.SetReadDeadline(time.Unix(1, 0)) // wake the reader: nothing left
		}
		s.mu.Unlock()
	}
	for {
		if r.stop.Load() {
			return
		}
		// Requests refused by a graceful GOAWAY on the previous
		// connection go first, each as soon as a stream is free, outside
		// the schedule and the budget (they had their turn), keeping
		// their intended time. Only this goroutine takes from c.retry
		// while the session lives; a GOAWAY adds to it and ends sending.
		s.mu.Lock()
		retrying := len(c.retry) > 0
		s.mu.Unlock()
		if retrying {
			if _, ok := <-s.tokens; !ok {
				return
			}
			s.mu.Lock()
			if s.dead || s.goaway {
				s.mu.Unlock()
				return
			}
			if n := len(c.retry); n > 0 {
				rt := c.retry[n-1]
				c.retry = c.retry[:n-1]
				s.sendNow(rt.req, rt.intended)
			}
			s.mu.Unlock()
			continue
		}
		if r.bounded && c.quota == 0 {
			if c.quota = r.claim(); c.quota == 0 {
				finish()
				return
			}
		}
		intended := c.next
		if r.hasEnd && intended >= r.endOff {
			finish()
			return
		}
		if d := intended - time.Since(r.start); d > 0 && !c.sleep(d) {
			return
		}
		if _, ok := <-s.tokens; !ok {
			return // the connection ended; the next one sends this request
		}
		s.mu.Lock()
		if s.dead || s.goaway {
			s.mu.Unlock()
			return
		}
		c.advance()
		if r.bounded {
			c.quota--
		}
		s.sendNow(&r.reqs[c.pick()], intended)
		s.mu.Unlock()
	}
}

// sendNow opens a stream from the open-loop sender and flushes it
// (s.mu held).
func (s *h2Session) sendNow(req *request, intended time.Duration) {
	wasIdle := len(s.streams) == 0
	now := time.Since(s.c.r.start)
	s.armWrite(now)
	s.send(req, intended, now)
	if s.werr == nil {
		s.write(s.bw.Flush())
	}
	if s.werr != nil {
		s.nc.SetReadDeadline(time.Unix(1, 0)) // the reader ends the connection
	} else if wasIdle {
		s.setReadDeadline()
	}
}

// sameEndpoint checks that targets share one endpoint: an HTTP/2 slot is
// one connection.
func sameEndpoint(ts []Target) error {
	var first string
	for i, t := range ts {
		ep, _, _, err := parseTarget(t.URL)
		if err != nil {
			continue // reported as the target's own error
		}
		key := ep.network + " " + ep.addr + " " + strconv.FormatBool(ep.tls != nil)
		if i == 0 {
			first = key
		} else if key != first {
			return fmt.Errorf("every target must be on the same scheme, host and port with HTTP/2 (one connection per slot carries all its streams); target %d differs", i+1)
		}
	}
	return nil
}

// loadCAs reads the CA certificates of o: CACertPEM when set, else the
// PEM file CACert.
func loadCAs(o Options) (*x509.CertPool, error) {
	b := o.CACertPEM
	if b == nil {
		var err error
		if b, err = userfile.Read(o.CACert, userfile.MaxSize); err != nil {
			return nil, err
		}
	}
	return ParseCACerts(o.CACert, b)
}

// ParseCACerts reads CA certificates from PEM data (name names the file
// in the error): at least one certificate must parse.
func ParseCACerts(name string, pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s (want one or more -----BEGIN CERTIFICATE----- blocks)", name)
	}
	return pool, nil
}

// configureTLS applies the TLS options to a target's client config: ALPN
// for the protocol, verification against a CA file, SNI, resumption.
func configureTLS(cfg *tls.Config, o Options) error {
	if o.Protocol == ProtoH2 {
		cfg.NextProtos = []string{"h2"}
	}
	if o.SNI != "" {
		cfg.ServerName = o.SNI
	}
	if o.CACert != "" || o.CACertPEM != nil {
		pool, err := loadCAs(o)
		if err != nil {
			return fmt.Errorf("cacert %s: %w", o.CACert, err)
		}
		cfg.RootCAs, cfg.InsecureSkipVerify = pool, false
	}
	if o.TLSResume || o.H3ZeroRTT {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1024)
		if o.Protocol == ProtoH3 {
			cfg.ClientSessionCache = h3SessionCache{cfg.ClientSessionCache}
		}
	} else {
		cfg.SessionTicketsDisabled = true
	}
	return nil
}
