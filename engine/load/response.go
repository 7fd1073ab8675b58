package load

import (
	"bytes"
	"errors"
	"io"
)

// Response parsing: a minimal HTTP/1.1 reader over one reused buffer. It
// understands the status line, Content-Length, chunked bodies, bodies
// delimited by the server closing the connection, HEAD and 1xx/204/304
// responses without bodies, and `Connection: close`. It never allocates on
// the success path.

// Limits of what the reader accepts.
const (
	// readBufferSize is the per-connection read buffer; the whole header
	// block of a response must fit in it.
	readBufferSize = 32 << 10
	// maxChunkLine bounds a chunk-size line (with extensions).
	maxChunkLine = 4 << 10
)

// parseError is a malformed response. It is its own type so errors.As can
// classify it without string matching.
type parseError struct{ msg string }

func (e *parseError) Error() string { return e.msg }

// Preallocated parse errors keep the error path allocation-free too.
var (
	errStatusLine      = &parseError{"malformed status line"}
	errHeaderTooLarge  = &parseError{"response header larger than 32 KiB"}
	errHeaderLine      = &parseError{"malformed header line"}
	errContentLength   = &parseError{"malformed Content-Length"}
	errChunkSize       = &parseError{"malformed chunk size"}
	errChunkLine       = &parseError{"chunk-size line too long"}
	errChunkTerminator = &parseError{"missing CRLF after chunk data"}
	errTooManyInterim  = &parseError{"too many 1xx responses"}
	errHTTP2Answer     = &parseError{`the server answered with an HTTP/2 frame, not an HTTP/1.1 response: it speaks only HTTP/2 on this port (use --h2, protocol = "h2" in a step)`}
)

// looksHTTP2 reports whether b starts with what a server that speaks only
// HTTP/2 sends to a client that does not: its SETTINGS frame (the first
// frame of its connection preface) or a GOAWAY, each on stream 0.
func looksHTTP2(b []byte) bool {
	if len(b) < 9 || b[5]&0x7f != 0 || b[6] != 0 || b[7] != 0 || b[8] != 0 {
		return false
	}
	n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
	switch b[3] {
	case 0x4: // SETTINGS: 6 bytes per setting, or an ACK
		return n%6 == 0 && n <= 16384 && b[4]&^1 == 0
	case 0x7: // GOAWAY: last stream and error code, then debug data
		return n >= 8 && n <= 16384 && b[4] == 0
	}
	return false
}

// errClosedMidResponse is a clean EOF inside a response (a read error).
var errClosedMidResponse = errors.New("server closed the connection mid-response")

// errClosedBeforeResponse is a clean EOF before the first byte of a response.
var errClosedBeforeResponse = errors.New("server closed the connection before responding")

// reader is a connection's response reader. src is swapped when the
// connection is re-established; buf is allocated once.
type reader struct {
	// chk runs the load's response checks (check.go); nil without any.
	chk   *checkState
	src   io.Reader
	buf   []byte
	r, w  int   // unread bytes are buf[r:w]
	nread int64 // bytes read from src since the last reset of the counter
}

func newReader(src io.Reader) *reader {
	return &reader{src: src, buf: make([]byte, readBufferSize)}
}

// reset forgets buffered bytes (used when the connection changes).
func (rd *reader) reset(src io.Reader) {
	rd.src = src
	rd.r, rd.w = 0, 0
}

// fill reads more bytes into the buffer, compacting it first when the
// unread part does not start at 0. It returns io.EOF at a clean end.
func (rd *reader) fill() error {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	} else if rd.w == len(rd.buf) && rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	if rd.w == len(rd.buf) {
		return errHeaderTooLarge
	}
	for i := 0; i < 100; i++ {
		n, err := rd.src.Read(rd.buf[rd.w:])
		if n > 0 {
			rd.w += n
			rd.nread += int64(n)
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// response is what the parser learned about one response.
type response struct {
	status int
	close  bool // the connection cannot be reused
	// checkErr is the first response check the response failed (check.go;
	// nil without checks).
	checkErr error
}

// readResponse reads one complete response (interim 1xx responses are
// skipped) from a blocking source. head says the request was HEAD (no
// body follows).
func (rd *reader) readResponse(head bool) (response, error) {
	p := parser{chk: rd.chk}
	p.begin(head)
	for {
		used, done, err := p.feed(rd.buf[rd.r:rd.w])
		rd.r += used
		if err != nil || done {
			return p.resp, err
		}
		if err := rd.fill(); err != nil {
			if err == io.EOF {
				_, err = p.eof(rd.w - rd.r)
			}
			return p.resp, err
		}
	}
}

// Parser states.
const (
	stHeader     = iota // before the end of a header block
	stLength            // n body bytes left
	stChunkSize         // before a chunk-size line
	stChunkData         // n bytes of chunk data left
	stChunkEnd          // before the CRLF after chunk data
	stTrailer           // trailer lines up to the empty line
	stUntilClose        // body delimited by the end of the connection
	stDone
)

// parser is an incremental HTTP/1.1 response parser: feed it the unread
// bytes whenever more arrive, and it consumes what it can. It holds no
// buffer of its own, so the blocking reader and the event loop share it;
// a header block or chunk-size line must be complete in one feed.
type parser struct {
	st      int
	head    bool
	interim int   // 1xx responses skipped so far
	n       int64 // bytes left in stLength and stChunkData
	scanned int   // header bytes already searched for the blank line
	resp    response
	// chk, when not nil, runs the response checks on what is parsed; it
	// outlives begin.
	chk *checkState
}

// begin prepares the parser for the response to a new request.
func (p *parser) begin(head bool) {
	*p = parser{head: head, chk: p.chk}
	if p.chk != nil {
		p.chk.begin()
	}
}

// feed consumes what it can of b (the unread bytes) and reports how many
// bytes it used and whether the response is complete.
func (p *parser) feed(b []byte) (used int, done bool, err error) {
	for {
		rest := b[used:]
		switch p.st {
		case stHeader:
			from := max(p.scanned-3, 0)
			i := headerEnd(rest[from:])
			if i < 0 {
				if len(rest) >= readBufferSize {
					return used, false, errHeaderTooLarge
				}
				if p.scanned < 9 && looksHTTP2(rest) {
					return used, false, errHTTP2Answer
				}
				p.scanned = len(rest)
				return used, false, nil
			}
			end := from + i
			used += end
			p.scanned = 0
			if err := p.header(rest[:end]); err != nil {
				return used, false, err
			}
		case stLength, stChunkData:
			if int64(len(rest)) < p.n {
				if p.chk != nil {
					p.chk.body(rest)
				}
				p.n -= int64(len(rest))
				return len(b), false, nil
			}
			if p.chk != nil {
				p.chk.body(rest[:p.n])
			}
			used += int(p.n)
			p.n = 0
			if p.st == stLength {
				p.st = stDone
			} else {
				p.st = stChunkEnd
			}
		case stChunkSize, stChunkEnd, stTrailer:
			nl := bytes.IndexByte(rest, '\n')
			if nl < 0 {
				if len(rest) > maxChunkLine {
					return used, false, errChunkLine
				}
				return used, false, nil
			}
			used += nl + 1
			if err := p.line(trimCR(rest[:nl])); err != nil {
				return used, false, err
			}
		case stUntilClose:
			if p.chk != nil {
				p.chk.body(rest)
			}
			return len(b), false, nil
		}
		if p.st == stDone {
			if p.chk != nil {
				p.resp.checkErr = p.chk.verdict()
			}
			return used, true, nil
		}
	}
}

// header applies one complete header block.
func (p *parser) header(block []byte) error {
	resp, bodyMode, length, err := parseHeader(block)
	if err == errStatusLine && looksHTTP2(block) {
		return errHTTP2Answer
	}
	if err != nil {
		return err
	}
	p.resp = resp
	if p.chk != nil && (resp.status >= 200 || resp.status == 101) {
		p.chk.header(block, resp.status)
	}
	switch {
	case resp.status >= 100 && resp.status < 200 && resp.status != 101:
		if p.interim++; p.interim > 8 {
			return errTooManyInterim
		}
	case p.head || resp.status == 204 || resp.status == 304 || resp.status < 200:
		p.st = stDone
	case bodyMode == bodyLength:
		p.st, p.n = stLength, length
		if length == 0 {
			p.st = stDone
		}
	case bodyMode == bodyChunked:
		p.st = stChunkSize
	default:
		p.resp.close = true
		p.st = stUntilClose
	}
	return nil
}

// line applies one line (without its CRLF) of a chunked body.
func (p *parser) line(l []byte) error {
	switch p.st {
	case stChunkSize:
		if i := bytes.IndexByte(l, ';'); i >= 0 {
			l = l[:i]
		}
		size, ok := parseHex(trimSpace(l))
		switch {
		case !ok:
			return errChunkSize
		case size == 0:
			p.st = stTrailer
		default:
			p.st, p.n = stChunkData, size
		}
	case stChunkEnd:
		if len(l) != 0 {
			return errChunkTerminator
		}
		p.st = stChunkSize
	case stTrailer:
		if len(l) == 0 {
			p.st = stDone
		}
	}
	return nil
}

// eof reports how the end of the connection ends the response, given how
// many fed bytes were left unconsumed: it completes a body delimited by
// the close and is an error anywhere else.
func (p *parser) eof(unread int) (done bool, err error) {
	switch {
	case p.st == stUntilClose:
		if p.chk != nil {
			p.resp.checkErr = p.chk.verdict()
		}
		return true, nil
	case p.st == stHeader && p.interim == 0 && unread == 0:
		return false, errClosedBeforeResponse
	}
	return false, errClosedMidResponse
}

const (
	bodyUntilClose = iota
	bodyLength
	bodyChunked
)

// headerEnd returns the length of the header block at the start of b (up
// to and including the empty line), or -1 while it is incomplete. Lines
// may end in CRLF or, leniently (RFC 9112 §2.2), in a bare LF.
func headerEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		k := i + j + 1
		if k < len(b) && b[k] == '\n' {
			return k + 1
		}
		if k+1 < len(b) && b[k] == '\r' && b[k+1] == '\n' {
			return k + 2
		}
		i = k
	}
}

// parseHeader parses a complete header block (status line to the empty
// line, inclusive).
func parseHeader(block []byte) (resp response, bodyMode int, length int64, err error) {
	// Status line: HTTP/1.x SP 3DIGIT [SP reason] CRLF
	nl := bytes.IndexByte(block, '\n')
	if nl < 0 {
		return resp, 0, 0, errStatusLine
	}
	line := trimCR(block[:nl])
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' ||
		(len(line) > 12 && line[12] != ' ') {
		return resp, 0, 0, errStatusLine
	}
	minor := line[7]
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return resp, 0, 0, errStatusLine
		}
		resp.status = resp.status*10 + int(c-'0')
	}
	if resp.status < 100 {
		return resp, 0, 0, errStatusLine
	}
	keepAliveHeader, closeHeader := false, false
	bodyMode = bodyUntilClose
	length = -1
	rest := block[nl+1:]
	for len(rest) > 0 {
		nl = bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return resp, 0, 0, errHeaderLine
		}
		line = trimCR(rest[:nl])
		rest = rest[nl+1:]
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return resp, 0, 0, errHeaderLine
		}
		name, value := line[:colon], trimSpace(line[colon+1:])
		switch {
		case equalFold(name, "content-length"):
			n, ok := parseUint(value)
			if !ok || (length >= 0 && n != length) {
				return resp, 0, 0, errContentLength
			}
			length = n
			if bodyMode != bodyChunked {
				bodyMode = bodyLength
			}
		case equalFold(name, "transfer-encoding"):
			if containsFold(value, "chunked") {
				bodyMode = bodyChunked // chunked wins over Content-Length
			}
		case equalFold(name, "connection"):
			if containsFold(value, "close") {
				closeHeader = true
			} else if containsFold(value, "keep-alive") {
				keepAliveHeader = true
			}
		}
	}
	// HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 closes
	// it unless keep-alive is announced.
	resp.close = closeHeader || (minor == '0' && !keepAliveHeader)
	return resp, bodyMode, length, nil
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold compares b with the lower-case ASCII string s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// containsFold reports whether b contains the lower-case ASCII string s,
// ignoring case.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if equalFold(b[i:i+len(s)], s) {
			return true
		}
	}
	return false
}

func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}
