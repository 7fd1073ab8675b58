// Command h3floor is an HTTP/3 client of GET requests that does nothing
// but quic-go's own plain loop: per connection one QUIC connection
// (quic.DialAddr, the library's default quic.Config) and one
// http3.ClientConn, and per stream a goroutine that sends the same
// *http.Request again and again with ClientConn.RoundTrip, reads the body
// into io.Discard, closes it and counts the response by its status class.
// No context per request, no latency, no histogram, no shared counter per
// request (a stream's counts are its own until the end; -n claims from one
// counter per connection). It is the floor of the library: what any
// client built on quic-go's http3 package spends per request, the
// baseline benchflow load --h3 is measured against (issue 43's target:
// at least 1.2× its requests per CPU second).
//
// It is not a load generator: it checks one response's status before the
// load, keeps no timings, and ends a connection at its first error. The
// certificate is not verified unless -cacert names the CA (as benchflow
// load).
//
//	go run ./engine/load/bench/h3floor -c 16 -m 10 -d 5s https://127.0.0.1:8443/6b
//
// It prints h2load's summary lines (`finished in …, R req/s`,
// `requests:`, `status codes:`, `Cipher:`), so
// engine/load/bench/compare-h3.sh measures it as compare-h2load.sh
// measures h2load and h2floor, and one more line, `cpu:`, with its own
// CPU time during the load (user and system, getrusage) and per response.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// config is the command line.
type config struct {
	url             string
	conns, streams  int
	threads         int
	dur             time.Duration
	total           int64
	profile, caCert string
}

// parse reads the command line, writing flag errors and the usage to out.
func parse(args []string, out io.Writer) (config, error) {
	fs := flag.NewFlagSet("h3floor", flag.ContinueOnError)
	fs.SetOutput(out)
	var c config
	fs.IntVar(&c.conns, "c", 16, "connections (QUIC)")
	fs.IntVar(&c.streams, "m", 10, "concurrent streams per connection")
	fs.IntVar(&c.threads, "t", 1, "threads (GOMAXPROCS)")
	fs.DurationVar(&c.dur, "d", 5*time.Second, "duration (at most, with -n)")
	fs.Int64Var(&c.total, "n", 0, "stop after this many responses in all (0: run for -d), shared evenly by the connections")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the load to this file (go tool pprof)")
	fs.StringVar(&c.caCert, "cacert", "", "verify the server's certificate against the CA certificates in this PEM file (default: no verification)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: h3floor [-c N] [-m STREAMS] [-t THREADS] [-d DURATION] [-n REQUESTS] [-cacert FILE] [-cpuprofile FILE] https://HOST:PORT/PATH (loopback only)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() != 1:
		return c, fmt.Errorf("want one URL, got %d arguments", fs.NArg())
	case c.conns < 1:
		return c, fmt.Errorf("-c %d: want at least 1 connection", c.conns)
	case c.streams < 1 || c.streams > 1000:
		return c, fmt.Errorf("-m %d: want 1 to 1000 streams per connection", c.streams)
	case c.threads < 1:
		return c, fmt.Errorf("-t %d: want at least 1 thread", c.threads)
	case c.dur <= 0:
		return c, fmt.Errorf("-d %s: want a positive duration", c.dur)
	case c.total < 0:
		return c, fmt.Errorf("-n %d: want 0 (no limit) or a number of responses", c.total)
	}
	c.url = fs.Arg(0)
	return c, nil
}

func main() {
	c, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "h3floor:", err)
		os.Exit(2)
	}
	tc, err := tlsConfig(c.caCert)
	if err != nil {
		fmt.Fprintln(os.Stderr, "h3floor:", err)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(c.threads)
	if c.profile != "" {
		f, err := os.Create(c.profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "h3floor:", err)
			os.Exit(1)
		}
		defer f.Close()
	}
	res, err := run(c.url, c.conns, c.streams, c.dur, c.total, tc)
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "h3floor:", err)
		os.Exit(1)
	}
	secs := res.elapsed.Seconds()
	done := res.done()
	fmt.Printf("finished in %.2fs, %.2f req/s, %s/s\n", secs, float64(done)/secs, byteRate(float64(res.bytes)/secs))
	fmt.Printf("requests: %d total, %d started, %d done, %d succeeded, %d failed, %d errored, 0 timeout\n",
		done, done, done, res.status[2], done-res.status[2]+res.failed, res.failed)
	fmt.Printf("status codes: %d 2xx, %d 3xx, %d 4xx, %d 5xx\n", res.status[2], res.status[3], res.status[4], res.status[5])
	fmt.Printf("Cipher: %s\n", res.cipher)
	fmt.Printf("Application protocol: %s\n", res.alpn)
	perReq := 0.0
	if done > 0 {
		perReq = float64(res.cpu.Microseconds()) / float64(done)
	}
	fmt.Printf("cpu: %.3fs user+sys during the load (%.3fs user, %.3fs sys), %.2f us per response\n",
		res.cpu.Seconds(), res.user.Seconds(), (res.cpu - res.user).Seconds(), perReq)
}

// byteRate prints a rate of bytes as h2load does (B, KB, MB, GB: powers of 1024).
func byteRate(b float64) string {
	for _, unit := range []string{"B", "KB", "MB"} {
		if b < 1024 {
			return fmt.Sprintf("%.2f%s", b, unit)
		}
		b /= 1024
	}
	return fmt.Sprintf("%.2fGB", b)
}

// tlsConfig verifies against caFile's certificates, or verifies nothing
// when caFile is empty.
func tlsConfig(caFile string) (*tls.Config, error) {
	c := &tls.Config{NextProtos: []string{http3.NextProtoH3}}
	if caFile == "" {
		c.InsecureSkipVerify = true
		return c, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("-cacert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-cacert %s: no PEM certificate in it", caFile)
	}
	c.RootCAs = pool
	return c, nil
}

type result struct {
	status       [6]int64 // responses by status class (index 1..5; 0: outside 100-599)
	bytes        int64    // body bytes
	failed       int64    // connections that ended with an error
	elapsed      time.Duration
	cpu, user    time.Duration // the process's CPU time during the load
	cipher, alpn string
}

func (r *result) done() int64 {
	var n int64
	for _, k := range r.status {
		n += k
	}
	return n
}

// counts is what one stream saw.
type counts struct {
	status [6]int64
	bytes  int64
}

func run(raw string, conns, streams int, dur time.Duration, total int64, tc *tls.Config) (result, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return result{}, fmt.Errorf("%q: want an https:// URL (HTTP/3 runs over QUIC, which is always TLS)", raw)
	}
	host, _, err := net.SplitHostPort(u.Host)
	if err != nil {
		return result{}, fmt.Errorf("%q: want HOST:PORT", u.Host)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return result{}, fmt.Errorf("%s is not a loopback address", host)
	}
	if tc == nil {
		tc, _ = tlsConfig("")
	}
	tr := &http3.Transport{}
	ccs := make([]*http3.ClientConn, conns)
	closeAll := func(n int) {
		for _, cc := range ccs[:n] {
			_ = cc.CloseWithError(0, "")
		}
	}
	for i := range ccs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		qc, err := quic.DialAddr(ctx, u.Host, tc, nil)
		cancel()
		if err != nil {
			closeAll(i)
			return result{}, fmt.Errorf("QUIC connection to %s: %w", u.Host, err)
		}
		ccs[i] = tr.NewClientConn(qc)
	}
	defer closeAll(conns)
	st, err := check(ccs[0], raw)
	if err != nil {
		return result{}, err
	}
	var res result
	res.cipher, res.alpn = tls.CipherSuiteName(st.CipherSuite), st.NegotiatedProtocol

	limit := int64(-1) // no limit
	if total > 0 {
		limit = (total + int64(conns) - 1) / int64(conns)
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		stopping atomic.Bool
	)
	cpu0, user0 := cpuTime()
	start := time.Now()
	deadline := start.Add(dur)
	// A server that stops answering ends the load a second after its
	// deadline: closing the connections ends the round trips waiting.
	stall := time.AfterFunc(dur+time.Second, func() {
		stopping.Store(true)
		closeAll(conns)
	})
	for _, cc := range ccs {
		wg.Add(1)
		go func(cc *http3.ClientConn) {
			defer wg.Done()
			n, err := load(cc, raw, streams, deadline, limit)
			mu.Lock()
			defer mu.Unlock()
			for i := range n.status {
				res.status[i] += n.status[i]
			}
			res.bytes += n.bytes
			if err != nil && !stopping.Load() {
				res.failed++
				if firstErr == nil {
					firstErr = err
				}
			}
		}(cc)
	}
	wg.Wait()
	stall.Stop()
	res.elapsed = time.Since(start)
	cpu1, user1 := cpuTime()
	res.cpu, res.user = cpu1-cpu0, user1-user0
	if firstErr != nil && res.done() == 0 {
		return res, firstErr
	}
	if firstErr != nil {
		fmt.Fprintln(os.Stderr, "h3floor: a connection ended early:", firstErr)
	}
	return res, nil
}

// cpuTime is the process's CPU time so far: user+system, and user.
func cpuTime() (total, user time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	user = time.Duration(ru.Utime.Nano())
	return user + time.Duration(ru.Stime.Nano()), user
}

// check asks once on cc and wants a 200 (the load counts status classes
// but stops at none); it returns the connection's TLS state.
func check(cc *http3.ClientConn, raw string) (tls.ConnectionState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return tls.ConnectionState{}, fmt.Errorf("%s: %w", raw, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return tls.ConnectionState{}, fmt.Errorf("%s answered %d, want 200", raw, resp.StatusCode)
	}
	var st tls.ConnectionState
	if resp.TLS != nil {
		st = *resp.TLS
	}
	return st, nil
}

// load keeps streams requests in flight on cc until deadline, or until
// limit responses (when limit >= 0), and returns the responses that ended
// before it. The first error of a stream closes the connection, which
// ends the others.
func load(cc *http3.ClientConn, raw string, streams int, deadline time.Time, limit int64) (counts, error) {
	var (
		issued   atomic.Int64 // claims against limit
		mu       sync.Mutex
		all      counts
		firstErr error
		wg       sync.WaitGroup
	)
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := stream(cc, raw, deadline, limit, &issued)
			mu.Lock()
			defer mu.Unlock()
			for i := range n.status {
				all.status[i] += n.status[i]
			}
			all.bytes += n.bytes
			if err != nil && firstErr == nil {
				firstErr = err
				_ = cc.CloseWithError(0, "")
			}
		}()
	}
	wg.Wait()
	return all, firstErr
}

// stream is one stream's loop: one request, built once, sent again and
// again.
func stream(cc *http3.ClientConn, raw string, deadline time.Time, limit int64, issued *atomic.Int64) (counts, error) {
	var n counts
	req, err := http.NewRequest(http.MethodGet, raw, nil)
	if err != nil {
		return n, err
	}
	for {
		if limit >= 0 && issued.Add(1) > limit {
			return n, nil
		}
		resp, err := cc.RoundTrip(req)
		if err != nil {
			return n, err
		}
		k, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return n, err
		}
		if time.Now().After(deadline) {
			return n, nil
		}
		n.bytes += k
		class := resp.StatusCode / 100
		if class < 1 || class > 5 {
			class = 0
		}
		n.status[class]++
	}
}
