package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"mime"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/clock"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// DefaultAddr is where ListenAndServe listens when Config.Addr is empty.
const DefaultAddr = "127.0.0.1:8080"

// MaxBytesPath is the largest body a /bytes/<n> request may ask for (1 GiB).
const MaxBytesPath int64 = 1 << 30

// Limits of the in-memory cache of a served directory: files up to
// maxCachedFile bytes are read at start while the total stays under
// maxCacheTotal; everything else is served from disk.
const (
	maxCachedFile = 16 << 20
	maxCacheTotal = 256 << 20
)

// Pattern is what generated bodies are made of: the pattern repeated and
// cut to the requested length. A 6-byte body is exactly "hello\n".
const Pattern = "hello\n"

// Config describes the server. The zero value serves an empty 200 response
// on every path (and n bytes on /bytes/<n>).
type Config struct {
	// Addr is host:port for ListenAndServe; "" means DefaultAddr. Port 0
	// picks a free port (Ready tells which).
	Addr string
	// Dir, when set, serves the files under it: regular files are read
	// into memory once, at start (up to 16 MiB each, 256 MiB in all);
	// larger, later-added and missing files go through http.FileServer.
	Dir string
	// Size is the length of the generated body answered on every path
	// when Dir is empty.
	Size int64
	// Delay is waited before answering each request.
	Delay time.Duration
	// Workers, with Delay, makes the server a queue with a known capacity:
	// at most Workers requests are served at once, each occupies its
	// worker for exactly Delay (scheduled on absolute times, so timer
	// overshoot does not accumulate), and the others wait in line. Its
	// capacity is Workers/Delay requests per second. 0 means unlimited.
	Workers int
	// Stall and StallEvery make the server stall every request that
	// arrives during the last Stall of each StallEvery period (counted
	// from start) until that period ends: a server that freezes for
	// Stall every StallEvery, the classic coordinated-omission test.
	Stall, StallEvery time.Duration
	// Status is the status code of every response (200 when 0). 204 and
	// 304 responses carry no body.
	Status int
	// Ready, when set, is called once the listener accepts connections,
	// with its address.
	Ready func(addr net.Addr)
	// ShutdownTimeout bounds the graceful shutdown when the context ends
	// (5s when 0); connections still open after it are closed.
	ShutdownTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that has waited this long
	// for its next request (DefaultIdleTimeout when 0; negative: never),
	// so clients that open connections and leave them idle do not hold
	// the server's descriptors for good. A connection that has not sent
	// its first request's headers is closed after HeaderTimeout.
	IdleTimeout time.Duration
	// HeaderTimeout bounds the wait for a request's headers once its
	// first byte arrived, and for a new connection's first request
	// (DefaultHeaderTimeout when 0; negative: none). HTTP/1.1 and HTTP/2.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body, from the
	// handler's start (DefaultBodyTimeout when 0; negative: none): a
	// client trickling a body is answered 408 and its connection closed
	// (HTTP/1.1), its stream reset (HTTP/2, HTTP/3).
	BodyTimeout time.Duration
	// MaxBodyBytes bounds a request's body (DefaultMaxBodyBytes when 0;
	// negative: none): a longer one is answered 413 and its connection
	// closed. Bodies are read and discarded.
	MaxBodyBytes int64
	// MaxHeaderBytes bounds a request's header block (DefaultMaxHeaderBytes
	// when 0): HTTP/1.1 answers 431, HTTP/2 and HTTP/3 refuse the stream.
	MaxHeaderBytes int
	// TLS serves HTTPS with a self-signed certificate for localhost and
	// 127.0.0.1 made at start, HTTP/2 negotiated by ALPN (and HTTP/1.1).
	// Without it the server speaks HTTP/1.1 and cleartext HTTP/2 with
	// prior knowledge (h2c) on the same port.
	TLS bool
	// H3, with TLS, also serves HTTP/3 over QUIC on the UDP port of the
	// same number as the TLS listener, with the same handler and
	// certificate, and accepts 0-RTT early data (so a load can measure
	// resumed handshakes: benchflow load --h3-0rtt). The TLS responses
	// advertise it with Alt-Svc. It needs TLS: QUIC is always encrypted.
	H3 bool
	// MaxStreams bounds the concurrent HTTP/2 streams per connection
	// (SETTINGS_MAX_CONCURRENT_STREAMS; 250 when 0), and with H3 the
	// concurrent request streams a QUIC connection may open.
	MaxStreams int
}

// DefaultMaxStreams is Config.MaxStreams when 0.
const DefaultMaxStreams = 250

// DefaultIdleTimeout is Config.IdleTimeout when 0 (--idle-timeout): longer
// than any pause of a load between two requests on one connection, short
// enough that abandoned connections are gone within a minute.
const DefaultIdleTimeout = 60 * time.Second

// HeaderTimeout bounds the wait for a request's headers on a new
// connection (DefaultHeaderTimeout; kept for its callers).
const HeaderTimeout = DefaultHeaderTimeout

// The defaults of a request's bounds (--header-timeout, --body-timeout,
// --max-body, --max-header): generous for any benchmark's request, short
// enough that clients trickling bytes cannot hold descriptors for good.
const (
	DefaultHeaderTimeout  = 30 * time.Second
	DefaultBodyTimeout    = 30 * time.Second
	DefaultMaxBodyBytes   = 64 << 20
	DefaultMaxHeaderBytes = 1 << 20
)

// orDefault is d when it is 0, none (0) when negative, else v.
func orDefault[T int | int64 | time.Duration](v, d T) T {
	switch {
	case v == 0:
		return d
	case v < 0:
		return 0
	}
	return v
}

// bounded reads and discards each request's body before h answers,
// within the body's time and size bounds: a client trickling a body, or
// sending more than the limit, is answered 408 or 413 and its connection
// closed instead of holding it (the HTTP/1.1 server would otherwise wait
// for the rest of the body after the response, without a deadline).
func bounded(h http.Handler, cfg Config) http.Handler {
	timeout := orDefault(cfg.BodyTimeout, DefaultBodyTimeout)
	limit := orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if timeout > 0 {
			if rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
				// No deadline here: close the body when the time is up.
				t := time.AfterFunc(timeout, func() { r.Body.Close() })
				defer t.Stop()
			}
		}
		body := r.Body
		if limit > 0 {
			body = http.MaxBytesReader(w, r.Body, limit)
		}
		if _, err := io.Copy(io.Discard, body); err != nil {
			var tooBig *http.MaxBytesError
			if r.ProtoMajor == 1 {
				w.Header()["Connection"] = closeValue
			}
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("request body over the server's limit of %d bytes (benchflow serve --max-body)", limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, fmt.Sprintf("request body not received within %s (benchflow serve --body-timeout)", timeout), http.StatusRequestTimeout)
			return
		}
		if timeout > 0 {
			rc.SetReadDeadline(time.Time{})
		}
		h.ServeHTTP(w, r)
	})
}

// handler is the http.Handler New returns. Everything a response needs is
// computed in New; ServeHTTP only picks and writes.
type handler struct {
	status   int
	noBody   bool
	size     int64
	sizeLen  []string // Content-Length of the generated body
	block    []byte   // Pattern repeated, a whole number of times
	files    map[string]*file
	fallback http.Handler
	delay    time.Duration
	workers  chan *worker // nil: no queue
	stall    time.Duration
	every    time.Duration
	start    time.Time
	stopping <-chan struct{}
}

type file struct {
	body  []byte
	ctype []string
	clen  []string
}

// ErrH3NeedsTLS is the error of a Config with H3 but not TLS.
var ErrH3NeedsTLS = errors.New("HTTP/3 runs over QUIC, which is always TLS: set TLS (--tls) as well")

var (
	textPlain  = []string{"text/plain; charset=utf-8"}
	closeValue = []string{"close"}
)

// New validates cfg and returns the handler, with bodies (and the files of
// cfg.Dir) loaded.
func New(cfg Config) (http.Handler, error) {
	return newHandler(cfg, nil)
}

func newHandler(cfg Config, stopping <-chan struct{}) (*handler, error) {
	h := &handler{
		status:   cfg.Status,
		size:     cfg.Size,
		delay:    cfg.Delay,
		stall:    cfg.Stall,
		every:    cfg.StallEvery,
		start:    time.Now(),
		stopping: stopping,
	}
	if h.status == 0 {
		h.status = http.StatusOK
	}
	switch {
	case h.status < 200 || h.status > 599:
		return nil, fmt.Errorf("status %d: want a code from 200 to 599", cfg.Status)
	case cfg.Size < 0 || cfg.Size > MaxSize:
		return nil, fmt.Errorf("size %d: want 0 to %d bytes", cfg.Size, MaxSize)
	case cfg.Delay < 0:
		return nil, fmt.Errorf("delay %s: must not be negative", cfg.Delay)
	case cfg.Workers < 0 || cfg.Workers > 1<<16:
		return nil, fmt.Errorf("workers %d: want 0 (unlimited) to %d", cfg.Workers, 1<<16)
	case cfg.Workers > 0 && cfg.Delay == 0:
		return nil, fmt.Errorf("workers %d: needs a service time (Delay, --delay)", cfg.Workers)
	case cfg.Stall < 0 || cfg.StallEvery < 0:
		return nil, fmt.Errorf("stall %s every %s: must not be negative", cfg.Stall, cfg.StallEvery)
	case cfg.Stall > 0 && cfg.StallEvery == 0:
		return nil, fmt.Errorf("stall %s: needs a period (StallEvery, --stall-every)", cfg.Stall)
	case cfg.StallEvery > 0 && cfg.Stall == 0:
		return nil, fmt.Errorf("stall every %s: needs a stall duration (Stall, --stall)", cfg.StallEvery)
	case cfg.Stall > 0 && cfg.Stall >= cfg.StallEvery:
		return nil, fmt.Errorf("stall %s every %s: the stall must be shorter than the period", cfg.Stall, cfg.StallEvery)
	case cfg.H3 && !cfg.TLS:
		return nil, ErrH3NeedsTLS
	}
	if cfg.Workers > 0 {
		h.workers = make(chan *worker, cfg.Workers)
		for range cfg.Workers {
			h.workers <- &worker{}
		}
	}
	h.noBody = h.status == http.StatusNoContent || h.status == http.StatusNotModified
	h.sizeLen = []string{strconv.FormatInt(cfg.Size, 10)}
	h.block = []byte(strings.Repeat(Pattern, (64<<10)/len(Pattern)))
	if cfg.Dir != "" {
		if err := h.loadDir(cfg.Dir); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// loadDir reads the regular files under dir into h.files, keyed by URL
// path; a directory's index.html also answers for the directory.
func (h *handler) loadDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("serving directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("serving directory %q: not a directory", dir)
	}
	h.files = map[string]*file{}
	h.fallback = http.FileServer(http.Dir(dir))
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxCachedFile || total+info.Size() > maxCacheTotal {
			return nil // served from disk
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += int64(len(body))
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		urlPath := "/" + filepath.ToSlash(rel)
		ctype := mime.TypeByExtension(path.Ext(urlPath))
		if ctype == "" {
			ctype = http.DetectContentType(body)
		}
		f := &file{body: body, ctype: []string{ctype}, clen: []string{strconv.Itoa(len(body))}}
		h.files[urlPath] = f
		if path.Base(urlPath) == "index.html" {
			h.files[strings.TrimSuffix(urlPath, "index.html")] = f
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading directory %q: %w", dir, err)
	}
	return nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.workers != nil {
		if !h.serveQueued(r.Context()) {
			h.closing(w, r)
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
	} else if h.delay > 0 || h.every > 0 {
		if !h.pause(r.Context()) {
			h.closing(w, r)
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
	}
	p := r.URL.Path
	if n, ok := strings.CutPrefix(p, "/bytes/"); ok {
		size, err := ParseSize(n)
		if err == nil && size > MaxBytesPath {
			err = fmt.Errorf("%d bytes is more than the %d a /bytes/ path may ask for", size, MaxBytesPath)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.generated(w, r, size, []string{strconv.FormatInt(size, 10)})
		return
	}
	if h.files != nil {
		f := h.files[p]
		if f == nil {
			h.fallback.ServeHTTP(w, r)
			return
		}
		hdr := w.Header()
		hdr["Content-Type"] = f.ctype
		if h.noBody {
			w.WriteHeader(h.status)
			return
		}
		hdr["Content-Length"] = f.clen
		w.WriteHeader(h.status)
		if r.Method != http.MethodHead {
			w.Write(f.body)
		}
		return
	}
	h.generated(w, r, h.size, h.sizeLen)
}

// closing marks the response of a server shutting down: HTTP/1.1 closes
// the connection after it. HTTP/2 and HTTP/3 forbid the header (HTTP/3
// clients reject a response carrying it); their servers send GOAWAY.
func (h *handler) closing(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header()["Connection"] = closeValue
	}
}

// generated writes n bytes of Pattern.
func (h *handler) generated(w http.ResponseWriter, r *http.Request, n int64, clen []string) {
	hdr := w.Header()
	hdr["Content-Type"] = textPlain
	if h.noBody {
		w.WriteHeader(h.status)
		return
	}
	hdr["Content-Length"] = clen
	w.WriteHeader(h.status)
	if r.Method == http.MethodHead {
		return
	}
	for n > 0 {
		c := int64(len(h.block))
		if n < c {
			c = n
		}
		if _, err := w.Write(h.block[:c]); err != nil {
			return
		}
		n -= c
	}
}

// pause waits the configured delay and, inside a stall window, until the
// window ends. It reports false when the request or the server ended first.
func (h *handler) pause(ctx context.Context) bool {
	var s clock.Sleeper // a timerfd, not Go's millisecond-late timer
	return s.Sleep(h.wait(time.Now()), ctx.Done(), h.stopping)
}

// worker is one server of the Workers queue.
type worker struct {
	busyUntil time.Time // when its last request's service ends
}

// serveQueued waits for a free worker and occupies it for the service time.
// The service is scheduled on the queue's own clock, not on when this
// goroutine ran: a request that was already waiting when its worker's
// previous service ended starts at that end, so a busy worker finishes
// exactly Workers/Delay requests a second whatever the timers' overshoot
// and the hand-over's delay (see worker.serve). It reports false when the
// request or the server ended first.
func (h *handler) serveQueued(ctx context.Context) bool {
	arrived := time.Now()
	var wk *worker
	select {
	case wk = <-h.workers:
	case <-ctx.Done():
		return false
	case <-h.stopping:
		return false
	}
	end := wk.serve(arrived, h.wait(arrived))
	defer func() { h.workers <- wk }()
	var s clock.Sleeper
	return s.Until(end, ctx.Done(), h.stopping)
}

// serve books the worker for a request that arrived at arrived and needs
// d of service, and returns when the service ends: d after the later of
// the arrival and the end of the worker's previous service. The previous
// service's timer fires late and the worker changes hands later still, so
// counting from the time the request gets the worker would lose that lag
// on every request (a 4 × 2 ms queue then served about 1,600 req/s instead
// of 2,000).
func (wk *worker) serve(arrived time.Time, d time.Duration) time.Time {
	start := wk.busyUntil
	if start.Before(arrived) {
		start = arrived
	}
	wk.busyUntil = start.Add(d)
	return wk.busyUntil
}

// wait is how long a request arriving at now waits: the delay plus, inside
// a stall window, the rest of the window.
func (h *handler) wait(now time.Time) time.Duration {
	d := h.delay
	if h.every > 0 {
		phase := now.Sub(h.start) % h.every
		if phase >= h.every-h.stall {
			d += h.every - phase
		}
	}
	return d
}

// ListenAndServe listens on cfg.Addr (DefaultAddr when empty) and serves
// until ctx ends; see Serve. With cfg.H3 it also listens on the UDP port
// of the same number; port 0 picks one free for both.
func ListenAndServe(ctx context.Context, cfg Config) error {
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	var lc net.ListenConfig
	if !(cfg.H3 && cfg.TLS) {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		return Serve(ctx, ln, cfg)
	}
	_, port, _ := net.SplitHostPort(addr)
	var last error
	// A free TCP port may be taken in UDP: with port 0, try a few.
	for range 10 {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		pc, err := listenUDP(ctx, ln.Addr())
		if err == nil {
			return serve(ctx, ln, pc, cfg)
		}
		ln.Close()
		last = err
		if port != "0" {
			break
		}
	}
	return last
}

// listenUDP opens the UDP socket of HTTP/3 at the TCP listener's address.
func listenUDP(ctx context.Context, a net.Addr) (net.PacketConn, error) {
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(ctx, "udp", a.String())
	if err != nil {
		return nil, fmt.Errorf("listening on UDP %s for HTTP/3: %w", a, err)
	}
	return pc, nil
}

// Serve serves HTTP/1.1 and HTTP/2 (h2c, or h2 with cfg.TLS) on ln until
// ctx ends, then shuts down gracefully: it stops accepting, ends delayed
// and stalled requests with 503, waits up to cfg.ShutdownTimeout for the
// requests in flight and closes the rest. With cfg.H3 it also serves
// HTTP/3 on the UDP socket it opens at ln's address, and closes that
// socket before it returns. It closes ln. cfg.Addr is ignored. It returns
// nil after a shutdown caused by ctx, and the error otherwise.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	var pc net.PacketConn
	if cfg.H3 && cfg.TLS {
		var err error
		if pc, err = listenUDP(ctx, ln.Addr()); err != nil {
			ln.Close()
			return err
		}
	}
	return serve(ctx, ln, pc, cfg)
}

// serve is Serve with the UDP socket of HTTP/3 (nil without cfg.H3).
func serve(ctx context.Context, ln net.Listener, pc net.PacketConn, cfg Config) error {
	closeAll := func() {
		ln.Close()
		if pc != nil {
			pc.Close()
		}
	}
	stopping := make(chan struct{})
	h, err := newHandler(cfg, stopping)
	if err != nil {
		closeAll()
		return err
	}
	top := bounded(h, cfg)
	srv := newServer(cfg, top)
	var h3srv *http3.Server
	if cfg.TLS {
		cert, err := SelfSigned()
		if err != nil {
			closeAll()
			return err
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
		if pc != nil {
			h3srv = newH3Server(cfg, top, cert)
			srv.Handler = altSvc(top, pc.LocalAddr())
		}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	errc := make(chan error, 2)
	pending := 1
	go func() { errc <- srv.Serve(ln) }()
	if h3srv != nil {
		pending++
		go func() {
			if err := h3srv.Serve(pc); err != nil {
				errc <- fmt.Errorf("HTTP/3 on UDP %s: %w", pc.LocalAddr(), err)
				return
			}
			errc <- http.ErrServerClosed
		}()
	}
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	var failed error
	select {
	case err := <-errc:
		pending--
		failed = fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	close(stopping)
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	if h3srv != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h3srv.Shutdown(sctx); err != nil {
				h3srv.Close()
			}
		}()
	}
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	wg.Wait()
	if pc != nil {
		pc.Close() // http3.Server leaves open a socket it was given
	}
	for ; pending > 0; pending-- {
		err := <-errc
		if failed == nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, quic.ErrServerClosed) {
			failed = fmt.Errorf("serving on %s: %w", ln.Addr(), err)
		}
	}
	return failed
}

// newH3Server is the HTTP/3 server for h: cert, 0-RTT accepted, cfg's
// idle timeout and stream limit.
func newH3Server(cfg Config, h http.Handler, cert tls.Certificate) *http3.Server {
	streams := cfg.MaxStreams
	if streams <= 0 {
		streams = DefaultMaxStreams
	}
	qc := &quic.Config{Allow0RTT: true, MaxIncomingStreams: int64(streams)}
	idle := cfg.IdleTimeout
	switch {
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0 // http3: never; QUIC's own idle timeout (30s of silence) still applies
	}
	if idle > 0 {
		qc.MaxIdleTimeout = idle
	}
	return &http3.Server{
		Handler:        h,
		MaxHeaderBytes: orDefault(cfg.MaxHeaderBytes, DefaultMaxHeaderBytes),
		TLSConfig:      http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
		QUICConfig:     qc,
		IdleTimeout:    idle,
	}
}

// altSvc advertises HTTP/3 on the UDP port of a on every response of h.
func altSvc(h http.Handler, a net.Addr) http.Handler {
	port := 0
	if u, ok := a.(*net.UDPAddr); ok {
		port = u.Port
	}
	v := []string{fmt.Sprintf(`h3=":%d"; ma=86400`, port)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Alt-Svc"] = v
		h.ServeHTTP(w, r)
	})
}

// newServer is the http.Server for h with cfg's timeouts.
func newServer(cfg Config, h http.Handler) *http.Server {
	idle := cfg.IdleTimeout
	switch {
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0 // with ReadTimeout 0: never
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: orDefault(cfg.HeaderTimeout, DefaultHeaderTimeout), IdleTimeout: idle,
		MaxHeaderBytes: orDefault(cfg.MaxHeaderBytes, DefaultMaxHeaderBytes)}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	if cfg.TLS {
		srv.Protocols.SetHTTP2(true)
	} else {
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	srv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: cfg.MaxStreams}
	return srv
}

// SelfSigned makes a self-signed ECDSA certificate for localhost,
// 127.0.0.1 and ::1, valid for a day.
func SelfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "benchflow serve"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making a self-signed certificate: %w", err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// IsLoopback reports whether addr (host:port) binds only loopback
// addresses: 127.0.0.0/8, ::1 or "localhost". An empty host binds every
// interface and is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
