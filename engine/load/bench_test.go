package load

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// newTestSlot returns a connected-on-first-use slot of a runner aimed at s.
func newTestSlot(tb testing.TB, url string, close bool) (*runner, *conn) {
	tb.Helper()
	r, err := newRunner(Options{Targets: []Target{{URL: url}}, Connections: 1, Duration: time.Hour, Close: close})
	if err != nil {
		tb.Fatal(err)
	}
	r.initConns()
	r.begin()
	tb.Cleanup(func() {
		r.halt()
		r.conns[0].closeAll()
	})
	return r, r.conns[0]
}

// once runs one exchange and records it, as the slot loop does.
func once(r *runner, c *conn) outcome {
	req := &r.reqs[0]
	sent := time.Since(r.start)
	o, sent := c.exchange(req, sent, sent)
	c.record(req, o, sent, sent, time.Since(r.start))
	return o
}

// TestNoAllocationPerRequest: in steady state a keep-alive request
// (write, read, parse, record) allocates nothing.
func TestNoAllocationPerRequest(t *testing.T) {
	s := fastServer(t)
	r, c := newTestSlot(t, s.URL("/"), false)
	if o := once(r, c); o.err != nil { // dial outside the measurement
		t.Fatal(o.err)
	}
	allocs := testing.AllocsPerRun(2000, func() {
		if o := once(r, c); o.err != nil {
			t.Fatal(o.err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations per keep-alive request, want 0", allocs)
	}
	if c.requests != 2002 { // the first, the warm-up run of AllocsPerRun, 2000 measured
		t.Errorf("recorded %d requests, want 2002", c.requests)
	}
}

// BenchmarkRequestKeepAlive measures one keep-alive request against an
// in-process loopback server (the server's cost is included).
func BenchmarkRequestKeepAlive(b *testing.B) {
	s := fastServer(b)
	r, c := newTestSlot(b, s.URL("/"), false)
	once(r, c)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if o := once(r, c); o.err != nil {
			b.Fatal(o.err)
		}
	}
}

// BenchmarkRequestClose measures one request on a new connection.
func BenchmarkRequestClose(b *testing.B) {
	s := fastServer(b)
	r, c := newTestSlot(b, s.URL("/"), true)
	b.ReportAllocs()
	for b.Loop() {
		if o := once(r, c); o.err != nil {
			b.Fatal(o.err)
		}
	}
}

// BenchmarkRun measures whole loads of b.N requests over 16 connections,
// on each engine (uring where it runs); setup is amortised over b.N, so
// allocs/op is 0 when a request allocates nothing.
func BenchmarkRun(b *testing.B) {
	s := fastServer(b)
	for _, engine := range testEngines(b) {
		b.Run("engine="+engine, func(b *testing.B) {
			b.Setenv(pollEngineEnv, engine)
			b.ReportAllocs()
			res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 16, Requests: int64(b.N)})
			if err != nil {
				b.Fatal(err)
			}
			if res.Requests != int64(b.N) {
				b.Fatalf("requests %d, want %d", res.Requests, b.N)
			}
		})
	}
}

// BenchmarkParseResponse measures the parser alone on a typical nginx
// response held in memory.
func BenchmarkParseResponse(b *testing.B) {
	resp := []byte("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 05:00:00 GMT\r\n" +
		"Content-Type: application/octet-stream\r\nContent-Length: 6\r\nLast-Modified: Mon, 30 Nov 2026 04:00:00 GMT\r\n" +
		"Connection: keep-alive\r\nETag: \"1-6\"\r\nAccept-Ranges: bytes\r\n\r\nhello\n")
	src := &repeatReader{data: resp}
	rd := newReader(src)
	b.ReportAllocs()
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		if _, err := rd.readResponse(false); err != nil {
			b.Fatal(err)
		}
	}
}

// repeatReader returns data once per Read, forever.
type repeatReader struct{ data []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.data), nil }

// BenchmarkExternal loads the URL in BENCHFLOW_BENCH_URL (e.g. a local
// nginx) with 64 connections for b.N requests, for profiling the generator
// against a real server: go test -bench External -cpuprofile cpu.out.
// BENCHFLOW_BENCH_CLOSE=1 opens a new connection per request;
// BENCHFLOW_BENCH_STREAMS=N speaks HTTP/2 instead, over 16 connections of
// N streams each (as compare-h2load.sh); BENCHFLOW_BENCH_H3=1 speaks
// HTTP/3 (an https:// URL) over 16 QUIC connections of
// BENCHFLOW_BENCH_STREAMS streams each (default 1, as compare-h3.sh).
func BenchmarkExternal(b *testing.B) {
	url := os.Getenv("BENCHFLOW_BENCH_URL")
	if url == "" {
		b.Skip("set BENCHFLOW_BENCH_URL to a loopback server to run")
	}
	opts := Options{Targets: []Target{{URL: url}}, Connections: 64, Requests: int64(b.N),
		Close: os.Getenv("BENCHFLOW_BENCH_CLOSE") == "1"}
	if v := os.Getenv("BENCHFLOW_BENCH_STREAMS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("BENCHFLOW_BENCH_STREAMS=%q: want a number of streams, 1 or more", v)
		}
		opts.Protocol, opts.Streams, opts.Connections = ProtoH2, n, 16
	}
	if os.Getenv("BENCHFLOW_BENCH_H3") == "1" {
		opts.Protocol, opts.Connections = ProtoH3, 16
	}
	b.ReportAllocs()
	res, err := Run(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	if res.Errors > 0 {
		b.Fatalf("%d errors: %v", res.Errors, res.ErrorSample)
	}
	b.ReportMetric(res.RPS(), "req/s")
}

// TestMemoryDoesNotGrowWithRequests: a load of 10× more requests allocates
// about the same (the difference is bounded by a few interval histograms,
// not by the request count).
func TestMemoryDoesNotGrowWithRequests(t *testing.T) {
	s := fastServer(t)
	allocated := func(n int64) uint64 { b, _ := loadAllocs(t, s, n); return b }
	small, large := allocated(2_000), allocated(20_000)
	t.Logf("allocated %d B for 2,000 requests, %d B for 20,000", small, large)
	// 18,000 more requests may cost a few more 1 s interval histograms
	// (~20 KB each), never bytes per request.
	if large > small+200_000 {
		t.Errorf("allocated %d B for 20,000 requests vs %d B for 2,000: memory grows with requests", large, small)
	}
}

// loadAllocs runs a closed-loop load of n requests over 8 connections
// against s and returns the bytes and the number of allocations it made.
func loadAllocs(t *testing.T, s *rawServer, n int64) (bytes, mallocs uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 8, Requests: n})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != n {
		t.Fatalf("requests %d, want %d", res.Requests, n)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs
}

// BenchmarkOpenLoop measures the loader's own CPU per request in open
// loop (-R) against the server at BENCHFLOW_BENCH_URL (another process,
// e.g. `benchflow serve --delay 1ms`, so that the server's CPU is not
// counted), at BENCHFLOW_BENCH_RATE requests a second (default 2000), 10
// connections, 2 threads, as `benchflow load -R` does by default; b.N is
// the number of requests (-benchtime 10000x: 5 s at 2,000/s). It reports
// the loader's CPU per request (cpu-µs/req, from getrusage) and the rate
// held; compare with the closed loop's (BENCHFLOW_BENCH_RATE=0).
func BenchmarkOpenLoop(b *testing.B) {
	url := os.Getenv("BENCHFLOW_BENCH_URL")
	if url == "" {
		b.Skip("set BENCHFLOW_BENCH_URL to a server in another process to run")
	}
	rate := 2000.0
	if v := os.Getenv("BENCHFLOW_BENCH_RATE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			b.Fatalf("BENCHFLOW_BENCH_RATE=%q: want requests a second (0: closed loop)", v)
		}
		rate = f
	}
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: url}}, Connections: 10, Threads: 2,
		Rate: rate, Requests: int64(b.N)})
	if err != nil {
		b.Fatal(err)
	}
	if res.Errors > 0 {
		b.Fatalf("%d errors: %v", res.Errors, res.ErrorSample)
	}
	b.ReportMetric(float64(res.CPUPerRequest().Nanoseconds())/1e3, "cpu-µs/req")
	b.ReportMetric(res.RPS(), "req/s")
}
