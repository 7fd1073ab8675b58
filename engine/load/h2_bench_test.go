package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawH2Server is an h2c server at the frame level that answers every
// request stream with the same response, as nginx would send it: a header
// block of literals with incremental indexing (so the client's HPACK
// decoder grows and evicts its dynamic table as against nginx) and a DATA
// frame. It allocates nothing per request, so the allocations of a load
// against it are the client's.
type rawH2Server struct {
	ln   net.Listener
	resp []byte // the response's frames, for stream 1
}

func newRawH2Server(tb testing.TB, body []byte) *rawH2Server {
	tb.Helper()
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, f := range [][2]string{
		{":status", "200"}, {"server", "nginx/1.22.1"}, {"date", "Wed, 02 Dec 2026 05:00:00 GMT"},
		{"content-type", "application/octet-stream"}, {"content-length", fmt.Sprint(len(body))},
		{"last-modified", "Wed, 02 Dec 2026 04:00:00 GMT"}, {"etag", `"692e6f40-6"`}, {"accept-ranges", "bytes"},
	} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return newRawH2ServerFrames(tb, func(fr *http2.Framer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk.Bytes(), EndHeaders: true})
		fr.WriteData(1, true, body)
	})
}

// newRawH2ServerFrames answers every request with the frames that write
// puts out for stream 1, sent with the request's stream ID.
func newRawH2ServerFrames(tb testing.TB, write func(fr *http2.Framer)) *rawH2Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var resp bytes.Buffer
	write(http2.NewFramer(&resp, nil))
	s := &rawH2Server{ln: ln, resp: resp.Bytes()}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(nc)
		}
	}()
	tb.Cleanup(func() { ln.Close() })
	return s
}

func (s *rawH2Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

func (s *rawH2Server) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 64<<10)
	bw := bufio.NewWriterSize(nc, 64<<10)
	if _, err := br.Discard(len(http2.ClientPreface)); err != nil {
		return
	}
	fr := http2.NewFramer(bw, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 128})
	bw.Flush()
	resp := bytes.Clone(s.resp)
	var ids []int // offsets of the stream IDs in resp
	for off := 0; off < len(resp); off += 9 + (int(resp[off])<<16 | int(resp[off+1])<<8 | int(resp[off+2])) {
		ids = append(ids, off+5)
	}
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		length := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		typ, flags, id := http2.FrameType(hdr[3]), http2.Flags(hdr[4]), binary.BigEndian.Uint32(hdr[5:])&(1<<31-1)
		if _, err := br.Discard(length); err != nil {
			return
		}
		switch {
		case typ == http2.FrameHeaders && flags.Has(http2.FlagHeadersEndStream):
			for _, off := range ids {
				binary.BigEndian.PutUint32(resp[off:], id)
			}
			bw.Write(resp)
		case typ == http2.FrameSettings && !flags.Has(http2.FlagSettingsAck):
			fr.WriteSettingsAck()
		}
		if br.Buffered() == 0 && bw.Flush() != nil {
			return
		}
	}
}

// h2LoadMallocs runs a closed-loop h2c load of n requests against s and
// returns the heap allocations it made.
func h2LoadMallocs(tb testing.TB, s *rawH2Server, conns, streams int, n int64) uint64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL()}}, Protocol: ProtoH2,
		Connections: conns, Streams: streams, Requests: n})
	runtime.ReadMemStats(&after)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Requests != n || res.Errors != 0 {
		tb.Fatalf("requests %d errors %d %v, want %d requests without errors", res.Requests, res.Errors, res.ErrorSample, n)
	}
	return after.Mallocs - before.Mallocs
}

// h2AllocsPerRequest is the allocations of one more request in a load:
// the difference between a load of n and one of base requests over n-base,
// so the setup (connections, histograms, result) cancels out.
func h2AllocsPerRequest(tb testing.TB, s *rawH2Server, conns, streams int, base, n int64) float64 {
	small := h2LoadMallocs(tb, s, conns, streams, base)
	large := h2LoadMallocs(tb, s, conns, streams, n)
	return (float64(large) - float64(small)) / float64(n-base)
}

// TestH2AllocationsPerRequest: in steady state an HTTP/2 request (send
// the header block, read and decode the response, record) allocates
// nothing; the bound leaves room for the runtime's own odd allocation.
func TestH2AllocationsPerRequest(t *testing.T) {
	s := newRawH2Server(t, []byte("hello\n"))
	for _, streams := range []int{1, 10} {
		per := h2AllocsPerRequest(t, s, 2, streams, 2_000, 22_000)
		t.Logf("streams %d: %.3f allocations per request", streams, per)
		if per > 0.1 {
			t.Errorf("streams %d: %.3f allocations per HTTP/2 request, want < 0.1", streams, per)
		}
	}
}

// BenchmarkH2Requests measures HTTP/2 loads of b.N requests (h2c, 4
// connections, 1 or 10 streams each) against a frame-level server that
// allocates nothing per request. allocs/req is the client's allocations
// per request with the setup taken out (see h2AllocsPerRequest); ns/op,
// allocs/op and B/op include the setup, amortised over b.N.
func BenchmarkH2Requests(b *testing.B) {
	s := newRawH2Server(b, []byte("hello\n"))
	for _, streams := range []int{1, 10} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			const base = 1_000
			small := h2LoadMallocs(b, s, 4, streams, base)
			b.ReportAllocs()
			b.ResetTimer()
			large := h2LoadMallocs(b, s, 4, streams, int64(b.N))
			b.StopTimer()
			if b.N > base {
				b.ReportMetric((float64(large)-float64(small))/float64(b.N-base), "allocs/req")
			} else {
				b.ReportMetric(float64(large)/float64(b.N), "allocs/req")
			}
		})
	}
}
