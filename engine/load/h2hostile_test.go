package load

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// hostileH2 is a loopback server that speaks HTTP/2 badly, one
// misbehaviour per server: each connection reads the client preface,
// sends an empty SETTINGS (unless raw), and calls act at once (atConnect)
// or for each request (each HEADERS from the client), then endless, if
// set, again and again until a write fails, in a goroutine of its own;
// meanwhile it reads the client's frames until the client closes,
// keeping the GOAWAY and RST_STREAM frames it receives.
type hostileH2 struct {
	*rawServer
	mu      sync.Mutex
	goaways []http2.ErrCode
	debug   []string // the GOAWAYs' debug data
	resets  []http2.ErrCode
	acts    sync.WaitGroup
}

// hostileAct writes to the connection, raw (w) or by frames (fr); stream
// is the request's stream, 0 at connect.
type hostileAct func(w io.Writer, fr *http2.Framer, stream uint32)

func newHostileH2(t *testing.T, raw, atConnect bool, act hostileAct, endless func(fr *http2.Framer, stream uint32) error) *hostileH2 {
	t.Helper()
	h := &hostileH2{}
	h.rawServer = newRawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
		var wmu sync.Mutex // serialises the acts' writes
		wfr := http2.NewFramer(c, nil)
		run := func(stream uint32) {
			h.acts.Add(1)
			go func() {
				defer h.acts.Done()
				wmu.Lock()
				act(c, wfr, stream)
				wmu.Unlock()
				for endless != nil {
					wmu.Lock()
					err := endless(wfr, stream)
					wmu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
		if !raw {
			wfr.WriteSettings()
		}
		if atConnect {
			run(0)
		}
		fr := http2.NewFramer(nil, br)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.HeadersFrame:
				if !atConnect {
					run(f.StreamID)
				}
			case *http2.GoAwayFrame:
				h.mu.Lock()
				h.goaways = append(h.goaways, f.ErrCode)
				h.debug = append(h.debug, string(f.DebugData()))
				h.mu.Unlock()
			case *http2.RSTStreamFrame:
				h.mu.Lock()
				h.resets = append(h.resets, f.ErrCode)
				h.mu.Unlock()
			}
		}
	})
	t.Cleanup(h.acts.Wait)
	return h
}

// frameHeader is a raw 9-byte frame header, for lengths the Framer would
// not write.
func frameHeader(length uint32, typ http2.FrameType, flags http2.Flags, stream uint32) []byte {
	b := []byte{byte(length >> 16), byte(length >> 8), byte(length), byte(typ), byte(flags), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], stream)
	return b
}

// allocated is the memory the process allocated while f ran (TotalAlloc:
// every allocation counts, freed or not).
func allocated(f func()) uint64 {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func status200() []byte {
	var b bytes.Buffer
	hpack.NewEncoder(&b).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	return b.Bytes()
}

// TestH2HostileServer: a server that breaks HTTP/2 fails the client's
// connection (or the stream) with the right error code, sent to the
// server in a GOAWAY (or RST_STREAM); every request of -n counts once, in
// the right class with a message that says what the server did; and the
// memory the client allocates stays bounded: 40 connections against a
// frame that claims 16 MiB, or a header block without end, allocate a few
// MiB in all, where reading what the server claimed took 640 MiB.
func TestH2HostileServer(t *testing.T) {
	const conns = 40
	// allocBound is the most the whole run may allocate: far below one
	// 16 MiB frame per connection (640 MiB) and below the 1 MiB header
	// blocks per connection a CONTINUATION flood grew before (80 MiB
	// with append's doubling).
	const allocBound = 24 << 20
	cases := []struct {
		name      string
		raw       bool // no SETTINGS first
		atConnect bool
		act       hostileAct
		endless   func(fr *http2.Framer, stream uint32) error // written again and again after act
		class     string
		want      string        // in the error sample
		goaway    http2.ErrCode // sent by the client, when not 0
		reset     http2.ErrCode // RST_STREAM sent by the client, when not 0
		oneConn   bool          // a stream error: the connection lives on
		timeout   time.Duration // 5s when 0
	}{
		{name: "DATA longer than SETTINGS_MAX_FRAME_SIZE", act: func(w io.Writer, _ *http2.Framer, id uint32) {
			w.Write(frameHeader(0xFFFFFF, http2.FrameData, 0, id))
		}, class: "parse", want: "FRAME_SIZE_ERROR: the server sent a DATA frame of 16777215 bytes on stream 1, above the client's SETTINGS_MAX_FRAME_SIZE of 16384", goaway: http2.ErrCodeFrameSize},
		{name: "HEADERS longer than SETTINGS_MAX_FRAME_SIZE", act: func(w io.Writer, _ *http2.Framer, id uint32) {
			w.Write(frameHeader(0xFFFFFF, http2.FrameHeaders, http2.FlagHeadersEndHeaders, id))
		}, class: "parse", want: "FRAME_SIZE_ERROR: the server sent a HEADERS frame of 16777215 bytes", goaway: http2.ErrCodeFrameSize},
		{name: "one byte over SETTINGS_MAX_FRAME_SIZE, an unknown frame", act: func(w io.Writer, _ *http2.Framer, id uint32) {
			w.Write(frameHeader(16385, 0xfa, 0, 0))
		}, class: "parse", want: "FRAME_SIZE_ERROR: the server sent a UNKNOWN_FRAME_TYPE_250 frame of 16385 bytes on stream 0", goaway: http2.ErrCodeFrameSize},
		{name: "a SETTINGS preface longer than SETTINGS_MAX_FRAME_SIZE", raw: true, atConnect: true, act: func(w io.Writer, _ *http2.Framer, _ uint32) {
			w.Write(frameHeader(0xFFFFFF, http2.FrameSettings, 0, 0))
		}, class: "parse", want: "FRAME_SIZE_ERROR: the server sent a SETTINGS frame of 16777215 bytes", goaway: http2.ErrCodeFrameSize},
		{name: "endless CONTINUATION", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x88}})
		}, endless: func(fr *http2.Framer, id uint32) error { return fr.WriteContinuation(id, false, nil) },
			class: "parse", want: "ENHANCE_YOUR_CALM: the response header block of stream 1 exceeds 65536 bytes", goaway: http2.ErrCodeEnhanceYourCalm},
		{name: "a header block of full frames without end", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: make([]byte, 16384)})
		}, endless: func(fr *http2.Framer, id uint32) error { return fr.WriteContinuation(id, false, make([]byte, 16384)) },
			class: "parse", want: "ENHANCE_YOUR_CALM: the response header block of stream 1 exceeds 65536 bytes", goaway: http2.ErrCodeEnhanceYourCalm},
		{name: "connection WINDOW_UPDATE past 2^31-1", act: func(_ io.Writer, fr *http2.Framer, _ uint32) {
			fr.WriteWindowUpdate(0, 1<<31-1)
		}, class: "parse", want: "FLOW_CONTROL_ERROR: WINDOW_UPDATE of 2147483647 takes the connection's send window to 2147549182, above 2^31-1", goaway: http2.ErrCodeFlowControl},
		{name: "stream WINDOW_UPDATE past 2^31-1", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WriteWindowUpdate(id, 1<<31-1)
		}, class: "parse", want: "FLOW_CONTROL_ERROR: WINDOW_UPDATE of 2147483647 takes the send window of stream 1 to 2147549182, above 2^31-1 (the client reset the stream)", reset: http2.ErrCodeFlowControl, oneConn: true},
		{name: "SETTINGS_INITIAL_WINDOW_SIZE past 2^31-1", raw: true, atConnect: true, act: func(_ io.Writer, fr *http2.Framer, _ uint32) {
			fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
		}, class: "parse", want: "FLOW_CONTROL_ERROR: invalid SETTINGS frame on stream 0", goaway: http2.ErrCodeFlowControl},
		{name: "SETTINGS_MAX_FRAME_SIZE below 16384", raw: true, atConnect: true, act: func(_ io.Writer, fr *http2.Framer, _ uint32) {
			fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 100})
		}, class: "parse", want: "PROTOCOL_ERROR: invalid SETTINGS: [MAX_FRAME_SIZE = 100]", goaway: http2.ErrCodeProtocol},
		{name: "HEADERS on an even stream", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id + 1, BlockFragment: status200(), EndHeaders: true})
		}, class: "parse", want: "PROTOCOL_ERROR: HEADERS on stream 2, an even stream: only the server opens those, and push is disabled", goaway: http2.ErrCodeProtocol},
		{name: "DATA on an even stream", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WriteData(id+1, true, []byte("x"))
		}, class: "parse", want: "PROTOCOL_ERROR: DATA on stream 2, an even stream", goaway: http2.ErrCodeProtocol},
		{name: "HEADERS on a stream the client did not open", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id + 2, BlockFragment: status200(), EndHeaders: true})
		}, class: "parse", want: "PROTOCOL_ERROR: HEADERS on stream 3, which the client has not opened", goaway: http2.ErrCodeProtocol},
		{name: "PUSH_PROMISE with push disabled", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WritePushPromise(http2.PushPromiseParam{StreamID: id, PromiseID: 2, BlockFragment: status200(), EndHeaders: true})
		}, class: "parse", want: "PROTOCOL_ERROR: PUSH_PROMISE on stream 1, while the client's SETTINGS_ENABLE_PUSH is 0", goaway: http2.ErrCodeProtocol},
		{name: "DATA before HEADERS", act: func(_ io.Writer, fr *http2.Framer, id uint32) {
			fr.WriteData(id, true, []byte("x"))
		}, class: "parse", want: "PROTOCOL_ERROR: DATA before the response's HEADERS (the client reset the stream)", reset: http2.ErrCodeProtocol, oneConn: true},
		{name: "a first frame other than SETTINGS", raw: true, atConnect: true, act: func(_ io.Writer, fr *http2.Framer, _ uint32) {
			fr.WritePing(false, [8]byte{})
		}, class: "parse", want: "PROTOCOL_ERROR: the server's first frame is PING, not its SETTINGS", goaway: http2.ErrCodeProtocol},
		{name: "HTTP/1.1 answer to the preface", raw: true, atConnect: true, act: func(w io.Writer, _ *http2.Framer, _ uint32) {
			io.WriteString(w, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		}, class: "parse", want: "the server does not speak h2c (it answered HTTP/1.1): drop --h2, or use https:// for ALPN"},
		{name: "HTTP/1.0 answer to the preface", raw: true, atConnect: true, act: func(w io.Writer, _ *http2.Framer, _ uint32) {
			io.WriteString(w, "HTTP/1.0 505 HTTP Version Not Supported\r\n\r\n")
		}, class: "parse", want: "the server does not speak h2c (it answered HTTP/1.1): drop --h2, or use https:// for ALPN"},
		{name: "closed before its SETTINGS", raw: true, atConnect: true, act: func(w io.Writer, _ *http2.Framer, _ uint32) {
			w.(net.Conn).Close()
		}, class: "read", want: "the server closed the connection without sending its SETTINGS: does it speak HTTP/2 on this port? (EOF)"},
		{name: "silent after the preface", raw: true, atConnect: true, act: func(io.Writer, *http2.Framer, uint32) {},
			timeout: 200 * time.Millisecond,
			class:   "timeout", want: "no SETTINGS frame from the server within the timeout (200ms) of connecting: does it speak HTTP/2 on this port?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostileH2(t, tc.raw, tc.atConnect, tc.act, tc.endless)
			n := int64(conns)
			c := conns
			if tc.oneConn {
				c = 1
			}
			var res *Result
			var err error
			alloc := allocated(func() {
				res, err = Run(context.Background(), Options{Targets: []Target{{URL: h.URL("/")}}, Protocol: ProtoH2,
					Connections: c, Threads: 2, Requests: n, Timeout: cmp.Or(tc.timeout, 5*time.Second)})
			})
			h.waitClientsGone(t)
			if err == nil || !strings.Contains(err.Error(), "all 40 requests failed") {
				t.Errorf("Run: %v, want all 40 requests failed", err)
			}
			if res.Requests != 0 || res.Errors != n || res.ErrorsBy[tc.class] != n {
				t.Errorf("requests %d, errors %v, want %d %s errors", res.Requests, res.ErrorsBy, n, tc.class)
			}
			if got := res.ErrorSample[tc.class]; !strings.Contains(got, tc.want) {
				t.Errorf("%s sample %q\nwant it to contain %q", tc.class, got, tc.want)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if tc.goaway != 0 {
				if len(h.goaways) == 0 {
					t.Errorf("no GOAWAY from the client, want %v", tc.goaway)
				}
				for i, code := range h.goaways {
					if code != tc.goaway || !strings.Contains(tc.want, h.debug[i][:min(len(h.debug[i]), 20)]) {
						t.Errorf("GOAWAY %v %q, want %v and the reason", code, h.debug[i], tc.goaway)
						break
					}
				}
			} else if len(h.goaways) > 0 {
				t.Errorf("GOAWAY %v from the client, want none", h.goaways)
			}
			if tc.reset != 0 {
				// The last may stay unsent: the load is over.
				if int64(len(h.resets)) < n-1 {
					t.Errorf("%d RST_STREAM from the client, want %d", len(h.resets), n)
				}
				for _, code := range h.resets {
					if code != tc.reset {
						t.Errorf("RST_STREAM %v, want %v", code, tc.reset)
						break
					}
				}
			}
			if tc.oneConn && h.accepted.Load() != 1 {
				t.Errorf("%d connections: a stream error ended the connection", h.accepted.Load())
			}
			t.Logf("%d connections, %.1f MiB allocated", h.accepted.Load(), float64(alloc)/(1<<20))
			if alloc > allocBound {
				t.Errorf("the client allocated %.1f MiB, want at most %d MiB", float64(alloc)/(1<<20), allocBound>>20)
			}
		})
	}
}
