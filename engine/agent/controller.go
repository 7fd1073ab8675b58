package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
)

// Config is one distributed load for Run.
type Config struct {
	// Agents are the agents' base URLs ("http://127.0.0.1:43121"), in
	// index order.
	Agents []string
	// Options is the whole load (load.Defaults applied by Run); Split
	// divides it.
	Options load.Options
	// Probes is the number of clock probes per agent (default 8).
	Probes int
	// Lead is the least time between sending the start commands and the
	// start instant (default 500ms; more when round trips are long).
	Lead time.Duration
	// Tolerance is how late an agent may begin (in its own clock) before
	// the load fails (default 50ms).
	Tolerance time.Duration
	// Ready bounds the wait for every agent to answer hello (default 60s).
	Ready time.Duration
	// Logf writes progress lines.
	Logf func(format string, args ...any)
	// Client is the HTTP client (default: one with no overall timeout,
	// using TLS when set).
	Client *http.Client
	// Token is the run's secret the agents were started with, sent with
	// every request (ServeOptions.Token).
	Token string
	// TLS is the client side of mutual TLS with the agents (their URLs
	// are then https://; see TLSFiles.Client).
	TLS *tls.Config
}

// Member is one agent of a finished (or failed) distributed load.
type Member struct {
	Index int
	URL   string
	Hello Hello
	Share Share
	// Offset is the agent's clock minus the controller's, from the probe
	// with the smallest round trip; RTT is that round trip and SkewBound
	// (RTT/2) bounds the error of Offset.
	Offset    time.Duration
	RTT       time.Duration
	SkewBound time.Duration
	// Drift is how much Offset changed during the load, from the clocks
	// probed again once the results are in (DriftBound bounds its error:
	// both estimates' bounds); Redrifted says that second probe answered.
	Drift, DriftBound time.Duration
	Redrifted         bool
	// Late is how much after the start instant the agent began, in its
	// own clock; StartError is the agent's start time on the controller's
	// clock minus the common start (within ±SkewBound of Late).
	Late       time.Duration
	StartError time.Duration
	// CPUUser and CPUSys are the agent process's CPU time during its load.
	CPUUser, CPUSys time.Duration
	Result          *measure.Record // Started on the controller's clock; its intervals carry no histogram
	Err             error
	// intervals are the interval histograms, kept for Merge.
	intervals []*sparse
}

// CPUPct is the agent's CPU during its load in percent of one core.
func (m *Member) CPUPct() float64 {
	if m.Result == nil || m.Result.Duration <= 0 {
		return 0
	}
	return 100 * (m.CPUUser + m.CPUSys).Seconds() / m.Result.Duration.Seconds()
}

// Outcome is a distributed load's merged result and its members.
type Outcome struct {
	Merged  *measure.Record
	Members []*Member
	// Start is the common start instant on the controller's clock.
	Start time.Time
}

// Run drives a distributed load: hello, clock probes, one start instant,
// results, merge. Any agent that does not answer, begins late or fails
// its load fails the whole load: the error names the agent and why, and
// the Outcome still lists every member (for the per-agent table). The
// agents are stopped when it returns.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	s, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Load(ctx, cfg.Options)
}

// Session is a group of agents that runs loads one after another (a
// capacity search runs one per probe): each Load measures the clocks
// again and starts every agent at one instant. Close stops the agents.
type Session struct {
	cfg    Config
	c      *controller
	hellos []Hello // per agent, once greeted
	greet  []bool
	urls   []string
}

// Open prepares a session with cfg's agents (cfg.Options is not used);
// nothing is sent before the first Load.
func Open(cfg Config) (*Session, error) {
	if len(cfg.Agents) == 0 {
		return nil, errors.New("no agents")
	}
	if cfg.Probes <= 0 {
		cfg.Probes = 8
	}
	if cfg.Lead <= 0 {
		cfg.Lead = 500 * time.Millisecond
	}
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = 50 * time.Millisecond
	}
	if cfg.Ready <= 0 {
		cfg.Ready = 60 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2, TLSClientConfig: cfg.TLS}}
	}
	s := &Session{cfg: cfg, c: &controller{cfg: cfg, client: cfg.Client},
		hellos: make([]Hello, len(cfg.Agents)), greet: make([]bool, len(cfg.Agents))}
	for _, u := range cfg.Agents {
		s.urls = append(s.urls, strings.TrimRight(u, "/"))
	}
	return s, nil
}

// Close stops every agent of the session.
func (s *Session) Close() {
	ms := make([]*Member, len(s.urls))
	for i, u := range s.urls {
		ms[i] = &Member{Index: i, URL: u}
	}
	s.c.stopAll(ms)
}

// Load runs one distributed load of options on the session's agents (see
// Run). After a failed load the session should be closed.
func (s *Session) Load(ctx context.Context, options load.Options) (*Outcome, error) {
	cfg, c := s.cfg, s.c
	opts := load.Defaults(options)
	if opts.Requester != nil || opts.OnResponse != nil {
		return nil, errors.New("request scripts cannot run on agents")
	}
	if opts.CACert != "" {
		return nil, fmt.Errorf("cacert %s: a CA file is read on this machine and is not sent to agents; agents load https targets without verifying certificates", opts.CACert)
	}
	if err := load.Validate(opts); err != nil {
		return nil, err
	}
	shares, err := Split(opts, len(s.urls))
	if err != nil {
		return nil, err
	}
	out := &Outcome{}
	for i, u := range s.urls {
		out.Members = append(out.Members, &Member{Index: i, URL: u, Share: shares[i], Hello: s.hellos[i]})
	}

	// Hello (once per session) and clock probes, every agent at once.
	if err := c.each(out.Members, func(m *Member) error {
		if !s.greet[m.Index] {
			if err := c.hello(ctx, m); err != nil {
				return err
			}
			s.hellos[m.Index], s.greet[m.Index] = m.Hello, true
		}
		return c.probe(ctx, m)
	}); err != nil {
		return out, err
	}
	var maxRTT time.Duration
	for _, m := range out.Members {
		maxRTT = max(maxRTT, m.RTT)
		cfg.Logf("agent %d (%s pid %d): clock offset %s ± %s", m.Index+1, m.Hello.Host, m.Hello.PID, m.Offset, m.SkewBound)
	}
	lead := max(cfg.Lead, 10*maxRTT)
	out.Start = time.Now().Add(lead)
	if err := c.each(out.Members, func(m *Member) error {
		return c.start(ctx, m, opts, out.Start)
	}); err != nil {
		return out, err
	}
	// Results: the long poll is bounded by the load's own bounds.
	wait := lead + opts.Duration + 2*opts.Timeout + 30*time.Second
	if opts.Duration == 0 {
		wait = 0 // bounded by requests only: the agent's own timeout ends it
	}
	// One agent failing ends the load: the others are stopped at once.
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	if opts.Progress != nil {
		watched := make(chan struct{})
		defer func() { <-watched }()
		go func() {
			defer close(watched)
			c.watch(rctx, out.Members, out.Start, opts.Progress)
		}()
	}
	err = c.each(out.Members, func(m *Member) error {
		err := c.result(rctx, m, out.Start, wait)
		if err != nil && !errors.Is(err, context.Canceled) {
			rcancel()
			c.stopAll([]*Member{m})
			go c.stopAll(out.Members)
		}
		return err
	})
	rcancel() // ends the progress watch
	if err != nil {
		return out, err
	}
	// The clocks again: how far each drifted while the load ran (the
	// start was corrected by the first offset only).
	c.each(out.Members, func(m *Member) error {
		if best, err := c.measureClock(ctx, m); err == nil {
			m.Drift, m.DriftBound, m.Redrifted = best.Offset()-m.Offset, m.SkewBound+best.RTT()/2, true
			cfg.Logf("agent %d: clock drifted %s (± %s) during the load", m.Index+1, m.Drift, m.DriftBound)
		} else {
			cfg.Logf("agent %d: clock not probed after the load: %v", m.Index+1, err)
		}
		return nil
	})
	parts := make([]Part, len(out.Members))
	for i, m := range out.Members {
		parts[i] = Part{Result: m.Result, Offset: m.StartError, intervals: m.intervals}
	}
	out.Merged, err = Merge(parts, out.Start, opts.Interval, opts.Rate)
	if err != nil {
		return out, err
	}
	out.Merged.Tag = opts.Tag
	out.Merged.MaxRequests, out.Merged.TimeLimit = opts.Requests, opts.Duration
	return out, nil
}

// watch reports the agents' summed totals about once a second until ctx
// ends: requests and errors so far, and the sum of their last intervals'
// rates. An agent that does not answer in time counts with its last
// answer; progress is for the console, never for the results.
func (c *controller) watch(ctx context.Context, ms []*Member, start time.Time, report func(load.Progress)) {
	last := make([]Progress, len(ms))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var wg sync.WaitGroup
		for i, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pctx, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
				defer cancel()
				var p Progress
				if c.do(pctx, http.MethodGet, m.URL+pathProgress, nil, &p) == nil {
					last[i] = p
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
		var sum load.Progress
		started := false
		for _, p := range last {
			started = started || p.Started
			sum.Requests += p.Requests
			sum.Errors += p.Errors
			sum.RPS += p.RPS
		}
		if !started {
			continue // before the start instant
		}
		sum.Elapsed = max(time.Since(start), 0)
		report(sum)
	}
}

// errRefused marks an agent that refused the controller's token.
var errRefused = errors.New("the agent refused this run's token (401)")

type controller struct {
	cfg    Config
	client *http.Client
}

// each runs f for every member concurrently; the first error (in index
// order) is returned, wrapped with the agent it concerns. A member's Err
// keeps its own error.
func (c *controller) each(ms []*Member, f func(*Member) error) error {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(m); err != nil && m.Err == nil {
				m.Err = err
			}
		}()
	}
	wg.Wait()
	// The first agent that failed on its own, before those cancelled
	// because of it.
	var first *Member
	for _, m := range ms {
		if m.Err != nil && (first == nil || errors.Is(first.Err, context.Canceled) && !errors.Is(m.Err, context.Canceled)) {
			first = m
		}
	}
	if first != nil {
		return fmt.Errorf("%w: agent %d%s: %v", ErrAgent, first.Index+1, first.where(), first.Err)
	}
	return nil
}

func (m *Member) where() string {
	if m.Hello.Host == "" {
		return " (" + m.URL + ")"
	}
	return fmt.Sprintf(" (%s pid %d)", m.Hello.Host, m.Hello.PID)
}

func (c *controller) do(ctx context.Context, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		if len(b) > MaxStartBody {
			return fmt.Errorf("the request is %d bytes, more than an agent reads (%d): use smaller request bodies", len(b), MaxStartBody)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%s %s: %w: it was started for another run, or is not this benchflow's", method, url, errRefused)
	}
	if resp.StatusCode != http.StatusOK {
		var we wireError
		if json.Unmarshal(b, &we) == nil && we.Error != "" {
			return errors.New(we.Error)
		}
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decoding the answer of %s: %w", url, err)
		}
	}
	return nil
}

// hello waits for the agent to answer (it may still be starting).
func (c *controller) hello(ctx context.Context, m *Member) error {
	deadline := time.Now().Add(c.cfg.Ready)
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.do(rctx, http.MethodGet, m.URL+pathHello, nil, &m.Hello)
		cancel()
		if err == nil {
			break
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errRefused) {
			return err // answering, but not to us: waiting changes nothing
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %s: %w", c.cfg.Ready, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if m.Hello.Protocol != ProtocolVersion {
		return fmt.Errorf("speaks agent protocol %d, this benchflow %d (version %s): run the same benchflow version on both sides", m.Hello.Protocol, ProtocolVersion, m.Hello.Version)
	}
	return nil
}

// Sample is one clock probe: the controller's send and receive times and
// the agent's clock in between.
type Sample struct {
	Sent, Received time.Time // controller clock (with monotonic readings)
	Agent          int64     // agent clock, Unix ns
}

// RTT is the sample's round trip.
func (s Sample) RTT() time.Duration { return s.Received.Sub(s.Sent) }

// Offset is the agent's clock minus the controller's, assuming the agent
// read its clock half-way through the round trip (NTP's estimate; the
// error is at most RTT/2).
func (s Sample) Offset() time.Duration {
	mid := s.Sent.UnixNano() + int64(s.RTT()/2)
	return time.Duration(s.Agent - mid)
}

// BestSample is the sample with the smallest round trip.
func BestSample(ss []Sample) (Sample, bool) {
	if len(ss) == 0 {
		return Sample{}, false
	}
	best := ss[0]
	for _, s := range ss[1:] {
		if s.RTT() < best.RTT() {
			best = s
		}
	}
	return best, true
}

func (c *controller) probe(ctx context.Context, m *Member) error {
	best, err := c.measureClock(ctx, m)
	if err != nil {
		return err
	}
	m.Offset, m.RTT, m.SkewBound = best.Offset(), best.RTT(), best.RTT()/2
	return nil
}

// measureClock probes m's clock cfg.Probes times and returns the sample
// with the smallest round trip.
func (c *controller) measureClock(ctx context.Context, m *Member) (Sample, error) {
	var ss []Sample
	for range c.cfg.Probes {
		var ck Clock
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.do(rctx, http.MethodGet, m.URL+pathClock, nil, &ck)
		cancel()
		if err != nil {
			return Sample{}, fmt.Errorf("clock probe: %w", err)
		}
		ss = append(ss, Sample{Sent: sent, Received: time.Now(), Agent: ck.ClockNS})
	}
	best, _ := BestSample(ss)
	return best, nil
}

func (c *controller) start(ctx context.Context, m *Member, opts load.Options, at time.Time) error {
	req := StartRequest{Index: m.Index, Options: m.Share.Apply(opts),
		StartNS: at.UnixNano() + int64(m.Offset), ToleranceNS: int64(c.cfg.Tolerance)}
	var rep StartReply
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.do(rctx, http.MethodPost, m.URL+pathStart, req, &rep); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	return nil
}

func (c *controller) result(ctx context.Context, m *Member, at time.Time, wait time.Duration) error {
	rctx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, at.Add(wait))
		defer cancel()
	}
	var w Result
	if err := c.do(rctx, http.MethodGet, m.URL+pathResult, nil, &w); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if rctx.Err() != nil {
			return fmt.Errorf("no result %s after the start: %w", wait, err)
		}
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("lost the agent during its load (it died or its connection broke; see its log): %w", err)
		}
		return fmt.Errorf("collecting the result: %w", err)
	}
	m.Late = time.Duration(w.LateNS)
	m.CPUUser, m.CPUSys = time.Duration(w.CPUUserNS), time.Duration(w.CPUSysNS)
	if w.StartedNS != 0 || w.Requests > 0 || len(w.Latency) > 0 {
		res, ivs, err := w.decode(false)
		if err != nil {
			return err
		}
		m.intervals = ivs
		// The agent's clock back to the controller's.
		res.Started = res.Started.Add(-m.Offset)
		res.Tag = c.cfg.Options.Tag
		m.StartError = res.Started.Sub(at)
		m.Result = res
	}
	if w.Error != "" {
		return errors.New(w.Error)
	}
	if m.Result == nil {
		return errors.New("the agent returned no measurement")
	}
	return nil
}

// stopAll tells every agent to exit (best effort, bounded).
func (c *controller) stopAll(ms []*Member) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.do(ctx, http.MethodPost, m.URL+pathStop, struct{}{}, nil)
		}()
	}
	wg.Wait()
	c.client.CloseIdleConnections()
}
