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
)

// errClosedMidResponse is a clean EOF inside a response (a read error).
var errClosedMidResponse = errors.New("server closed the connection mid-response")

// errClosedBeforeResponse is a clean EOF before the first byte of a response.
var errClosedBeforeResponse = errors.New("server closed the connection before responding")

// reader is a connection's response reader. src is swapped when the
// connection is re-established; buf is allocated once.
type reader struct {
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

// response is what readResponse learned about one response.
type response struct {
	status int
	close  bool // the connection cannot be reused
}

// readResponse reads one complete response (interim 1xx responses are
// skipped). head says the request was HEAD (no body follows).
func (rd *reader) readResponse(head bool) (response, error) {
	for interim := 0; ; interim++ {
		if interim > 8 {
			return response{}, errTooManyInterim
		}
		resp, bodyMode, length, err := rd.readHeader(interim == 0)
		if err != nil {
			return resp, err
		}
		if resp.status >= 100 && resp.status < 200 && resp.status != 101 {
			continue
		}
		if head || resp.status == 204 || resp.status == 304 || resp.status < 200 {
			return resp, nil
		}
		switch bodyMode {
		case bodyLength:
			err = rd.discard(length)
		case bodyChunked:
			err = rd.discardChunked()
		case bodyUntilClose:
			resp.close = true
			err = rd.discardUntilEOF()
		}
		return resp, err
	}
}

const (
	bodyUntilClose = iota
	bodyLength
	bodyChunked
)

// readHeader reads the status line and headers and consumes them from the
// buffer. first reports whether this is the first header block of the
// exchange (an EOF before any byte is then errClosedBeforeResponse).
func (rd *reader) readHeader(first bool) (resp response, bodyMode int, length int64, err error) {
	scanned := rd.r
	var end int
	for {
		if i := bytes.Index(rd.buf[scanned:rd.w], crlfcrlf); i >= 0 {
			end = scanned + i + 4
			break
		}
		if rd.w-4 > scanned {
			scanned = rd.w - 4
		}
		before := rd.r
		if err = rd.fill(); err != nil {
			if err == io.EOF {
				if first && rd.r == rd.w {
					err = errClosedBeforeResponse
				} else {
					err = errClosedMidResponse
				}
			}
			return resp, 0, 0, err
		}
		scanned -= before - rd.r // the buffer may have been compacted
		if scanned < rd.r {
			scanned = rd.r
		}
	}
	block := rd.buf[rd.r:end]
	rd.r = end
	resp, bodyMode, length, err = parseHeader(block)
	return resp, bodyMode, length, err
}

var crlfcrlf = []byte("\r\n\r\n")

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

// discard consumes n body bytes.
func (rd *reader) discard(n int64) error {
	for n > 0 {
		if rd.r == rd.w {
			if err := rd.fill(); err != nil {
				if err == io.EOF {
					err = errClosedMidResponse
				}
				return err
			}
		}
		avail := int64(rd.w - rd.r)
		if avail > n {
			rd.r += int(n)
			return nil
		}
		n -= avail
		rd.r, rd.w = 0, 0
	}
	return nil
}

// discardUntilEOF consumes a body delimited by the end of the connection.
func (rd *reader) discardUntilEOF() error {
	for {
		rd.r, rd.w = 0, 0
		if err := rd.fill(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// line returns the next line (without CRLF) and consumes it. The line must
// fit in max bytes.
func (rd *reader) line(max int, tooLong error) ([]byte, error) {
	scanned := rd.r
	for {
		if i := bytes.IndexByte(rd.buf[scanned:rd.w], '\n'); i >= 0 {
			end := scanned + i
			l := trimCR(rd.buf[rd.r:end])
			rd.r = end + 1
			return l, nil
		}
		if rd.w-rd.r > max {
			return nil, tooLong
		}
		before := rd.r
		scanned = rd.w
		if err := rd.fill(); err != nil {
			if err == io.EOF || err == errHeaderTooLarge {
				if err == io.EOF {
					err = errClosedMidResponse
				} else {
					err = tooLong
				}
			}
			return nil, err
		}
		scanned -= before - rd.r
	}
}

// discardChunked consumes a chunked body including trailers.
func (rd *reader) discardChunked() error {
	for {
		l, err := rd.line(maxChunkLine, errChunkLine)
		if err != nil {
			return err
		}
		if i := bytes.IndexByte(l, ';'); i >= 0 {
			l = l[:i]
		}
		l = trimSpace(l)
		size, ok := parseHex(l)
		if !ok {
			return errChunkSize
		}
		if size == 0 {
			// Trailers up to the empty line.
			for {
				t, err := rd.line(maxChunkLine, errChunkLine)
				if err != nil {
					return err
				}
				if len(t) == 0 {
					return nil
				}
			}
		}
		if err := rd.discard(size); err != nil {
			return err
		}
		t, err := rd.line(maxChunkLine, errChunkLine)
		if err != nil {
			return err
		}
		if len(t) != 0 {
			return errChunkTerminator
		}
	}
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
