// Command h2floor is an HTTP/2 client of GET requests that does nothing
// but what HTTP/2 itself requires, to measure what that part costs. Every request is one HEADERS
// frame encoded once, before the load (only its 4-byte stream id changes);
// the requests that the responses of one read make room for go out in one
// write; responses are counted by the END_STREAM flag of their last frame,
// reading the 9-byte frame headers and nothing else (no HPACK decoding, no
// bodies kept, no latency). Flow control is opened wide once, so no
// WINDOW_UPDATE is due per response. It answers SETTINGS and PING as the
// protocol demands and stops at the first GOAWAY or RST_STREAM.
//
// It is not a load generator: it checks one response's status before the
// load and none during it. It does the least HTTP/2 work per request, but
// through crypto/tls and Go's netpoller (blocking reads, one goroutine per
// connection): benchflow's own socket loop spends less than it per request
// (docs/performance.md has the figures), so it bounds the protocol's work,
// not the system calls. Over TLS (https://, ALPN h2, certificate not
// verified) or cleartext (http://, prior knowledge, like h2load and
// benchflow --h2).
//
//	go run ./engine/load/bench/h2floor -c 16 -m 10 -d 5s https://127.0.0.1:8443/6b
//
// It prints h2load's summary lines (`finished in …, R req/s`, `requests:`,
// `status codes:`, `Cipher:`) so engine/load/bench/compare-h2load.sh can
// measure it like h2load (FLOOR=path).
package main

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

func main() {
	conns := flag.Int("c", 16, "connections")
	streams := flag.Int("m", 10, "concurrent streams per connection")
	threads := flag.Int("t", 1, "threads (GOMAXPROCS)")
	dur := flag.Duration("d", 5*time.Second, "duration (at most, with -n)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the load to this file (go tool pprof)")
	total := flag.Int64("n", 0, "stop after this many responses in all (0: run for -d), shared evenly by the connections")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: h2floor [-c N] [-m STREAMS] [-t THREADS] [-d DURATION] [-n REQUESTS] https://HOST:PORT/PATH | http://HOST:PORT/PATH (loopback only)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *conns < 1 || *streams < 1 || *streams > 1000 || *threads < 1 || *dur <= 0 || *total < 0 {
		flag.Usage()
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "h2floor:", err)
			os.Exit(1)
		}
		defer f.Close()
	}
	res, err := run(flag.Arg(0), *conns, *streams, *dur, *total)
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "h2floor:", err)
		os.Exit(1)
	}
	secs := res.elapsed.Seconds()
	fmt.Printf("finished in %.2fs, %.2f req/s, 0B/s\n", secs, float64(res.done)/secs)
	fmt.Printf("requests: %d total, %d started, %d done, %d succeeded, %d failed, %d errored, 0 timeout\n",
		res.done, res.done, res.done, res.done, res.failed, res.failed)
	fmt.Printf("status codes: %d 2xx, 0 3xx, 0 4xx, 0 5xx\n", res.done)
	if res.cipher != "" {
		fmt.Printf("Cipher: %s\n", res.cipher)
	}
}

type result struct {
	done, failed int64
	elapsed      time.Duration
	cipher       string
}

// target is what every connection needs: where to dial, whether over TLS,
// and the request's header block.
type target struct {
	addr  string
	tls   *tls.Config
	block []byte
}

func run(raw string, conns, streams int, dur time.Duration, total int64) (result, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return result{}, fmt.Errorf("%q: want an https:// or http:// URL", raw)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		return result{}, fmt.Errorf("%q: want HOST:PORT", u.Host)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return result{}, fmt.Errorf("%s is not a loopback address", host)
	}
	t := target{addr: u.Host, block: headerBlock(u.Scheme, u.Host, u.RequestURI())}
	if u.Scheme == "https" {
		t.tls = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}
	}
	if err := check(u, t); err != nil {
		return result{}, err
	}

	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := dial(t)
		if err != nil {
			for _, c := range cs[:i] {
				c.Close()
			}
			return result{}, err
		}
		cs[i] = c
	}
	var res result
	if tc, ok := cs[0].(*tls.Conn); ok {
		res.cipher = tls.CipherSuiteName(tc.ConnectionState().CipherSuite)
	}
	var done, failed atomic.Int64
	start := time.Now()
	deadline := start.Add(dur)
	limit := int64(-1) // no limit
	if total > 0 {
		limit = (total + int64(conns) - 1) / int64(conns)
	}
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for _, c := range cs {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			defer c.Close()
			n, err := load(c, t.block, streams, deadline, limit)
			done.Add(n)
			if err != nil {
				failed.Add(1)
				once.Do(func() { firstErr = err })
			}
		}(c)
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.done, res.failed = done.Load(), failed.Load()
	if firstErr != nil && res.done == 0 {
		return res, firstErr
	}
	if firstErr != nil {
		fmt.Fprintln(os.Stderr, "h2floor: a connection ended early:", firstErr)
	}
	return res, nil
}

func dial(t target) (net.Conn, error) {
	c, err := net.Dial("tcp", t.addr)
	if err != nil {
		return nil, err
	}
	if t.tls == nil {
		return c, nil
	}
	tc := tls.Client(c, t.tls)
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
		tc.Close()
		return nil, fmt.Errorf("%s: ALPN chose %q, not h2: the server does not speak HTTP/2 over TLS", t.addr, p)
	}
	return tc, nil
}

// check asks once, with x/net/http2's own client, and wants a 200: the load
// itself checks no status.
func check(u *url.URL, t target) error {
	tr := &http2.Transport{TLSClientConfig: t.tls}
	if t.tls == nil {
		tr.AllowHTTP = true
		tr.DialTLSContext = func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d, want 200", u, resp.StatusCode)
	}
	return nil
}

// headerBlock encodes GET SCHEME://AUTHORITY PATH in HPACK without touching
// the dynamic table, so that the same bytes are valid on every stream:
// :method and :scheme indexed from the static table, :path and :authority
// as literals without indexing (RFC 7541 6.2.2) of static names.
func headerBlock(scheme, authority, path string) []byte {
	b := []byte{0x82} // :method GET
	if scheme == "https" {
		b = append(b, 0x87)
	} else {
		b = append(b, 0x86)
	}
	if path == "/" {
		b = append(b, 0x84)
	} else {
		b = appendLiteral(b, 4, path)
	}
	return appendLiteral(b, 1, authority)
}

func appendLiteral(b []byte, nameIndex byte, value string) []byte {
	b = append(b, nameIndex) // 0000xxxx: literal without indexing, indexed name (< 15)
	b = appendInt(b, 7, uint64(len(value)))
	return append(b, value...)
}

// appendInt is HPACK's prefixed integer (RFC 7541 5.1) with the high bits 0.
func appendInt(b []byte, prefix uint, v uint64) []byte {
	max := uint64(1)<<prefix - 1
	if v < max {
		return append(b, byte(v))
	}
	b = append(b, byte(max))
	for v -= max; v >= 128; v >>= 7 {
		b = append(b, byte(v&0x7f|0x80))
	}
	return append(b, byte(v))
}

const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePing         = 0x6
	frameGoAway       = 0x7
	flagEndStream     = 0x1
	flagAck           = 0x1
	flagEndHeaders    = 0x4
	maxWindow         = 1<<31 - 1
	windowRefillBytes = 1 << 30
)

func appendFrameHeader(b []byte, length int, typ, flags byte, stream uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(stream>>24), byte(stream>>16), byte(stream>>8), byte(stream))
}

func appendWindowUpdate(b []byte, increment uint32) []byte {
	b = appendFrameHeader(b, 4, 0x8, 0, 0)
	return binary.BigEndian.AppendUint32(b, increment)
}

// load keeps streams requests in flight on c until deadline, or until
// limit responses (when limit >= 0), and returns how many responses ended
// before it.
func load(c net.Conn, block []byte, streams int, deadline time.Time, limit int64) (int64, error) {
	out := make([]byte, 0, 64<<10)
	out = append(out, http2.ClientPreface...)
	// SETTINGS: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 2^31-1; then the
	// connection window opened to the same size.
	out = appendFrameHeader(out, 12, frameSettings, 0, 0)
	out = binary.BigEndian.AppendUint16(out, 0x2)
	out = binary.BigEndian.AppendUint32(out, 0)
	out = binary.BigEndian.AppendUint16(out, 0x4)
	out = binary.BigEndian.AppendUint32(out, maxWindow)
	out = appendWindowUpdate(out, maxWindow-65535)
	next := uint32(1)
	var issued int64
	request := func(n int) {
		if limit >= 0 {
			n = int(min(int64(n), limit-issued))
		}
		issued += int64(max(n, 0))
		for ; n > 0; n-- {
			out = appendFrameHeader(out, len(block), frameHeaders, flagEndHeaders|flagEndStream, next)
			out = append(out, block...)
			next += 2
		}
	}
	request(streams)
	if _, err := c.Write(out); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(deadline.Add(time.Second))

	buf := make([]byte, 256<<10)
	have := 0 // bytes of buf not yet parsed (a frame cut by the read)
	skip := 0 // payload bytes of the current DATA frame still to come
	var done int64
	var received int
	_, isTLS := c.(*tls.Conn)
	for {
		n, err := c.Read(buf[have:])
		if n == 0 && err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return done, nil
			}
			return done, err
		}
		if isTLS {
			// crypto/tls returns one record per Read, and nginx sends
			// about one record per response: take the records already
			// read from the socket too (a deadline in the past makes
			// the read that would wait fail at once, without a system
			// call), so that one write answers them all.
			_ = c.SetReadDeadline(time.Unix(1, 0))
			for have+n < len(buf) {
				k, err := c.Read(buf[have+n:])
				n += k
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						return done, err
					}
					break
				}
			}
			_ = c.SetReadDeadline(deadline.Add(time.Second))
		}
		data := buf[:have+n]
		out = out[:0]
		ended := 0
		for {
			if skip > 0 {
				k := min(skip, len(data))
				skip -= k
				data = data[k:]
				if skip > 0 {
					break
				}
			}
			if len(data) < 9 {
				break
			}
			length := int(data[0])<<16 | int(data[1])<<8 | int(data[2])
			typ, flags := data[3], data[4]
			switch typ {
			case frameData:
				received += length
				if flags&flagEndStream != 0 {
					ended++
				}
				// A DATA payload is skipped, even across reads.
				data = data[9:]
				skip = length
				continue
			}
			if len(data) < 9+length {
				if 9+length > len(buf) {
					return done, fmt.Errorf("a %d-byte frame of type %d: larger than the read buffer", length, typ)
				}
				break // the rest of this frame comes with the next read
			}
			payload := data[9 : 9+length]
			switch typ {
			case frameHeaders:
				if flags&flagEndStream != 0 {
					ended++ // a response without a body
				}
			case frameSettings:
				if flags&flagAck == 0 {
					out = appendFrameHeader(out, 0, frameSettings, flagAck, 0)
				}
			case framePing:
				if flags&flagAck == 0 {
					out = appendFrameHeader(out, 8, framePing, flagAck, 0)
					out = append(out, payload...)
				}
			case frameGoAway:
				return done + int64(ended), fmt.Errorf("GOAWAY from the server (%d bytes of payload)", length)
			case frameRSTStream:
				return done + int64(ended), errors.New("RST_STREAM from the server")
			}
			data = data[9+length:]
		}
		have = copy(buf, data)
		if received >= windowRefillBytes {
			out = appendWindowUpdate(out, uint32(received))
			received = 0
		}
		if time.Now().After(deadline) {
			return done, nil
		}
		done += int64(ended)
		if limit >= 0 && done >= limit {
			return done, nil
		}
		request(ended)
		if len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				return done, err
			}
		}
	}
}
