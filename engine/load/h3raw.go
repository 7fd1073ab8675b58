package load

// HTTP/3's own request path (the raw path). quic-go carries QUIC, the
// connection and its control stream (http3.ClientConn sends the client's
// SETTINGS and reads the server's control stream and GOAWAY); a request
// is benchflow's own: a bidirectional stream, one pre-encoded write (the
// HEADERS frame whose QPACK field section was encoded once per target
// before the load, and the body's DATA frame if any), the send side
// closed, and the response's frames read from a buffer of the stream
// loop's own:
//
//   - HEADERS: only :status is decoded, from static-table references and
//     literals. The field section must not need the dynamic table
//     (Required Insert Count 0): the client's SETTINGS leave
//     QPACK_MAX_TABLE_CAPACITY at 0, so a server may not use one, and a
//     section that does is a parse error. An informational (1xx other
//     than 101) response is skipped, at most h3Max1xx of them; a HEADERS
//     after the final response's (trailers) is skipped undecoded.
//   - DATA: the payload is counted and read into the buffer, never kept.
//   - unknown frame types are skipped (RFC 9114 §9); HTTP/2's reserved
//     types, SETTINGS and GOAWAY on a request stream are errors.
//
// Nothing grows with what the server sends: a HEADERS frame is at most
// h3MaxHeaderBytes, DATA and unknown frames are read through the buffer.
// A GET allocates nothing per request in benchflow's code (quic-go's
// stream has allocations of its own): the timeout is a timer per stream
// loop that cancels the stream, not a context per request.
//
// A request whose body is larger than h3RawMaxBody goes through quic-go's
// http3.ClientConn.RoundTrip (exchangeLib), which writes the body while it
// reads the response: the raw path writes the request before it reads,
// and a large body could wait on the server's flow control while the
// response is already there.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	"golang.org/x/net/http2/hpack"
)

// h3RawMaxBody is the largest request body the raw path writes (with the
// HEADERS frame, before reading the response): well within any server's
// initial stream flow-control window.
const h3RawMaxBody = 16 << 10

// h3ReadBuf is the size of a stream loop's read buffer, made on its first
// exchange: every stream loop of every connection has one (64 connections
// × 100 streams hold 6,400), and a quic-go stream's Read returns what has
// arrived, rarely more than a few packets, so a larger one saves few
// calls.
const h3ReadBuf = 4 << 10

// h3Max1xx bounds the informational responses before the final one (as
// quic-go's client).
const h3Max1xx = 5

// HTTP/3 frame types (RFC 9114 §7.2) and the error code a cancelled
// request's stream is reset with.
const (
	h3FrameData     = 0x0
	h3FrameHeaders  = 0x1
	h3FrameSettings = 0x4
	h3FrameGoaway   = 0x7

	h3RequestCancelled = quic.StreamErrorCode(http3.ErrCodeRequestCanceled)
)

// h3ParseError is a response the raw path cannot read: a malformed or
// unexpected frame or field section (Error class parse, as for HTTP/1.1
// and HTTP/2; the library's RoundTrip returns most of these as plain
// errors, which counted as write errors).
type h3ParseError struct {
	msg  string
	code http3.ErrCode // the stream is reset with it
}

func (e *h3ParseError) Error() string { return "http3: " + e.msg }

var (
	errH3DynamicTable = &h3ParseError{"the response's field section refers to the QPACK dynamic table, which the client did not allow (QPACK_MAX_TABLE_CAPACITY 0)", http3.ErrCodeQPACKDecompressionFailed}
	errH3QPACK        = &h3ParseError{"invalid QPACK field section in the response", http3.ErrCodeQPACKDecompressionFailed}
	errH3NoStatus     = &h3ParseError{"the response's field section has no valid :status", http3.ErrCodeMessageError}
	errH3DataFirst    = &h3ParseError{"DATA frame before the response's HEADERS", http3.ErrCodeFrameUnexpected}
	errH3AfterTrailer = &h3ParseError{"HEADERS or DATA frame after the response's trailers", http3.ErrCodeFrameUnexpected}
	errH3Unexpected   = &h3ParseError{"frame type not allowed on a request stream (HTTP/2's reserved types, SETTINGS, GOAWAY)", http3.ErrCodeFrameUnexpected}
	errH3HeadersSize  = &h3ParseError{"HEADERS frame larger than " + strconv.Itoa(h3MaxHeaderBytes) + " bytes", http3.ErrCodeFrameError}
	errH3Too1xx       = &h3ParseError{"more than " + strconv.Itoa(h3Max1xx) + " informational responses", http3.ErrCodeExcessiveLoad}
)

// The stream ended early: errors of the phase they end (write before the
// response's headers, read in its body), as on the library's path.
var (
	errH3Truncated  = errors.New("http3: the response's stream ended inside a frame")
	errH3NoResponse = errors.New("http3: the response's stream ended before its HEADERS")
)

// h3Stream is what the raw path uses of a request stream (*quic.Stream);
// the tests put a stream in memory in its place.
type h3Stream interface {
	io.ReadWriteCloser
	CancelRead(quic.StreamErrorCode)
	CancelWrite(quic.StreamErrorCode)
}

// encodeH3Request returns the request's frames as written on each
// stream: a HEADERS frame of a QPACK field section that uses no dynamic
// table (static-table references and literals, Required Insert Count 0)
// and, with a body, one DATA frame. The fields are HTTP/2's
// (requestFields).
func encodeH3Request(t Target, host, path string) ([]byte, error) {
	fields, err := requestFields(t, "https", host, path)
	if err != nil {
		return nil, err
	}
	var blk bytes.Buffer
	enc := qpack.NewEncoder(&blk)
	for _, f := range fields {
		if err := enc.WriteField(qpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			return nil, err
		}
	}
	enc.Close()
	b := quicvarint.Append(nil, h3FrameHeaders)
	b = quicvarint.Append(b, uint64(blk.Len()))
	b = append(b, blk.Bytes()...)
	if len(t.Body) > 0 {
		b = quicvarint.Append(b, h3FrameData)
		b = quicvarint.Append(b, uint64(len(t.Body)))
		b = append(b, t.Body...)
	}
	return b, nil
}

// h3Raw is a stream loop's state for its raw exchanges, reused by each:
// the read buffer and the timer that cancels a request's stream at its
// deadline.
type h3Raw struct {
	buf  []byte // h3ReadBuf bytes (nil before the first exchange); buf[r:w] is read and not yet parsed
	r, w int
	err  error  // the stream's read error (io.EOF at its end), once seen
	big  []byte // a HEADERS frame larger than buf (allocated when first needed)
	huff bytes.Buffer
	// chk runs the load's response checks, hit marks the header checks a
	// field matched (h2check.go); nil without checks, without header ones.
	chk *checkState
	hit []bool
	// got counts the response's bytes on the stream: every frame read,
	// its type and length included (the bytes definition of every
	// protocol: what the response takes on the wire after TLS/QUIC).
	got int64

	timer    *time.Timer
	mu       sync.Mutex // guards the fields below, shared with the timer's func
	cur      h3Stream   // the stream in flight, nil between requests
	deadline time.Time
	timedOut bool
}

func newH3Raw() *h3Raw {
	x := &h3Raw{}
	x.timer = time.AfterFunc(time.Hour, x.expire)
	x.timer.Stop()
	return x
}

// stop releases the timer at the end of the stream loop.
func (x *h3Raw) stop() { x.timer.Stop() }

// arm makes str the stream in flight, cancelled at deadline.
func (x *h3Raw) arm(str h3Stream, deadline time.Time) {
	x.mu.Lock()
	x.cur, x.deadline, x.timedOut = str, deadline, false
	x.mu.Unlock()
	x.timer.Reset(time.Until(deadline))
}

// disarm ends the request in flight: whether its deadline cancelled it.
func (x *h3Raw) disarm() bool {
	x.timer.Stop()
	x.mu.Lock()
	x.cur = nil
	to := x.timedOut
	x.mu.Unlock()
	return to
}

// expire cancels the stream in flight if its deadline has passed (a timer
// reset for a later request may still run the func of an earlier one).
func (x *h3Raw) expire() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cur == nil || time.Now().Before(x.deadline) {
		return
	}
	x.timedOut = true
	x.cur.CancelRead(h3RequestCancelled)
	x.cur.CancelWrite(h3RequestCancelled)
}

// exchangeRaw sends one request on a new stream and reads its response to
// the end, cancelling the stream at the shared deadline; its outcomes and
// error classes are exchangeLib's.
func (s *h3Session) exchangeRaw(x *h3Raw, req *request, intended, sent time.Duration) (outcome, int64) {
	r := s.c.r
	deadline := r.startWall.Add(r.deadline(r.origin(intended, sent), sent))
	if !req.h3.early {
		// As RoundTrip: only GET and HEAD with 0-RTT go before the
		// handshake completes (the dial waits for it without 0-RTT).
		select {
		case <-s.qc.HandshakeComplete():
		default:
			if err := s.waitHandshake(deadline); err != nil {
				return outcome{class: h3Class(err, classWrite), err: h3Error(err)}, 0
			}
		}
	}
	str, err := s.qc.OpenStream()
	if err != nil {
		var limit quic.StreamLimitReachedError
		if !errors.As(err, &limit) {
			return outcome{class: h3Class(err, classWrite), err: h3Error(err)}, 0
		}
		// The server's stream limit: wait for a stream (a context
		// only for this wait).
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		str, err = s.qc.OpenStreamSync(ctx)
		cancel()
		if err != nil {
			return outcome{class: h3Class(err, classWrite), err: h3Error(err)}, 0
		}
	}
	x.useChecks(r.checks)
	x.arm(str, deadline)
	status, n, read, err := x.roundTrip(str, req.h3.wire)
	if x.disarm() {
		return outcome{class: classTimeout, err: context.DeadlineExceeded}, n
	}
	if err != nil {
		var pe *h3ParseError
		if errors.As(err, &pe) {
			str.CancelRead(quic.StreamErrorCode(pe.code))
			str.CancelWrite(quic.StreamErrorCode(pe.code))
			return outcome{class: classParse, err: err}, n
		}
		str.CancelRead(h3RequestCancelled)
		str.CancelWrite(h3RequestCancelled)
		phase := classWrite // before the response's headers, as RoundTrip's errors
		if read {
			phase = classRead // reading the body
		}
		class := h3Class(err, phase)
		var se *quic.StreamError
		var ae *quic.ApplicationError
		if class == phase && (errors.As(err, &se) || errors.As(err, &ae)) {
			// A connection closed with an application error code
			// (or a stream error of this side's): the library
			// reports an http3.Error (a parse error), and so does
			// this path. A reset from the server is reset
			// (h3Class).
			class = classParse
		}
		return outcome{class: class, err: h3Error(err)}, n
	}
	if x.chk != nil {
		if err := x.chk.verdict(); err != nil {
			return outcome{status: status, class: classCheck, err: err}, n
		}
	}
	return outcome{status: status}, n
}

// waitHandshake waits for the QUIC handshake until deadline.
func (s *h3Session) waitHandshake(deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	select {
	case <-s.qc.HandshakeComplete():
		return nil
	case <-s.qc.Context().Done():
		return context.Cause(s.qc.Context())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// roundTrip writes the request's frames on str, closes its send side and
// reads the response: its status, the bytes of its frames (types and
// lengths included: x.got), and whether the
// final response's HEADERS had been read (an error after it is a read
// error, before it a write error, as on the library's path).
func (x *h3Raw) roundTrip(str h3Stream, wire []byte) (status int, n int64, final bool, err error) {
	x.r, x.w, x.err, x.got = 0, 0, nil, 0
	if x.chk != nil {
		x.chk.begin()
	}
	if x.buf == nil {
		x.buf = make([]byte, h3ReadBuf)
	}
	// As the library's client, the response is read whatever the write
	// and the close return: a server that answered before the request's
	// end may have stopped its reading (STOP_SENDING), and a stream or
	// connection that failed fails the read as well.
	if _, err := str.Write(wire); err == nil {
		str.Close()
	}
	n1xx := 0
	trailers := false
	for {
		typ, length, err := x.frameHeader(str)
		if err == io.EOF {
			if !final {
				return 0, x.got, false, errH3NoResponse
			}
			return status, x.got, true, nil
		}
		if err != nil {
			return 0, x.got, final, err
		}
		if trailers && (typ == h3FrameHeaders || typ == h3FrameData) {
			return 0, x.got, final, errH3AfterTrailer
		}
		switch typ {
		case h3FrameHeaders:
			if length > h3MaxHeaderBytes {
				return 0, x.got, final, errH3HeadersSize
			}
			if final { // trailers
				trailers = true
				if _, err := x.skip(str, length); err != nil {
					return 0, x.got, final, err
				}
				continue
			}
			p, err := x.payload(str, int(length))
			if err != nil {
				return 0, x.got, final, err
			}
			st, err := x.decodeStatus(p)
			if err != nil {
				return 0, x.got, final, err
			}
			if st >= 100 && st < 200 && st != 101 {
				if n1xx++; n1xx > h3Max1xx {
					return 0, x.got, final, errH3Too1xx
				}
				continue
			}
			status, final = st, true
			if x.chk != nil {
				if err := x.checkFields(p, st); err != nil {
					return 0, x.got, final, err
				}
			}
		case h3FrameData:
			if !final {
				return 0, x.got, false, errH3DataFirst
			}
			if _, err := x.data(str, length); err != nil {
				return 0, x.got, final, err
			}
		case 0x2, 0x6, 0x8, 0x9, h3FrameSettings, h3FrameGoaway:
			return 0, x.got, final, errH3Unexpected
		default: // unknown or unused (CANCEL_PUSH, PUSH_PROMISE, MAX_PUSH_ID: skipped, as quic-go's client does)
			if _, err := x.skip(str, length); err != nil {
				return 0, x.got, final, err
			}
		}
	}
}

// fill reads more of the stream into buf[w:]; io.EOF at its end.
func (x *h3Raw) fill(str h3Stream) error {
	if x.err != nil {
		return x.err
	}
	m, err := str.Read(x.buf[x.w:])
	x.w += m
	if err != nil {
		x.err = err
		if m > 0 {
			return nil
		}
	}
	return err
}

// compact moves the unparsed bytes to the start of buf.
func (x *h3Raw) compact() {
	if x.r > 0 {
		x.w = copy(x.buf, x.buf[x.r:x.w])
		x.r = 0
	}
}

// varint parses a QUIC variable-length integer from the buffer, reading
// more as needed; at the start of a frame, io.EOF when the stream ended.
func (x *h3Raw) varint(str h3Stream, first bool) (uint64, error) {
	for x.r == x.w {
		x.r, x.w = 0, 0
		if err := x.fill(str); err != nil {
			if err == io.EOF && !first {
				return 0, errH3Truncated
			}
			return 0, err
		}
	}
	need := 1 << (x.buf[x.r] >> 6)
	for x.w-x.r < need {
		x.compact()
		if err := x.fill(str); err != nil {
			if err == io.EOF {
				return 0, errH3Truncated
			}
			return 0, err
		}
	}
	v, _, err := quicvarint.Parse(x.buf[x.r : x.r+need])
	x.r += need
	x.got += int64(need)
	return v, err
}

// frameHeader reads a frame's type and length; io.EOF at the end of the
// stream between frames.
func (x *h3Raw) frameHeader(str h3Stream) (typ, length uint64, err error) {
	if typ, err = x.varint(str, true); err != nil {
		return 0, 0, err
	}
	length, err = x.varint(str, false)
	return typ, length, err
}

// payload returns the next length bytes (a HEADERS frame's), valid until
// the next read.
func (x *h3Raw) payload(str h3Stream, length int) ([]byte, error) {
	if length > len(x.buf) {
		if x.big == nil {
			x.big = make([]byte, h3MaxHeaderBytes)
		}
		k := copy(x.big, x.buf[x.r:x.w])
		x.r, x.w = 0, 0
		if k < length {
			if x.err == io.EOF {
				return nil, errH3Truncated
			}
			if x.err != nil {
				return nil, x.err
			}
			if _, err := io.ReadFull(str, x.big[k:length]); err != nil {
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					return nil, errH3Truncated
				}
				return nil, err
			}
		}
		x.got += int64(length)
		return x.big[:length], nil
	}
	if x.w-x.r < length {
		x.compact()
		for x.w < length {
			if err := x.fill(str); err != nil {
				if err == io.EOF {
					return nil, errH3Truncated
				}
				return nil, err
			}
		}
	}
	p := x.buf[x.r : x.r+length]
	x.r += length
	x.got += int64(length)
	return p, nil
}

// skip discards the next length bytes of the stream, reading them
// through the buffer, and returns how many it got through.
func (x *h3Raw) skip(str h3Stream, length uint64) (uint64, error) {
	var done uint64
	for {
		avail := uint64(x.w - x.r)
		if avail >= length {
			x.r += int(length)
			x.got += int64(length)
			return done + length, nil
		}
		length -= avail
		done += avail
		x.got += int64(avail)
		x.r, x.w = 0, 0
		if err := x.fill(str); err != nil {
			if err == io.EOF {
				return done, errH3Truncated
			}
			return done, err
		}
	}
}

// qpackStatus is the :status of the static table's entries (RFC 9204
// Appendix A), 0 for the others: entries 24 to 28 and 63 to 71.
var qpackStatus = func() (t [qpackStaticLen]int) {
	for i, v := range map[int]int{24: 103, 25: 200, 26: 304, 27: 404, 28: 503,
		63: 100, 64: 204, 65: 206, 66: 302, 67: 400, 68: 403, 69: 421, 70: 425, 71: 500} {
		t[i] = v
	}
	return t
}()

// qpackStaticLen is the number of entries in QPACK's static table.
const qpackStaticLen = 99

// decodeStatus reads a QPACK field section (RFC 9204 §4.5) for its
// :status and checks that it needs no dynamic table; the other fields are
// skipped undecoded. A section without a valid :status is an error.
func (x *h3Raw) decodeStatus(p []byte) (int, error) {
	ric, p, err := qpackInt(p, 8) // Required Insert Count
	if err != nil {
		return 0, err
	}
	if ric != 0 {
		return 0, errH3DynamicTable
	}
	if len(p) == 0 {
		return 0, errH3QPACK
	}
	if _, p, err = qpackInt(p, 7); err != nil { // sign and Delta Base: no table, no base
		return 0, err
	}
	status := 0
	for len(p) > 0 {
		b := p[0]
		var i uint64
		switch {
		case b&0xc0 == 0xc0: // indexed field line, static table
			if i, p, err = qpackInt(p, 6); err != nil {
				return 0, err
			}
			if i >= qpackStaticLen {
				return 0, errH3QPACK
			}
			if st := qpackStatus[i]; st != 0 && status == 0 {
				status = st
			}
		case b&0xd0 == 0x50: // literal field line with a static name reference
			if i, p, err = qpackInt(p, 4); err != nil {
				return 0, err
			}
			if i >= qpackStaticLen {
				return 0, errH3QPACK
			}
			var v []byte
			var huff bool
			if v, huff, p, err = qpackString(p, 7); err != nil {
				return 0, err
			}
			if qpackStatus[i] != 0 && status == 0 {
				if status, err = x.statusValue(v, huff); err != nil {
					return 0, err
				}
			}
		case b&0xe0 == 0x20: // literal field line with a literal name
			var name, v []byte
			var nh, vh bool
			if name, nh, p, err = qpackString(p, 3); err != nil {
				return 0, err
			}
			if v, vh, p, err = qpackString(p, 7); err != nil {
				return 0, err
			}
			if status == 0 && x.isStatusName(name, nh) {
				if status, err = x.statusValue(v, vh); err != nil {
					return 0, err
				}
			}
		default: // 10xxxxxx, 0001xxxx, 0000xxxx, 01x0xxxx: the dynamic table
			return 0, errH3DynamicTable
		}
	}
	if status == 0 {
		return 0, errH3NoStatus
	}
	return status, nil
}

// isStatusName reports whether a literal name is ":status".
func (x *h3Raw) isStatusName(name []byte, huff bool) bool {
	if !huff {
		return string(name) == ":status"
	}
	if len(name) > 8 { // ":status" is 6 bytes Huffman-coded
		return false
	}
	x.huff.Reset()
	if _, err := hpack.HuffmanDecode(&x.huff, name); err != nil {
		return false
	}
	return x.huff.String() == ":status"
}

// statusValue parses a :status value: three digits.
func (x *h3Raw) statusValue(v []byte, huff bool) (int, error) {
	if huff {
		if len(v) > 4 { // three digits are at most 3 bytes Huffman-coded
			return 0, errH3NoStatus
		}
		x.huff.Reset()
		if _, err := hpack.HuffmanDecode(&x.huff, v); err != nil {
			return 0, errH3QPACK
		}
		v = x.huff.Bytes()
	}
	if len(v) != 3 {
		return 0, errH3NoStatus
	}
	st := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, errH3NoStatus
		}
		st = st*10 + int(c-'0')
	}
	if st < 100 {
		return 0, errH3NoStatus
	}
	return st, nil
}

// qpackInt decodes a QPACK (HPACK) integer with an n-bit prefix (RFC 7541
// §5.1), bounded to 62 bits.
func qpackInt(p []byte, n uint8) (uint64, []byte, error) {
	if len(p) == 0 {
		return 0, p, errH3QPACK
	}
	mask := uint64(1)<<n - 1
	v := uint64(p[0]) & mask
	p = p[1:]
	if v < mask {
		return v, p, nil
	}
	for shift := uint(0); ; shift += 7 {
		if len(p) == 0 || shift > 56 {
			return 0, p, errH3QPACK
		}
		b := p[0]
		p = p[1:]
		v += uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v, p, nil
		}
	}
}

// qpackString splits off a string literal whose length has an n-bit
// prefix, the Huffman flag the bit above it.
func qpackString(p []byte, n uint8) (s []byte, huff bool, rest []byte, err error) {
	if len(p) == 0 {
		return nil, false, p, errH3QPACK
	}
	huff = p[0]&(1<<n) != 0
	l, p, err := qpackInt(p, n)
	if err != nil {
		return nil, false, p, err
	}
	if l > uint64(len(p)) {
		return nil, false, p, errH3QPACK
	}
	return p[:l], huff, p[l:], nil
}
