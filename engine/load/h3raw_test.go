package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
)

// memStream is a request stream in memory: Read hands out resp at most
// chunk bytes at a time, then err (io.EOF by default); Write and Close
// record nothing.
type memStream struct {
	resp      []byte
	off       int
	chunk     int
	err       error
	cancelled quic.StreamErrorCode
}

func (m *memStream) Read(p []byte) (int, error) {
	if m.off == len(m.resp) {
		if m.err != nil {
			return 0, m.err
		}
		return 0, io.EOF
	}
	n := min(len(p), len(m.resp)-m.off)
	if m.chunk > 0 {
		n = min(n, m.chunk)
	}
	copy(p, m.resp[m.off:m.off+n])
	m.off += n
	return n, nil
}
func (m *memStream) Write(p []byte) (int, error)        { return len(p), nil }
func (m *memStream) Close() error                       { return nil }
func (m *memStream) CancelRead(c quic.StreamErrorCode)  { m.cancelled = c }
func (m *memStream) CancelWrite(c quic.StreamErrorCode) { m.cancelled = c }
func (m *memStream) reset(resp []byte, chunk int) *memStream {
	m.resp, m.off, m.chunk, m.err = resp, 0, chunk, nil
	return m
}

// h3Frame is one HTTP/3 frame.
func h3Frame(typ uint64, payload []byte) []byte {
	b := quicvarint.Append(nil, typ)
	b = quicvarint.Append(b, uint64(len(payload)))
	return append(b, payload...)
}

// qpackSection encodes fields as quic-go's encoder does (static table and
// literals, Huffman-coded).
func qpackSection(fields ...string) []byte {
	var b bytes.Buffer
	enc := qpack.NewEncoder(&b)
	for i := 0; i < len(fields); i += 2 {
		enc.WriteField(qpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return b.Bytes()
}

func h3Headers(fields ...string) []byte { return h3Frame(h3FrameHeaders, qpackSection(fields...)) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestH3RawResponses: the raw path's reader against responses built frame
// by frame, each read whole and in chunks of 1 and 7 bytes: the status
// from each way QPACK can say it, bodies across reads, 1xx skipped,
// trailers and unknown frames skipped; and what it refuses.
func TestH3RawResponses(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	// :status 299 as a literal with a literal name, neither Huffman-coded.
	plain := cat([]byte{0, 0, 0x20 | 7, 0}, // length 7 fills the 3-bit prefix: a continuation byte follows
		[]byte(":status"), []byte{3}, []byte("299"))
	for _, c := range []struct {
		name   string
		resp   []byte
		status int
		n      int64
		err    error
	}{
		{"200 indexed, no body", h3Headers(":status", "200"), 200, 0, nil},
		{"404 with body", cat(h3Headers(":status", "404", "content-type", "text/plain"), h3Frame(h3FrameData, []byte("nope"))), 404, 4, nil},
		{"503 indexed", h3Headers(":status", "503"), 503, 0, nil},
		{"418 literal value", cat(h3Headers(":status", "418", "server", "x"), h3Frame(h3FrameData, []byte("tea"))), 418, 3, nil},
		{"literal name", cat(h3Frame(h3FrameHeaders, plain), h3Frame(h3FrameData, []byte("ok"))), 299, 2, nil},
		{"64 KiB body in frames", cat(h3Headers(":status", "200"), h3Frame(h3FrameData, body[:40000]), h3Frame(h3FrameData, nil), h3Frame(h3FrameData, body[40000:])), 200, int64(len(body)), nil},
		{"1xx skipped", cat(h3Headers(":status", "103", "link", "</a>"), h3Headers(":status", "100"), h3Headers(":status", "204")), 204, 0, nil},
		{"trailers skipped", cat(h3Headers(":status", "200"), h3Frame(h3FrameData, []byte("abc")), h3Headers("x-checksum", "1")), 200, 3, nil},
		{"unknown frames skipped", cat(h3Frame(0x21, []byte("grease")), h3Headers(":status", "200"), h3Frame(0x5, []byte{1, 2}), h3Frame(h3FrameData, []byte("x")), h3Frame(0x1f*7+0x21, nil)), 200, 1, nil},
		{"no response", nil, 0, 0, errH3NoResponse},
		{"DATA first", h3Frame(h3FrameData, []byte("x")), 0, 0, errH3DataFirst},
		{"too many 1xx", cat(bytes.Repeat(h3Headers(":status", "100"), 6), h3Headers(":status", "200")), 0, 0, errH3Too1xx},
		{"no status", h3Headers("server", "x"), 0, 0, errH3NoStatus},
		{"status not a number", h3Headers(":status", "2x0"), 0, 0, errH3NoStatus},
		{"dynamic table", h3Frame(h3FrameHeaders, []byte{1, 0, 0xc0 | 25}), 0, 0, errH3DynamicTable},
		{"dynamic index", h3Frame(h3FrameHeaders, []byte{0, 0, 0x80 | 1}), 0, 0, errH3DynamicTable},
		{"post-base index", h3Frame(h3FrameHeaders, []byte{0, 0, 0x10}), 0, 0, errH3DynamicTable},
		{"static index out of range", h3Frame(h3FrameHeaders, []byte{0, 0, 0xff, 0x30}), 0, 0, errH3QPACK},
		{"string past the section", h3Frame(h3FrameHeaders, []byte{0, 0, 0x50 | 0xf, 10, 9, '2'}), 0, 0, errH3QPACK},
		{"HEADERS too big", cat(quicvarint.Append(quicvarint.Append(nil, h3FrameHeaders), h3MaxHeaderBytes+1)), 0, 0, errH3HeadersSize},
		{"huge DATA, stream ends", cat(h3Headers(":status", "200"), quicvarint.Append(quicvarint.Append(nil, h3FrameData), 1<<62-1), []byte("abc")), 0, 3, errH3Truncated},
		{"huge unknown frame, stream ends", cat(h3Headers(":status", "200"), quicvarint.Append(quicvarint.Append(nil, 0x21), 1<<40)), 0, 0, errH3Truncated},
		{"truncated frame header", cat(h3Headers(":status", "200"), []byte{0x40}), 0, 0, errH3Truncated},
		{"truncated HEADERS", h3Headers(":status", "200", "server", "abcdef")[:6], 0, 0, errH3Truncated},
		{"reserved HTTP/2 type", cat(h3Headers(":status", "200"), h3Frame(0x6, []byte{0})), 0, 0, errH3Unexpected},
		{"SETTINGS", h3Frame(h3FrameSettings, nil), 0, 0, errH3Unexpected},
		{"frame after trailers", cat(h3Headers(":status", "200"), h3Headers("a", "b"), h3Frame(h3FrameData, []byte("x"))), 0, 0, errH3AfterTrailer},
	} {
		for _, chunk := range []int{0, 1, 7} {
			x := newH3Raw()
			st, n, _, err := x.roundTrip(new(memStream).reset(c.resp, chunk), nil)
			// bytes are the frames read, types and lengths included:
			// the whole response when it is read to its end.
			want := int64(len(c.resp))
			if !errors.Is(err, c.err) || (c.err == nil && st != c.status) || (c.err == nil && n != want) || n > want {
				t.Errorf("%s (reads of %d): status %d, %d bytes, error %v; want %d, %d, %v", c.name, chunk, st, n, err, c.status, want, c.err)
			}
		}
	}
}

// TestH3RawBigHeaders: a HEADERS frame larger than the read buffer (and
// within h3MaxHeaderBytes) is read into a buffer of its own.
func TestH3RawBigHeaders(t *testing.T) {
	resp := cat(h3Headers(":status", "201", "x-big", strings.Repeat("v", 40000)), h3Frame(h3FrameData, []byte("ok")))
	for _, chunk := range []int{0, 1000} {
		st, n, _, err := newH3Raw().roundTrip(new(memStream).reset(resp, chunk), nil)
		if err != nil || st != 201 || n != int64(len(resp)) {
			t.Errorf("reads of %d: status %d, %d bytes, %v; want 201, %d (the frames), no error", chunk, st, n, err, len(resp))
		}
	}
}

// TestH3RawStreamReset: a stream the server resets ends the exchange with
// the stream's error, and the reader says whether the response's headers
// had been read (a read error) or not (a write error, as RoundTrip's).
func TestH3RawStreamReset(t *testing.T) {
	reset := &quic.StreamError{StreamID: 0, ErrorCode: 0x10c, Remote: true}
	for _, c := range []struct {
		resp  []byte
		final bool
	}{{nil, false}, {cat(h3Headers(":status", "200"), h3Frame(h3FrameData, []byte("abc"))[:3]), true}} {
		m := new(memStream).reset(c.resp, 0)
		m.err = reset
		_, _, final, err := newH3Raw().roundTrip(m, nil)
		if !errors.Is(err, reset) || final != c.final {
			t.Errorf("reset after %d bytes: error %v, after the headers %v; want the reset, %v", len(c.resp), err, final, c.final)
		}
	}
}

// TestH3RawNoAllocation: a raw exchange's own work (arm the deadline,
// write, read and decode the response, disarm) allocates nothing, for a
// response as quic-go's server and Caddy send it, with a body across
// several reads.
func TestH3RawNoAllocation(t *testing.T) {
	wire, err := encodeH3Request(Target{URL: "https://127.0.0.1:1/6b"}, "127.0.0.1:1", "/6b")
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []int{6, 64 << 10} {
		resp := cat(h3Headers(":status", "200", "content-type", "application/octet-stream", "content-length", fmt.Sprint(body),
			"date", "Mon, 07 Dec 2026 03:00:00 GMT", "server", "Caddy", "etag", `"t7m6cq6"`),
			h3Frame(h3FrameData, make([]byte, body)))
		x := newH3Raw()
		m := new(memStream)
		allocs := testing.AllocsPerRun(1000, func() {
			x.arm(m.reset(resp, 1200), time.Now().Add(time.Minute))
			st, n, _, err := x.roundTrip(m, wire)
			if x.disarm() || err != nil || st != 200 || n != int64(len(resp)) {
				t.Fatalf("status %d, %d bytes, %v", st, n, err)
			}
		})
		x.stop()
		if allocs != 0 {
			t.Errorf("body %d: %.1f allocations per raw exchange, want 0", body, allocs)
		}
	}
}

// TestH3RawDeadline: the deadline's timer cancels the stream in flight
// and says so; a disarmed timer cancels nothing.
func TestH3RawDeadline(t *testing.T) {
	x := newH3Raw()
	defer x.stop()
	m := new(memStream)
	x.arm(m, time.Now().Add(10*time.Millisecond))
	time.Sleep(50 * time.Millisecond)
	if !x.disarm() || m.cancelled != h3RequestCancelled {
		t.Errorf("past the deadline: not timed out or stream not cancelled (code %#x)", m.cancelled)
	}
	m2 := new(memStream)
	x.arm(m2, time.Now().Add(20*time.Millisecond))
	if x.disarm() {
		t.Error("disarmed before the deadline: timed out")
	}
	time.Sleep(40 * time.Millisecond)
	if m2.cancelled != 0 {
		t.Error("a disarmed timer cancelled the stream")
	}
}

// TestH3RequestWire: the request's frames decode (with quic-go's QPACK
// decoder) to the pseudo-header fields and the target's headers, without
// the connection-specific ones, the Host header as :authority, and a body
// in a DATA frame with its Content-Length.
func TestH3RequestWire(t *testing.T) {
	wire, err := encodeH3Request(Target{Method: "POST", Body: []byte("a=1"), Headers: [][2]string{
		{"Host", "example.test"}, {"X-Token", "t"}, {"Connection", "close"}}}, "127.0.0.1:8443", "/p?q=1")
	if err != nil {
		t.Fatal(err)
	}
	typ, l, err := quicvarint.Parse(wire)
	if err != nil || typ != h3FrameHeaders {
		t.Fatalf("first frame type %d (%v), want HEADERS", typ, err)
	}
	wire = wire[l:]
	n, l, _ := quicvarint.Parse(wire)
	sec, rest := wire[l:l+int(n)], wire[l+int(n):]
	var got []string
	dec := qpack.NewDecoder().Decode(sec)
	for {
		f, err := dec()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.Name+"="+f.Value)
	}
	if want := ":method=POST :scheme=https :authority=example.test :path=/p?q=1 x-token=t content-length=3"; strings.Join(got, " ") != want {
		t.Errorf("fields %q, want %q", strings.Join(got, " "), want)
	}
	if !bytes.Equal(rest, h3Frame(h3FrameData, []byte("a=1"))) {
		t.Errorf("after the HEADERS frame: %q, want the body's DATA frame", rest)
	}
	if sec[0] != 0 {
		t.Errorf("Required Insert Count %d, want 0", sec[0])
	}
}

// runH3Both runs opts once on the raw path and once through the library's
// RoundTrip.
func runH3Both(t *testing.T, opts Options) (raw, lib *Result) {
	t.Helper()
	var err error
	if raw, err = Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	h3LibraryOnly = true
	defer func() { h3LibraryOnly = false }()
	if lib, err = Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	return raw, lib
}

// TestH3RawAgainstHTTP3Server: against quic-go's http3.Server the raw path
// counts what the library's path counts: status classes, body bytes of
// empty, small and 64 KiB bodies, informational responses and trailers
// skipped, HEAD and a POST with its body.
func TestH3RawAgainstHTTP3Server(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 64<<10)
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/empty":
		case "/404":
			http.NotFound(w, r)
		case "/503":
			w.WriteHeader(503)
		case "/big":
			w.Write(big)
		case "/early":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			w.Write([]byte("after hints"))
		case "/trailer":
			w.Header().Set("Trailer", "X-Sum")
			w.Write([]byte("body"))
			w.Header().Set("X-Sum", "42")
		case "/post":
			b, _ := io.ReadAll(r.Body)
			if r.Method != "POST" || string(b) != "k=v" || r.Header.Get("X-A") != "b" {
				w.WriteHeader(400)
			}
			w.Write(b)
		default:
			w.Write([]byte("hello!"))
		}
	}))
	for _, c := range []struct {
		t      Target
		status int
		bytes  int64
	}{
		{Target{URL: url + "/"}, 200, 6},
		{Target{URL: url + "/empty"}, 200, 0},
		{Target{URL: url + "/404"}, 404, 19},
		{Target{URL: url + "/503"}, 503, 0},
		{Target{URL: url + "/big"}, 200, 64 << 10},
		{Target{URL: url + "/early"}, 200, 11},
		{Target{URL: url + "/trailer"}, 200, 4},
		{Target{URL: url + "/big", Method: "HEAD"}, 200, 0},
		{Target{URL: url + "/post", Method: "POST", Body: []byte("k=v"), Headers: [][2]string{{"X-A", "b"}}}, 200, 3},
	} {
		raw, lib := runH3Both(t, Options{Targets: []Target{c.t}, Protocol: ProtoH3, Connections: 2, Streams: 4, Requests: 40, Timeout: 10 * time.Second})
		for _, res := range []struct {
			name string
			r    *Result
		}{{"raw", raw}, {"library", lib}} {
			r := res.r
			// bytes: the body and the frames carrying it and the
			// response's headers (a few dozen bytes of QPACK).
			if r.Requests != 40 || r.Status[c.status] != 40 || r.Bytes < 40*(c.bytes+3) || r.Bytes > 40*(c.bytes+200) || r.ErrorsBy["read"]+r.ErrorsBy["write"]+r.ErrorsBy["parse"]+r.ErrorsBy["timeout"] != 0 {
				t.Errorf("%s %s (%s): requests %d, status %v, bytes %d, errors %v; want 40 of %d, %d bytes of body and their frames",
					c.t.Method, c.t.URL, res.name, r.Requests, r.Status, r.Bytes, r.ErrorsBy, c.status, 40*c.bytes)
			}
		}
		t.Logf("%s %s: %d bytes per response (raw), %d (library, estimated)", c.t.Method, c.t.URL, raw.Bytes/40, lib.Bytes/40)
		// The library's estimate is exact for a response of one HEADERS
		// and at most one DATA frame; informational responses and
		// trailers it cannot see.
		if !strings.HasSuffix(c.t.URL, "/early") && !strings.HasSuffix(c.t.URL, "/trailer") && raw.Bytes != lib.Bytes {
			t.Errorf("%s %s: %d bytes on the raw path, %d estimated on the library's", c.t.Method, c.t.URL, raw.Bytes, lib.Bytes)
		}
	}
}

// TestH3RawLargeBodyFallsBack: a request body over h3RawMaxBody goes
// through the library's RoundTrip, and arrives whole.
func TestH3RawLargeBodyFallsBack(t *testing.T) {
	body := bytes.Repeat([]byte("b"), h3RawMaxBody+1)
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Equal(b, body) {
			w.WriteHeader(400)
		}
	}))
	q, err := buildH3Request(Target{URL: url + "/", Method: "PUT", Body: body}, "h", "/", false)
	if err != nil || q.wire != nil {
		t.Fatalf("a %d-byte body has a raw form (%v)", len(body), err)
	}
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: url + "/", Method: "PUT", Body: body}}, Protocol: ProtoH3, Connections: 1, Requests: 10})
	if err != nil || res.Status[200] != 10 || res.Errors != 0 {
		t.Fatalf("status %v, errors %v (%v), want 10 200s", res.Status, res.ErrorsBy, err)
	}
}

// TestH3RawTimeoutRule: a response that comes after the timeout is a
// timeout on the raw path, not a success (the stream is cancelled at the
// deadline), and the server sees the cancellation.
func TestH3RawTimeoutRule(t *testing.T) {
	cancelled := make(chan struct{}, 16)
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
			w.Write([]byte("late"))
		case <-r.Context().Done():
			cancelled <- struct{}{}
		}
	}))
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 1, Streams: 2, Requests: 4, Timeout: 100 * time.Millisecond})
	if res == nil || res.ErrorsBy["timeout"] != 4 || res.Requests != 0 {
		t.Fatalf("result %+v (%v): want 4 timeouts and no response", res, err)
	}
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Error("the server did not see a timed-out request's stream cancelled")
	}
}

// hostileH3Server is a QUIC server that answers each request stream with
// the bytes answer returns for it, then ends the stream (a FIN, or a
// reset when answer says so); it sends no control stream (the client
// does not wait for one).
func hostileH3Server(t *testing.T, answer func(path string) (resp []byte, reset bool)) string {
	t.Helper()
	ln := h3TestListener(t)
	go func() {
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					str, err := qc.AcceptStream(context.Background())
					if err != nil {
						return
					}
					go func() {
						req, _ := io.ReadAll(str)
						path := "/"
						if i := bytes.Index(req, []byte("/")); i >= 0 {
							path = string(req[i:]) // the :path literal (the test paths are short, so not Huffman-coded)
						}
						resp, reset := answer(path)
						str.Write(resp)
						if reset {
							str.CancelWrite(0x10c)
							return
						}
						str.Close()
					}()
				}
			}()
		}
	}()
	return "https://" + ln.Addr().String()
}

// h3TestListener is a QUIC listener on a loopback UDP port offering h3,
// with httptest's self-signed certificate, closed when the test ends.
func h3TestListener(t *testing.T) *quic.Listener {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.StartTLS()
	cert := ts.TLS.Certificates
	ts.Close()
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: cert, NextProtos: []string{http3.NextProtoH3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestH3RawHostileServer: what a hostile or broken server sends ends as
// an error of the right class, allocates nothing it chose the size of,
// and leaves the load running.
func TestH3RawHostileServer(t *testing.T) {
	var answer func() ([]byte, bool)
	url := hostileH3Server(t, func(string) ([]byte, bool) { return answer() })
	ok := h3Headers(":status", "200")
	for _, c := range []struct {
		name  string
		resp  []byte
		reset bool
		class string
	}{
		{"huge DATA length", cat(ok, quicvarint.Append(quicvarint.Append(nil, h3FrameData), 1<<62-1), []byte("abc")), false, "read"},
		{"HEADERS too big", cat(quicvarint.Append(quicvarint.Append(nil, h3FrameHeaders), 1<<30), make([]byte, 100)), false, "parse"},
		{"truncated frame", h3Headers(":status", "200", "server", "abcdef")[:5], false, "write"},
		{"dynamic table", h3Frame(h3FrameHeaders, []byte{1, 0, 0x80}), false, "parse"},
		{"reset before the headers", nil, true, "reset"}, // RESET_STREAM, as HTTP/2's RST_STREAM
		{"reset in the body", cat(ok, h3Frame(h3FrameData, []byte("abc"))[:3]), true, "reset"},
		{"no response", nil, false, "write"},
	} {
		answer = func() ([]byte, bool) { return c.resp, c.reset }
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 1, Streams: 2, Requests: 6, Timeout: 5 * time.Second})
		if res == nil {
			t.Fatalf("%s: no result (%v)", c.name, err)
		}
		if res.ErrorsBy[c.class] != 6 || res.Requests != 0 {
			t.Errorf("%s: errors %v (%v), %d responses; want 6 %s errors", c.name, res.ErrorsBy, res.ErrorSample, res.Requests, c.class)
		}
		if want := "stream reset by the server: H3_REQUEST_CANCELLED"; c.reset && res.ErrorSample["reset"] != want {
			t.Errorf("%s: sample %q, want %q", c.name, res.ErrorSample["reset"], want)
		}
	}
	answer = func() ([]byte, bool) { return cat(ok, h3Frame(h3FrameData, []byte("fine"))), false }
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 1, Requests: 3})
	if err != nil || res.Status[200] != 3 {
		t.Errorf("a well-formed answer from the same server: status %v, errors %v (%v)", res.Status, res.ErrorsBy, err)
	}
}

// BenchmarkH3Requests measures HTTP/3 loads of b.N requests against an
// in-process http3.Server, on the raw path and through the library's
// RoundTrip; allocs/op is the process's (client and server).
func BenchmarkH3Requests(b *testing.B) {
	url := newH3Server(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) }))
	for _, lib := range []bool{false, true} {
		b.Run(fmt.Sprintf("library=%v", lib), func(b *testing.B) {
			h3LibraryOnly = lib
			defer func() { h3LibraryOnly = false }()
			b.ReportAllocs()
			res, err := Run(context.Background(), Options{Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 4, Streams: 4, Requests: int64(b.N)})
			if err != nil || res.Errors != 0 {
				b.Fatalf("%v %v", err, res.ErrorsBy)
			}
		})
	}
}

// h3Pool is a request script's pool of requests.
type h3Pool []Target

func (p h3Pool) Pool() ([]Target, error) { return p, nil }

// TestH3RawRequestScript: a request script's requests (methods, headers,
// bodies, one endpoint) go out on the raw path as written, and its
// response hook sees every status.
func TestH3RawRequestScript(t *testing.T) {
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == "GET" && r.URL.Path == "/a" && r.URL.RawQuery == "x=1":
			w.WriteHeader(200)
		case r.Method == "DELETE" && r.URL.Path == "/b" && r.Header.Get("X-Id") == "7":
			w.WriteHeader(204)
		case r.Method == "PUT" && r.URL.Path == "/c" && string(b) == `{"k":1}` && r.ContentLength == 7:
			w.WriteHeader(201)
		default:
			w.WriteHeader(400)
		}
	}))
	var seen [600]atomic.Int64
	res, err := Run(context.Background(), Options{Protocol: ProtoH3, Connections: 2, Streams: 2, Requests: 300,
		Requester: h3Pool{{URL: url + "/a?x=1"}, {URL: url + "/b", Method: "DELETE", Headers: [][2]string{{"X-Id", "7"}}},
			{URL: url + "/c", Method: "PUT", Body: []byte(`{"k":1}`)}},
		OnResponse: func(s int) { seen[s].Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 300 || res.Status[400] != 0 || res.Status[200]+res.Status[204]+res.Status[201] != 300 || res.Status[201] == 0 || res.Status[204] == 0 {
		t.Fatalf("requests %d, status %v, errors %v: want 300 of 200, 204 and 201", res.Requests, res.Status, res.ErrorsBy)
	}
	if seen[200].Load() != res.Status[200] || seen[201].Load() != res.Status[201] || seen[204].Load() != res.Status[204] {
		t.Errorf("the response hook saw %d/%d/%d, the result %v", seen[200].Load(), seen[201].Load(), seen[204].Load(), res.Status)
	}
}

// TestH3RawCapacitySearch: a short capacity search over HTTP/3 probes,
// every probe measured on the raw path without errors, and finds a rate —
// or, on a machine so busy that even the first probe missed its latency
// bound or its rate, says why that probe failed (the rate a search finds
// depends on the machine's timing; that it runs on h3 and counts no
// error does not).
func TestH3RawCapacitySearch(t *testing.T) {
	url := newH3Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	slo, _ := measure.ParseSLO("p99<500ms,errors<1%")
	c, err := FindMax(context.Background(), SearchOptions{
		Load: Options{Targets: []Target{{URL: url + "/"}}, Protocol: ProtoH3, Connections: 2, Streams: 4, Threads: 1},
		SLO:  slo, Start: 100, Max: 400, Probe: 2 * time.Second, Settle: 500 * time.Millisecond, Pause: 100 * time.Millisecond, MaxProbes: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(c.Verdict())
	if len(c.Probes) == 0 {
		t.Fatal("no probe ran")
	}
	if first := c.Probes[0]; c.Rate < 100 && (first.Pass || first.Reason == "") {
		t.Fatalf("found %.0f req/s in %d probes, below the first probe's 100, and the first probe (pass %v) gives no reason", c.Rate, len(c.Probes), first.Pass)
	}
	for _, p := range c.Probes {
		if p.Requests == 0 || p.Result.Protocol != ProtoH3 || p.Result.Errors != 0 {
			t.Errorf("probe at %.0f: %d requests, protocol %q, errors %v", p.Rate, p.Requests, p.Result.Protocol, p.Result.ErrorsBy)
		}
	}
}
