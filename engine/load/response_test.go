package load

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// chunkedReader returns its data a few bytes per Read, so the parser sees
// every split point.
type chunkedReader struct {
	data []byte
	step int
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.step, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestReadResponseTable(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		head   bool
		status int
		close  bool
		err    string
	}{
		{name: "length", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", status: 200},
		{name: "no-reason", in: "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", status: 200},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", status: 200},
		{name: "chunked-wins", in: "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: gzip, chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", status: 200},
		{name: "close", in: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", status: 200, close: true},
		{name: "http10", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", status: 200, close: true},
		{name: "http10-keepalive", in: "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", status: 200},
		{name: "until-close", in: "HTTP/1.1 200 OK\r\n\r\nabc", status: 200, close: true},
		{name: "head", in: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", head: true, status: 200},
		{name: "304", in: "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n", status: 304},
		{name: "interim", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", status: 200},
		{name: "bare-lf", in: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", status: 200},
		{name: "bare-lf-mixed", in: "HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nok", status: 200},
		{name: "bare-lf-chunked", in: "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nok\n0\n\n", status: 200},
		{name: "garbage", in: "garbage\r\n\r\n", err: "malformed status line"},
		{name: "garbage-lf", in: "garbage\n\n", err: "malformed status line"},
		{name: "bad-status", in: "HTTP/1.1 2x0 OK\r\n\r\n", err: "malformed status line"},
		{name: "low-status", in: "HTTP/1.1 099 OK\r\n\r\n", err: "malformed status line"},
		{name: "header-no-colon", in: "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n", err: "malformed header line"},
		{name: "conflicting-length", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", err: "Content-Length"},
		{name: "negative-length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: "Content-Length"},
		{name: "truncated", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", err: "mid-response"},
		{name: "truncated-chunk", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", err: "mid-response"},
		{name: "chunk-no-crlf", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", err: "missing CRLF"},
		{name: "huge-chunk-line", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1", 5000), err: "too long"},
		{name: "empty", in: "", err: "before responding"},
		{name: "oversized", in: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", readBufferSize) + "\r\n\r\n", err: "larger than"},
	}
	for _, tc := range cases {
		for _, step := range []int{1, 7, 1 << 20} {
			rd := newReader(&chunkedReader{data: []byte(tc.in), step: step})
			resp, err := rd.readResponse(tc.head)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s (step %d): err = %v, want %q", tc.name, step, err, tc.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (step %d): %v", tc.name, step, err)
				continue
			}
			if resp.status != tc.status || resp.close != tc.close {
				t.Errorf("%s (step %d): status %d close %v, want %d %v", tc.name, step, resp.status, resp.close, tc.status, tc.close)
			}
			if rd.nread != int64(len(tc.in)) {
				t.Errorf("%s (step %d): read %d bytes, want %d", tc.name, step, rd.nread, len(tc.in))
			}
		}
	}
}

// TestPipelinedResponses reads several responses from one stream, which
// checks that each consumes exactly its bytes.
func TestPipelinedResponses(t *testing.T) {
	one := "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 201 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n"
	in := strings.Repeat(one, 500)
	rd := newReader(&chunkedReader{data: []byte(in), step: 1000})
	for i := 0; i < 1000; i++ {
		resp, err := rd.readResponse(false)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if want := 200 + i%2; resp.status != want {
			t.Fatalf("response %d: status %d, want %d", i, resp.status, want)
		}
	}
	if _, err := rd.readResponse(false); !errors.Is(err, errClosedBeforeResponse) {
		t.Errorf("after the last response: %v, want clean close", err)
	}
}

// FuzzParseResponse feeds arbitrary bytes to the response reader: it must
// never panic, never report more bytes than it was given, and either
// succeed with a valid status or fail with a classified error.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.0 404 Not Found\r\n\r\nbody",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"garbage",
	} {
		f.Add([]byte(s), false, uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool, step uint8) {
		rd := newReader(&chunkedReader{data: bytes.Clone(data), step: int(step) + 1})
		resp, err := rd.readResponse(head)
		if rd.nread > int64(len(data)) {
			t.Fatalf("read %d bytes of %d", rd.nread, len(data))
		}
		if err != nil {
			if classify(err, classRead) == classTimeout {
				t.Fatalf("error classified as timeout: %v", err)
			}
			return
		}
		if resp.status < 100 || resp.status > 999 {
			t.Fatalf("accepted status %d", resp.status)
		}
	})
}
