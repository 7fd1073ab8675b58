package agent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benchflow/benchflow/engine/load"
)

// ServeOptions configure an agent.
type ServeOptions struct {
	// Listen is the address to listen on ("127.0.0.1:0", ":7700").
	Listen string
	// Index is the agent's position in its group (0-based); messages show
	// its number, Index+1.
	Index   int
	Version string
	// Idle is how long the agent waits without a controller (no request
	// open and none for Idle) before it exits; default 60s. A running
	// load is cancelled then.
	Idle time.Duration
	// Linger: a stop from the controller cancels the load but does not
	// end Serve, which then returns on ctx or after Idle (for schedulers
	// that count a task ending on its own as failed).
	Linger bool
	// ClockShift shifts every time the agent reports or is given, as if
	// its clock were off by that much (tests of the skew correction).
	ClockShift time.Duration
	// Ready is called with the address once the agent listens.
	Ready func(addr string)
	// Logf writes a line to the agent's log.
	Logf func(format string, args ...any)
	// Token is the run's secret (see NewToken): every request must carry
	// it as "Authorization: Bearer TOKEN", or it is refused with 401.
	// Serve refuses to run without one unless Insecure is set.
	Token string
	// Insecure serves without authentication (local experiments only:
	// anyone who reaches the port commands the agent).
	Insecure bool
	// Targets are the target URLs the agent may load, fixed when it
	// starts: a start naming any other is refused. Serve refuses to run
	// without one.
	Targets []string
	// TLS, when set, serves HTTPS with it (mutual TLS: set ClientAuth
	// and ClientCAs; see TLSFiles.Server).
	TLS *tls.Config
}

// Bounds of what an agent reads from the network.
const (
	// MaxStartBody bounds a start request's body: the load's options
	// and the targets' bodies, base64-encoded.
	MaxStartBody = 32 << 20
	// maxOtherBody bounds every other request's body (stop sends "{}").
	maxOtherBody = 4 << 10
	// maxHeaderBytes bounds a request's header.
	maxHeaderBytes = 16 << 10
	// MaxStartWait bounds how far ahead a start instant may be.
	MaxStartWait = 5 * time.Minute
	// MaxTolerance bounds a start's tolerance.
	MaxTolerance = time.Minute
	// MinTokenLen is the shortest secret Serve accepts.
	MinTokenLen = 16
)

// ClockShiftEnv is read by the agent command: a duration by which the
// agent's clock is shifted ("90s", "-1h"), or N=DURATION entries separated
// by commas for the agents numbered N only (agents are numbered from 1 in
// everything benchflow shows). It exists to test the controller's clock
// correction.
const ClockShiftEnv = "BENCHFLOW_AGENT_CLOCK_SHIFT"

// ParseClockShift reads ClockShiftEnv's value for the agent at index
// (0-based: agent number index+1).
func ParseClockShift(v string, index int) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if !strings.Contains(v, "=") {
		return time.ParseDuration(v)
	}
	for _, part := range strings.Split(v, ",") {
		k, d, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return 0, fmt.Errorf("%s: %q is not INDEX=DURATION", ClockShiftEnv, part)
		}
		i, err := strconv.Atoi(k)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: index %w", ClockShiftEnv, part, err)
		}
		if i == index+1 {
			return time.ParseDuration(d)
		}
	}
	return 0, nil
}

// loadRun is one load of an agent; an agent runs loads one after another
// (a capacity search sends one per probe).
type loadRun struct {
	done   chan struct{} // closed when result is set
	result *Result
}

// server is one agent.
type server struct {
	opts ServeOptions
	host string

	mu       sync.Mutex
	active   int             // requests in progress
	last     time.Time       // end of the last request
	cur      *loadRun        // the latest load (nil before the first)
	base     context.Context // ends when Serve returns
	stopping chan struct{}
	stopOnce sync.Once
	progress atomic.Pointer[Progress] // the running load's last totals
	allowed  map[string]bool          // opts.Targets
	tokenSum [sha256.Size]byte        // of opts.Token
	starting atomic.Bool              // a start request is being read
}

func (s *server) now() time.Time { return time.Now().Add(s.opts.ClockShift) }

// Serve runs an agent until ctx ends, a controller stops it, or no
// controller has talked to it for opts.Idle. It returns nil on those, an
// error when it cannot listen.
func Serve(ctx context.Context, opts ServeOptions) error {
	if opts.Idle <= 0 {
		opts.Idle = 60 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	if !opts.Insecure && len(opts.Token) < MinTokenLen {
		return fmt.Errorf("no secret: an agent needs its run's token (at least %d characters; see docs/distributed.md) or --insecure", MinTokenLen)
	}
	if len(opts.Targets) == 0 {
		return errors.New("no target: an agent loads only the targets it is started with")
	}
	allowed := map[string]bool{}
	for _, t := range opts.Targets {
		if err := (load.Options{Targets: []load.Target{{URL: t}}}).Validate(); err != nil {
			return fmt.Errorf("allowed target: %w", err)
		}
		allowed[t] = true
	}
	s := &server{opts: opts, last: time.Now(), stopping: make(chan struct{}), allowed: allowed, tokenSum: sha256.Sum256([]byte(opts.Token))}
	s.host, _ = os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathHello, s.track(s.hello))
	mux.HandleFunc("GET "+pathClock, s.track(s.clock))
	mux.HandleFunc("POST "+pathStart, s.track(s.start))
	mux.HandleFunc("GET "+pathResult, s.track(s.resultHandler))
	mux.HandleFunc("POST "+pathStop, s.track(s.stop))
	mux.HandleFunc("GET "+pathProgress, s.track(s.progressHandler))
	// A request must be whole within these, so a slowly sent one cannot
	// keep the agent past its idle timeout (the long poll of a result
	// waits in the handler, which ReadTimeout does not bound).
	srv := &http.Server{Handler: s.authenticate(mux), ReadHeaderTimeout: min(10*time.Second, opts.Idle),
		ReadTimeout: min(30*time.Second, opts.Idle), IdleTimeout: opts.Idle, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: log.New(io.Discard, "", 0), TLSConfig: opts.TLS}
	lctx, cancelLoad := context.WithCancel(ctx)
	defer cancelLoad()
	s.base = lctx
	errc := make(chan error, 1)
	go func() {
		if opts.TLS != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}
	opts.Logf("agent %d listening on %s (pid %d)", opts.Index+1, ln.Addr(), os.Getpid())
	tick := time.NewTicker(min(time.Second, opts.Idle/4))
	defer tick.Stop()
	why := ""
	stopping := s.stopping
wait:
	for {
		select {
		case <-ctx.Done():
			why = "interrupted"
			break wait
		case <-stopping:
			if opts.Linger {
				opts.Logf("agent %d stopped by the controller: load cancelled, waiting to be stopped (--linger)", opts.Index+1)
				cancelLoad()
				stopping = nil
				continue
			}
			why = "stopped by the controller"
			break wait
		case err := <-errc:
			return err
		case <-tick.C:
			s.mu.Lock()
			idle := s.active == 0 && time.Since(s.last) > opts.Idle
			s.mu.Unlock()
			if idle {
				why = fmt.Sprintf("no controller for %s", opts.Idle)
				break wait
			}
		}
	}
	opts.Logf("agent %d exiting: %s", opts.Index+1, why)
	cancelLoad()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// authenticate refuses, with 401 and before anything is read or counted
// as the controller's presence, every request that does not carry the
// token. The comparison is of the tokens' SHA-256 sums in constant time,
// so neither the token nor its length shows in the time it takes.
func (s *server) authenticate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Insecure {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			sum := sha256.Sum256([]byte(got))
			if subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) != 1 || !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="benchflow-agent"`)
				w.Header().Set("Connection", "close")
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		limit := int64(maxOtherBody)
		if r.URL.Path == pathStart {
			limit = MaxStartBody
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		h.ServeHTTP(w, r)
	})
}

// track counts a request as the controller's presence.
func (s *server) track(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.active++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.active--
			s.last = time.Now()
			s.mu.Unlock()
		}()
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

type wireError struct {
	Error string `json:"error"`
}

func (s *server) hello(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Hello{Protocol: ProtocolVersion, Version: s.opts.Version, Host: s.host, PID: os.Getpid(),
		Index: s.opts.Index, Cores: runtime.NumCPU(), ClockNS: s.now().UnixNano()})
}

func (s *server) progressHandler(w http.ResponseWriter, _ *http.Request) {
	p := s.progress.Load()
	if p == nil {
		p = &Progress{}
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *server) clock(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, Clock{ClockNS: s.now().UnixNano()})
}

func (s *server) start(w http.ResponseWriter, r *http.Request) {
	// One start request is read at a time: each may be MaxStartBody.
	if !s.starting.CompareAndSwap(false, true) {
		writeJSON(w, http.StatusConflict, wireError{"another start request is being read"})
		return
	}
	var req StartRequest
	err := json.NewDecoder(r.Body).Decode(&req)
	s.starting.Store(false)
	if err != nil {
		code := http.StatusBadRequest
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			code = http.StatusRequestEntityTooLarge
			err = fmt.Errorf("more than %d bytes", mb.Limit)
		}
		writeJSON(w, code, wireError{"decoding the start request: " + err.Error()})
		return
	}
	opts := load.Defaults(req.Options)
	if err := s.check(req, opts); err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errTarget) {
			code = http.StatusForbidden
		}
		writeJSON(w, code, wireError{err.Error()})
		return
	}
	s.mu.Lock()
	if s.cur != nil && s.cur.result == nil {
		s.mu.Unlock()
		writeJSON(w, http.StatusConflict, wireError{"a load is running on this agent: a new one starts after its result"})
		return
	}
	cur := &loadRun{done: make(chan struct{})}
	s.cur = cur
	s.mu.Unlock()
	s.progress.Store(nil)
	wait := time.Duration(req.StartNS - s.now().UnixNano())
	if wait < -time.Duration(req.ToleranceNS) {
		res := &Result{Index: s.opts.Index, LateNS: int64(-wait),
			Error: fmt.Sprintf("the start command arrived %s after the start instant", (-wait).Round(time.Microsecond))}
		s.finish(cur, res)
		writeJSON(w, http.StatusOK, StartReply{WaitNS: int64(wait)})
		return
	}
	writeJSON(w, http.StatusOK, StartReply{WaitNS: int64(wait)})
	s.opts.Logf("agent %d: %d connections, rate %g, starting in %s", s.opts.Index+1, opts.Connections, opts.Rate, wait.Round(time.Microsecond))
	go s.run(cur, req, opts)
}

// errTarget marks a start naming a target the agent was not started for.
var errTarget = errors.New("target not allowed")

// check validates a start request: its load with load.Validate (the rule
// every front end applies), its targets against the agent's, and the
// request's own numbers.
func (s *server) check(req StartRequest, opts load.Options) error {
	for i, t := range opts.Targets {
		if !s.allowed[t.URL] {
			what := "target"
			if strings.HasPrefix(t.URL, "unix:") {
				what = "Unix socket target"
			}
			return fmt.Errorf("%w: %s %d (%s) is not one this agent was started for", errTarget, what, i+1, load.RedactURL(t.URL))
		}
	}
	if err := load.Validate(opts); err != nil {
		return err
	}
	switch {
	case req.Index < 0:
		return fmt.Errorf("index %d: must not be negative", req.Index)
	case req.ToleranceNS < 0 || req.ToleranceNS > int64(MaxTolerance):
		return fmt.Errorf("tolerance %s: must be from 0 to %s", time.Duration(req.ToleranceNS), MaxTolerance)
	case req.StartNS-s.now().UnixNano() > int64(MaxStartWait):
		return fmt.Errorf("start instant %s ahead: at most %s", time.Duration(req.StartNS-s.now().UnixNano()).Round(time.Second), MaxStartWait)
	}
	return nil
}

// run waits for the start instant, runs the load and keeps its result.
func (s *server) run(cur *loadRun, req StartRequest, opts load.Options) {
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTimer(time.Duration(req.StartNS - s.now().UnixNano()))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		s.finish(cur, &Result{Index: s.opts.Index, Error: "stopped before the start instant"})
		return
	}
	// The last stretch on the clock itself: timers may fire early or late
	// by a scheduler tick.
	for s.now().UnixNano() < req.StartNS {
		runtime.Gosched()
	}
	s.progress.Store(&Progress{Started: true})
	opts.Progress = func(p load.Progress) {
		s.progress.Store(&Progress{Started: true, ElapsedNS: int64(p.Elapsed), Requests: p.Requests, Errors: p.Errors, RPS: p.RPS})
	}
	before := rusage()
	res, err := load.Run(ctx, opts)
	after := rusage()
	var w *Result
	if res != nil {
		var werr error
		if w, werr = resultToWire(s.opts.Index, res, s.opts.ClockShift); werr != nil {
			w = &Result{Index: s.opts.Index, Error: werr.Error()}
		}
	} else {
		w = &Result{Index: s.opts.Index}
	}
	if err != nil && w.Error == "" {
		w.Error = err.Error()
	}
	w.CPUUserNS, w.CPUSysNS = after[0]-before[0], after[1]-before[1]
	if w.StartedNS != 0 {
		w.LateNS = w.StartedNS - req.StartNS
		if tol := req.ToleranceNS; tol > 0 && w.LateNS > tol && w.Error == "" {
			w.Error = fmt.Sprintf("started %s after the start instant (tolerance %s)", time.Duration(w.LateNS).Round(time.Microsecond), time.Duration(tol))
		}
	}
	s.opts.Logf("agent %d: %d requests, %d errors in %s%s", s.opts.Index+1, w.Requests, w.Errors, w.Duration.Round(time.Millisecond), errSuffix(w.Error))
	s.finish(cur, w)
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func (s *server) finish(cur *loadRun, r *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur.result == nil {
		cur.result = r
		close(cur.done)
	}
}

// resultHandler answers the latest load's result, once it has ended.
func (s *server) resultHandler(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		writeJSON(w, http.StatusConflict, wireError{"no load was started on this agent"})
		return
	}
	select {
	case <-cur.done:
	case <-r.Context().Done():
		return
	case <-s.stopping:
		writeJSON(w, http.StatusGone, wireError{"the agent was stopped"})
		return
	}
	s.mu.Lock()
	res := cur.result
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, res)
}

func (s *server) stop(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct{}{})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.stopOnce.Do(func() { close(s.stopping) })
}

// rusage is this process's user and system CPU time in ns.
func rusage() [2]int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return [2]int64{}
	}
	return [2]int64{ru.Utime.Nano(), ru.Stime.Nano()}
}

// ErrAgent marks an agent's failure (late, failed load, unreachable).
var ErrAgent = errors.New("agent failed")
