package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/serve"
)

// h2TestServer is a net/http server speaking h2c (or h2 over TLS) that
// counts the requests in flight and the connections.
type h2TestServer struct {
	url      string
	inflight atomic.Int64
	maxIn    atomic.Int64
	conns    atomic.Int64
}

func newH2TestServer(t *testing.T, useTLS bool, maxStreams int, handle func(w http.ResponseWriter, r *http.Request)) *h2TestServer {
	t.Helper()
	s := &h2TestServer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				http.Error(w, "HTTP/2 expected", http.StatusHTTPVersionNotSupported)
				return
			}
			n := s.inflight.Add(1)
			defer s.inflight.Add(-1)
			for {
				m := s.maxIn.Load()
				if n <= m || s.maxIn.CompareAndSwap(m, n) {
					break
				}
			}
			handle(w, r)
		}),
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: maxStreams},
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		},
	}
	srv.Protocols = new(http.Protocols)
	scheme := "http"
	if useTLS {
		cert, err := serve.SelfSigned()
		if err != nil {
			t.Fatal(err)
		}
		srv.Protocols.SetHTTP2(true)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	} else {
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.url = scheme + "://" + ln.Addr().String() + "/"
	return s
}

func slowHello(d time.Duration) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		w.Write([]byte("hello\n"))
	}
}

func TestH2CMultiplexes(t *testing.T) {
	s := newH2TestServer(t, false, 0, slowHello(2*time.Millisecond))
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
		Connections: 2, Threads: 1, Streams: 8, Requests: 400, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 400 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
	if res.Protocol != ProtoH2C || res.Streams != 8 {
		t.Errorf("protocol %q streams %d, want h2c 8", res.Protocol, res.Streams)
	}
	if c := s.conns.Load(); c != 2 {
		t.Errorf("server saw %d connections, want 2", c)
	}
	if m := s.maxIn.Load(); m <= 2 {
		t.Errorf("at most %d requests in flight on 2 connections: streams not multiplexed", m)
	}
	t.Logf("max in flight %d on 2 connections; %.0f req/s", s.maxIn.Load(), res.RPS())
}

func TestH2TLS(t *testing.T) {
	s := newH2TestServer(t, true, 0, slowHello(time.Millisecond))
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
		Connections: 2, Threads: 1, Streams: 4, Requests: 200, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
	if res.Protocol != ProtoH2 || res.ALPN != "h2" || res.TLSCipher == "" || res.TLSVersion != "TLS 1.3" {
		t.Errorf("protocol %q alpn %q cipher %q version %q", res.Protocol, res.ALPN, res.TLSCipher, res.TLSVersion)
	}
	if m := s.maxIn.Load(); m <= 2 {
		t.Errorf("at most %d requests in flight on 2 connections", m)
	}
}

// TestH2TLSOutlivesTimeout: a TLS connection's writes are not bounded by
// its handshake's deadline (connect + Timeout). One HTTP/2 connection kept
// open for longer than --timeout sends and receives on it to the end,
// bounded by requests (15 of 100 ms in a row, timeout 1 s) or by duration
// (2 s, timeout 500 ms, 2 streams), without a write timing out at dial
// time + timeout (every stream in flight then failed as a timeout and the
// connection was reopened).
func TestH2TLSOutlivesTimeout(t *testing.T) {
	cases := []struct {
		name  string
		delay time.Duration
		opts  Options
	}{
		{"requests", 100 * time.Millisecond, Options{Streams: 1, Requests: 15, Timeout: time.Second}},
		{"duration", time.Millisecond, Options{Streams: 2, Duration: 2 * time.Second, Timeout: 500 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newH2TestServer(t, true, 0, slowHello(tc.delay))
			o := tc.opts
			o.Targets, o.Protocol, o.Connections, o.Threads = []Target{{URL: s.url}}, ProtoH2, 1, 1
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests == 0 || (o.Requests > 0 && res.Requests != o.Requests) || res.Errors != 0 {
				t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
			}
			if c := s.conns.Load(); c != 1 {
				t.Errorf("server saw %d connections, want 1 (the connection was reopened)", c)
			}
		})
	}
}

// TestH2HeaderBlocks: responses whose headers come in a HEADERS frame
// that ends the stream and a CONTINUATION, after an interim 103, or with
// trailers after the body, each complete with the final status.
func TestH2HeaderBlocks(t *testing.T) {
	block := func(fields ...string) []byte {
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for i := 0; i < len(fields); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return b.Bytes()
	}
	cases := []struct {
		name   string
		write  func(fr *http2.Framer)
		status string
	}{
		{"continuation ends the block of a HEADERS that ends the stream", func(fr *http2.Framer) {
			b := block(":status", "204", "server", "test", "x-long", strings.Repeat("v", 100))
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:5], EndStream: true})
			fr.WriteContinuation(1, false, b[5:20])
			fr.WriteContinuation(1, true, b[20:])
		}, "204"},
		{"interim then final", func(fr *http2.Framer) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "103", "link", "</a>"), EndHeaders: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "201"), EndHeaders: true})
			fr.WriteData(1, true, []byte("hello\n"))
		}, "201"},
		{"trailers", func(fr *http2.Framer) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "200"), EndHeaders: true})
			fr.WriteData(1, false, []byte("hello\n"))
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("grpc-status", "0"), EndHeaders: true, EndStream: true})
		}, "200"},
		{"a block just under SETTINGS_MAX_HEADER_LIST_SIZE, with a Huffman string longer than the decoder decodes", func(fr *http2.Framer) {
			// 'a' codes in 5 bits: 30,000 of them are 18,750 bytes, above
			// hpackLongStr; the raw value keeps the block under the limit.
			b := block(":status", "202", "x-huffman", strings.Repeat("a", 30000), "x-raw", strings.Repeat("\x01", 40000))
			if len(b) < 3*16384 || len(b)+4*9 > h2MaxHeaderList {
				panic(fmt.Sprintf("a block of %d bytes", len(b)))
			}
			writeBlock(fr, 1, b, true)
		}, "202"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newRawH2ServerFrames(t, c.write)
			res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL()}}, Protocol: ProtoH2,
				Connections: 1, Threads: 1, Streams: 4, Requests: 50, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 50 || res.Errors != 0 {
				t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
			}
			if st := fmt.Sprint(res.Status); st != "map["+c.status+":50]" {
				t.Errorf("status counts %s, want %s: 50", st, c.status)
			}
		})
	}
	t.Run("a block past SETTINGS_MAX_HEADER_LIST_SIZE fails the connection", func(t *testing.T) {
		s := newRawH2ServerFrames(t, func(fr *http2.Framer) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x88}, EndStream: true})
			for range h2MaxHeaderList/(16<<10) + 1 { // 16 KiB each
				fr.WriteContinuation(1, false, make([]byte, 16<<10))
			}
		})
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL()}}, Protocol: ProtoH2,
			Connections: 1, Threads: 1, Requests: 1, Timeout: 5 * time.Second})
		if err == nil {
			t.Error("no error with every request failed")
		}
		if res.ErrorsBy["parse"] != 1 {
			t.Errorf("errors %v (%s), want 1 parse error", res.ErrorsBy, res.ErrorSummary())
		}
	})
}

// writeBlock writes a header block as a HEADERS frame and as many
// CONTINUATION frames as the default frame size needs.
func writeBlock(fr *http2.Framer, stream uint32, b []byte, endStream bool) {
	n := min(len(b), 16384)
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: b[:n], EndStream: endStream, EndHeaders: n == len(b)})
	for b = b[n:]; len(b) > 0; b = b[n:] {
		n = min(len(b), 16384)
		fr.WriteContinuation(stream, n == len(b), b[:n])
	}
}

// A server without HTTP/2 on its TLS port: a connect error that says so.
func TestH2RefusedWithoutALPN(t *testing.T) {
	s := newH2TestServer(t, true, 0, slowHello(time.Millisecond))
	// HTTP/1.1 only over TLS.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := serve.SelfSigned()
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(slowHello(0)), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}}
	go srv.Serve(tls.NewListener(ln, srv.TLSConfig))
	defer srv.Close()
	_ = s
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: "https://" + ln.Addr().String() + "/"}}, Protocol: ProtoH2,
		Connections: 1, Requests: 3})
	if err == nil || !strings.Contains(res.ErrorSample["connect"], "did not negotiate HTTP/2") {
		t.Fatalf("err %v, sample %q", err, res.ErrorSample["connect"])
	}
}

func TestH2MaxStreamsHonoured(t *testing.T) {
	s := newH2TestServer(t, false, 1, slowHello(time.Millisecond))
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
		Connections: 1, Streams: 10, Requests: 100, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 100 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
	if m := s.maxIn.Load(); m != 1 {
		t.Errorf("%d requests in flight on a server allowing 1 stream", m)
	}
	if res.StreamLimit != 1 || res.Streams != 10 {
		t.Errorf("stream limit %d of %d asked, want the server's 1", res.StreamLimit, res.Streams)
	}
}

func TestH2ResetCounted(t *testing.T) {
	var n atomic.Int64
	s := newH2TestServer(t, false, 0, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			panic(http.ErrAbortHandler) // the server resets the stream
		}
		w.Write([]byte("hello\n"))
	})
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
		Connections: 1, Streams: 4, Requests: 100, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorsBy["reset"] < 40 || res.Requests < 40 || res.Requests+res.Errors != 100 {
		t.Fatalf("requests %d errors %v", res.Requests, res.ErrorsBy)
	}
	if !strings.Contains(res.ErrorSample["reset"], "INTERNAL_ERROR") {
		t.Errorf("reset sample %q", res.ErrorSample["reset"])
	}
}

// goawayServer answers the first request of each connection and then
// sends GOAWAY with code, naming that request as the last stream it
// processes: the other streams in flight are refused. It counts the
// requests it answers. With refuseAll it answers none: GOAWAY names
// stream 0.
func goawayServer(t *testing.T, code http2.ErrCode, refuseAll bool, answered *atomic.Int64) *rawServer {
	return newRawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(br, preface); err != nil {
			return
		}
		bw := bufio.NewWriter(c)
		fr := http2.NewFramer(bw, br)
		fr.WriteSettings()
		bw.Flush()
		var hb strings.Builder
		enc := hpack.NewEncoder(&hb)
		enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		block := []byte(hb.String())
		first := uint32(0)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			h, ok := f.(*http2.HeadersFrame)
			if !ok {
				continue
			}
			if first == 0 {
				first = h.StreamID
				// let the other streams arrive, then refuse them
				time.Sleep(5 * time.Millisecond)
				if refuseAll {
					fr.WriteGoAway(0, code, nil)
					bw.Flush()
					continue
				}
				fr.WriteGoAway(first, code, nil)
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: first, BlockFragment: block, EndHeaders: true})
				answered.Add(1) // before the client can see the answer
				fr.WriteData(first, true, []byte("hello\n"))
				bw.Flush()
			}
		}
	})
}

// A GOAWAY with an error code: the streams above the server's last one
// count as "goaway" errors, and every request of -n is accounted for once.
func TestH2GoawayErrorCounted(t *testing.T) {
	var answered atomic.Int64
	s := goawayServer(t, http2.ErrCodeEnhanceYourCalm, false, &answered)
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: "http://" + s.ln.Addr().String() + "/"}}, Protocol: ProtoH2,
		Connections: 1, Streams: 4, Requests: 40, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorsBy["goaway"] == 0 || res.Requests == 0 || res.Reconnects == 0 || res.Goaways == 0 {
		t.Fatalf("requests %d errors %v reconnects %d goaways %d", res.Requests, res.ErrorsBy, res.Reconnects, res.Goaways)
	}
	if res.Requests+res.Errors != 40 || res.Errors != res.ErrorsBy["goaway"] {
		t.Errorf("requests %d + errors %d != 40 (%v)", res.Requests, res.Errors, res.ErrorsBy)
	}
	if res.Requests != answered.Load() {
		t.Errorf("%d requests counted, the server answered %d", res.Requests, answered.Load())
	}
	if !strings.Contains(res.ErrorSample["goaway"], "ENHANCE_YOUR_CALM") {
		t.Errorf("goaway sample %q", res.ErrorSample["goaway"])
	}
}

// A graceful GOAWAY (NO_ERROR, as nginx sends after keepalive_requests):
// the refused streams are sent again on a new connection, none is an
// error, and exactly -n requests complete, in closed and open loop.
func TestH2GoawayGracefulRetried(t *testing.T) {
	for _, c := range []struct {
		name string
		rate float64
	}{{"closed", 0}, {"open", 400}} {
		t.Run(c.name, func(t *testing.T) {
			var answered atomic.Int64
			s := goawayServer(t, http2.ErrCodeNo, false, &answered)
			res, err := Run(context.Background(), Options{Targets: []Target{{URL: "http://" + s.ln.Addr().String() + "/"}}, Protocol: ProtoH2,
				Connections: 1, Streams: 4, Requests: 40, Rate: c.rate, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests != 40 || res.Errors != 0 || res.Status[200] != 40 {
				t.Fatalf("requests %d errors %v status %v (%s)", res.Requests, res.ErrorsBy, res.Status, res.ErrorSummary())
			}
			if n := answered.Load(); n != 40 {
				t.Errorf("the server answered %d requests, want 40", n)
			}
			if res.Goaways == 0 || res.Reconnects == 0 {
				t.Errorf("goaways %d reconnects %d, want both > 0", res.Goaways, res.Reconnects)
			}
			if res.MaxInFlight < 2 {
				t.Errorf("at most %d streams in flight: nothing was refused to retry", res.MaxInFlight)
			}
		})
	}
}

// A graceful GOAWAY that names no stream: the server processed nothing,
// so its streams are errors, not retried without end.
func TestH2GoawayGracefulNothingProcessed(t *testing.T) {
	var answered atomic.Int64
	s := goawayServer(t, http2.ErrCodeNo, true, &answered)
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: "http://" + s.ln.Addr().String() + "/"}}, Protocol: ProtoH2,
		Connections: 1, Streams: 4, Requests: 12, Timeout: 5 * time.Second})
	if err == nil {
		t.Error("no error with every request refused")
	}
	if res.Requests != 0 || res.Errors != 12 || res.ErrorsBy["goaway"] != 12 || res.Goaways == 0 {
		t.Fatalf("requests %d errors %v goaways %d, want 12 goaway errors", res.Requests, res.ErrorsBy, res.Goaways)
	}
}

func TestH2OpenLoop(t *testing.T) {
	s := newH2TestServer(t, false, 0, slowHello(0))
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
		Connections: 2, Streams: 4, Rate: 400, Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests < 150 || res.Requests > 210 || res.Errors != 0 || res.Uncorrected == nil {
		t.Fatalf("requests %d errors %d (%s)", res.Requests, res.Errors, res.ErrorSummary())
	}
}

func TestH2LargeBodyAndTimeout(t *testing.T) {
	body := strings.Repeat("x", 3<<20)
	s := newH2TestServer(t, false, 0, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(400 * time.Millisecond)
		}
		w.Write([]byte(body))
	})
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
		Connections: 1, Streams: 2, Requests: 20, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 20 || res.Errors != 0 || res.Bytes < 20*int64(len(body)) {
		t.Fatalf("requests %d errors %d bytes %d (%s)", res.Requests, res.Errors, res.Bytes, res.ErrorSummary())
	}
	res, _ = Run(context.Background(), Options{Targets: []Target{{URL: s.url + "slow"}}, Protocol: ProtoH2,
		Connections: 1, Streams: 2, Requests: 4, Timeout: 100 * time.Millisecond})
	if res.ErrorsBy["timeout"] != 4 {
		t.Fatalf("errors %v, want 4 timeouts", res.ErrorsBy)
	}
}

func TestH2PostBody(t *testing.T) {
	var got atomic.Int64
	s := newH2TestServer(t, false, 0, func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1<<20)
		n := 0
		for {
			m, err := r.Body.Read(b[n:])
			n += m
			if err != nil {
				break
			}
		}
		got.Add(int64(n))
	})
	body := []byte(strings.Repeat("y", 200<<10)) // beyond the initial 64 KiB windows
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url, Method: "POST", Body: body}}, Protocol: ProtoH2,
		Connections: 1, Streams: 3, Requests: 9, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 9 || res.Errors != 0 || got.Load() != 9*int64(len(body)) {
		t.Fatalf("requests %d errors %d; server read %d bytes", res.Requests, res.Errors, got.Load())
	}
}

func TestH2Validate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Targets: []Target{{URL: "http://a/"}}, Streams: 4}, `concurrent streams need protocol "h2"`},
		{Options{Targets: []Target{{URL: "http://a/"}}, Protocol: "h3"}, "want"},
		{Options{Targets: []Target{{URL: "http://a/"}}, Protocol: ProtoH2, Close: true}, "not supported with HTTP/2"},
		{Options{Targets: []Target{{URL: "http://a/"}, {URL: "http://b/"}}, Protocol: ProtoH2}, "same scheme, host and port"},
		{Options{Targets: []Target{{URL: "http://a/"}}, CACert: "/nonexistent.pem"}, "cacert"},
	} {
		err := Validate(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// TestH2StreamLimit: the streams a load could use are those asked for,
// unless the server allows fewer.
func TestH2StreamLimit(t *testing.T) {
	for _, c := range []struct{ server, asked, want int }{{0, 6, 6}, {3, 6, 3}} {
		s := newH2TestServer(t, false, c.server, slowHello(0))
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2,
			Connections: 2, Streams: c.asked, Requests: 40, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.StreamLimit != c.want {
			t.Errorf("server allowing %d (0: 250), %d asked: stream limit %d, want %d", c.server, c.asked, res.StreamLimit, c.want)
		}
	}
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: okServer(t).URL("/")}}, Connections: 1, Requests: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.StreamLimit != 1 {
		t.Errorf("HTTP/1.1: stream limit %d, want 1", res.StreamLimit)
	}
}

// TestFindMaxH2RealServer is TestFindMaxRealServer over h2c: the built-in
// server as a queue of known capacity (4 workers busy exactly 5 ms per
// request: 800 req/s), driven by 2 connections of 32 streams each (the 64
// requests in flight the HTTP/1.1 search gets from 64 connections). Every
// probe speaks HTTP/2 (the server answers anything else with 505), the
// probes bracket the result, and it never exceeds the capacity by more
// than the SLO's slack.
func TestFindMaxH2RealServer(t *testing.T) {
	h, err := serve.New(serve.Config{Workers: 4, Delay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := newH2TestServer(t, false, 0, h.ServeHTTP)
	slo, _ := measure.ParseSLO("p99<500ms,errors<1%")
	c, err := FindMax(context.Background(), SearchOptions{
		Load: Options{Targets: []Target{{URL: s.url}}, Protocol: ProtoH2, Connections: 2, Streams: 32, Threads: 1},
		SLO:  slo, Start: 200, Probe: 3 * time.Second, Settle: time.Second, Pause: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(c.Verdict())
	if c.Limit != "server" && c.Limit != "generator" {
		t.Fatalf("limit %q: %s", c.Limit, c.Verdict())
	}
	if c.Rate > 800*1.05 {
		t.Errorf("found %.0f req/s, more than the server's 800 can be", c.Rate)
	}
	var passed, failed bool
	for _, p := range c.Probes {
		if p.Requests == 0 || p.Achieved <= 0 || p.P99 <= 0 {
			t.Errorf("probe %+v measured nothing", p)
		}
		if p.Result.Protocol != ProtoH2C || p.Result.Status[http.StatusHTTPVersionNotSupported] != 0 {
			t.Errorf("probe at %.0f: protocol %q, statuses %v: not HTTP/2", p.Rate, p.Result.Protocol, p.Result.Status)
		}
		if p.Connections != 2 || p.Streams != 32 {
			t.Errorf("probe at %.0f: %d connections × %d streams, want 2 × 32", p.Rate, p.Connections, p.Streams)
		}
		if p.Rate == c.Rate && p.Pass {
			passed = true
		}
		if p.Rate == c.Upper && !p.Pass {
			failed = true
		}
		if p.Pass && p.Rate > c.Rate {
			t.Errorf("probe at %.0f passed, above the reported %.0f", p.Rate, c.Rate)
		}
	}
	if (c.Rate > 0 && !passed) || !failed {
		t.Errorf("the probes do not bracket %.0f–%.0f: %+v", c.Rate, c.Upper, c.Probes)
	}
	if c.Limit == "generator" && c.Cause == CauseConnections {
		t.Errorf("64 streams in flight judged too few for 800 req/s at 5 ms: %s", c.Verdict())
	}
}

// TestH2HeaderTable: one request, sent as browsers and h2load send it —
// the first block on a connection adds its fields to HPACK's dynamic
// table, every later one names them by index — decodes to the same fields
// each time, and is a few bytes.
func TestH2HeaderTable(t *testing.T) {
	r, err := buildH2Request(Target{Headers: [][2]string{{"User-Agent", "benchflow-test"}, {"Accept", "*/*"}}},
		"https", "127.0.0.1:8443", "/6b")
	if err != nil {
		t.Fatal(err)
	}
	if r.first == nil || r.steady == nil {
		t.Fatal("no indexed form for a small request")
	}
	if len(r.steady) >= len(r.block) || len(r.steady) > 8 {
		t.Errorf("steady block %d bytes, literal %d: want a few bytes of indexes", len(r.steady), len(r.block))
	}
	var got [][]string
	dec := hpack.NewDecoder(h2DefaultTableSize, nil)
	for _, b := range [][]byte{r.block, r.first, r.steady, r.steady, r.block, r.first, r.steady} {
		fs, err := dec.DecodeFull(b)
		if err != nil {
			t.Fatalf("decoding %x: %v", b, err)
		}
		var s []string
		for _, f := range fs {
			s = append(s, f.Name+"="+f.Value)
		}
		got = append(got, s)
	}
	want := []string{":method=GET", ":scheme=https", ":authority=127.0.0.1:8443", ":path=/6b", "user-agent=benchflow-test", "accept=*/*"}
	for i, g := range got {
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("block %d decodes to %v, want %v", i, g, want)
		}
	}
	// Too big for the default table: literals only.
	big, err := buildH2Request(Target{Headers: [][2]string{{"X-Big", strings.Repeat("v", 5000)}}}, "http", "h", "/")
	if err != nil {
		t.Fatal(err)
	}
	if big.first != nil || big.steady != nil {
		t.Error("an indexed form for fields larger than the default table")
	}
}

// TestH2HeaderTableServerLimit: a server whose HPACK table is smaller than
// the request's fields (SETTINGS_HEADER_TABLE_SIZE) gets literal blocks;
// one with the default table gets indexes; both answer every request.
func TestH2HeaderTableServerLimit(t *testing.T) {
	for _, size := range []int{1, 0} { // 0: the server's default, 4,096
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var n atomic.Int64
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.Write([]byte("hello\n"))
			}),
			HTTP2: &http.HTTP2Config{MaxDecoderHeaderTableSize: size},
		}
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetUnencryptedHTTP2(true)
		go srv.Serve(ln)
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: "http://" + ln.Addr().String() + "/"}},
			Protocol: ProtoH2, Connections: 2, Threads: 1, Streams: 4, Requests: 200, Timeout: 5 * time.Second})
		srv.Close()
		if err != nil {
			t.Fatalf("table %d: %v", size, err)
		}
		if res.Requests != 200 || res.Errors != 0 || n.Load() != 200 {
			t.Errorf("table %d: requests %d errors %d (%s), server saw %d", size, res.Requests, res.Errors, res.ErrorSummary(), n.Load())
		}
	}
}
