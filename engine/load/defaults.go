package load

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// Defaults fills zero fields: 10 connections, 2 threads (never more than
// connections), 10s unless Requests is set, 2s timeout, 1s interval, GET and
// weight 1 for every target. It returns a copy; Targets is copied too.
// Negative values are not defaults: Validate refuses them, before or after
// Defaults.
func Defaults(o Options) Options {
	if o.Connections == 0 && !ConnectionStages(o.Stages) {
		o.Connections = 10 // with stages of connections, 0 is where they start
	}
	if o.Threads == 0 {
		o.Threads = 2
	}
	if o.Threads > o.Connections && o.Connections > 0 {
		o.Threads = o.Connections
	}
	if o.Duration == 0 && len(o.Stages) > 0 {
		o.Duration = StagesDuration(o.Stages)
	}
	if o.Duration == 0 && o.Requests <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Streams == 0 {
		o.Streams = 1
	}
	ts := make([]Target, len(o.Targets))
	for i, t := range o.Targets {
		if t.Method == "" {
			t.Method = "GET"
		}
		if t.Weight == 0 {
			t.Weight = 1
		}
		for _, h := range t.Headers {
			if isCloseHeader(h) {
				o.Close = true
			}
		}
		ts[i] = t
	}
	o.Targets = ts
	return o
}

// The limits of Options, shared by every front end (the `benchflow load`
// flags, load and warm steps, Run itself).
const (
	// MaxConnections bounds Options.Connections.
	MaxConnections = 1_000_000
	// MaxThreads bounds Options.Threads (event loops).
	MaxThreads = 4096
	// MaxBusyPoll bounds Options.BusyPoll: polling longer before sleeping
	// only burns CPU.
	MaxBusyPoll = 10 * time.Millisecond
	// MaxNap bounds Options.Nap: each nap delays the responses that
	// arrive during it.
	MaxNap = time.Millisecond
	// MaxRatePerConnection bounds Options.Rate divided by the connections.
	MaxRatePerConnection = 1e7
	// MinRate is the lowest open-loop Options.Rate: one request every
	// 1,000 s. Below it the send period of a connection (connections ÷
	// rate) no longer fits a time.Duration, and a rate that small is a
	// typo, not a load.
	MinRate = 1e-3
	// MinInterval is the shortest Options.Interval (the timeseries
	// resolution): each interval keeps a histogram, and a shorter one
	// only measures the ticker.
	MinInterval = 10 * time.Millisecond
	// MaxIntervals bounds Options.Duration ÷ Options.Interval, the rows a
	// load's timeseries keeps in memory (27 h at 1s, 16 min at 10ms).
	MaxIntervals = 100_000
	// MaxDuration bounds Options.Duration (a week).
	MaxDuration = 7 * 24 * time.Hour
	// MaxTimeout bounds Options.Timeout.
	MaxTimeout = time.Hour
)

// FieldError is one invalid setting of Options. Field is the setting's name
// as a load or warm step spells it ("connections", "busy_poll", "target");
// front ends map it to their own spelling (`benchflow load` to its flags,
// a step to the attribute's source range).
type FieldError struct {
	Field string
	// Index is the 1-based target (or url block) for "target" and
	// "weight", else 0.
	Index int
	// Value is the offending value as text ("-1", "1s"); empty when the
	// setting is missing.
	Value string
	// Reason says what is allowed: "must be at least 1".
	Reason string
	// Err is the underlying error (a target's parse error), or nil.
	Err error
}

func (e *FieldError) Error() string {
	switch {
	case e.Field == "target" && e.Index > 0:
		return fmt.Sprintf("parsing target %d: %s", e.Index, e.Reason)
	case e.Field == "weight":
		return fmt.Sprintf("url %d: weight = %s: %s", e.Index, e.Value, e.Reason)
	case e.Value == "":
		return e.Reason
	}
	return e.Field + " " + e.Value + ": " + e.Reason
}

func (e *FieldError) Unwrap() error { return e.Err }

// FieldErrors lists the field errors of an error returned by Validate (in
// the order of the settings), or nil.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// Validate is the one rule for every limit of Options, whichever front end
// built them. It accepts options as given (a zero field takes its default,
// see Defaults) as well as after Defaults, and returns nil or every problem
// found, each a *FieldError (see FieldErrors), joined with errors.Join:
//
//   - at least one target (or a Requester), each a URL Run can drive, with
//     a weight of 0 (the default, 1) or more;
//   - connections and threads 0 (the default) or from 1 to MaxConnections
//     and MaxThreads;
//   - requests 0 (unbounded) or more; rate 0 (closed loop) or a finite
//     number of requests per second from MinRate, at most
//     MaxRatePerConnection per connection;
//   - duration and timeout 0 (the default) or more, at most MaxDuration
//     and MaxTimeout; interval 0 (the
//     default) or from MinInterval, with at most MaxIntervals of them in
//     the duration; busy poll from 0 to MaxBusyPoll; nap from 0 to
//     MaxNap, with protocol h2, streams 2 or more and in closed loop;
//     engine empty or a known name (whether it can run here is Run's to
//     say).
//
// Two rules stay with the front ends because Options cannot express them:
// a duration written as 0 (which Options reads as "the default"), and, on
// the command line, -c 0 or -t 0 (whose flags carry the defaults).
func Validate(o Options) error { return o.Validate() }

// checkRate is the rule for an open-loop rate (0 is a closed loop): finite,
// from MinRate to MaxRatePerConnection per connection. It runs before any
// rate becomes a time.Duration (a send period), where an out-of-range
// value would overflow.
func checkRate(field string, rate float64, conns int) *FieldError {
	v := strconv.FormatFloat(rate, 'g', -1, 64)
	switch {
	case rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0):
		return &FieldError{Field: field, Value: v, Reason: "must be 0 (closed loop) or a positive number of requests per second"}
	case rate > 0 && rate < MinRate:
		return &FieldError{Field: field, Value: v, Reason: fmt.Sprintf("must be 0 (closed loop) or at least %g requests per second (one every %s)", MinRate, time.Duration(float64(time.Second)/MinRate))}
	case conns > 0 && rate/float64(conns) > MaxRatePerConnection:
		return &FieldError{Field: field, Value: v, Reason: "more than 10 million requests/s per connection"}
	}
	return nil
}

// validations counts the calls of Validate (Validations).
var validations atomic.Int64

// Validations is how many times Validate has run in this process, for
// tests that a caller checks a load's options once.
func Validations() int64 { return validations.Load() }

// Validate checks o; see the package function Validate.
func (o Options) Validate() error {
	validations.Add(1)
	var errs []error
	bad := func(field, value, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	if len(o.Targets) == 0 && o.Requester == nil {
		errs = append(errs, &FieldError{Field: "target", Reason: "no target URL given"})
	}
	for i, t := range o.Targets {
		if _, _, _, err := parseTarget(t.URL); err != nil {
			errs = append(errs, &FieldError{Field: "target", Index: i + 1, Value: t.URL, Reason: err.Error(), Err: err})
		}
		if t.Weight < 0 {
			errs = append(errs, &FieldError{Field: "weight", Index: i + 1, Value: strconv.Itoa(t.Weight), Reason: "must be positive"})
		}
	}
	count := func(field string, n, max int) {
		switch {
		case n < 0:
			bad(field, strconv.Itoa(n), "must be at least 1")
		case n > max:
			bad(field, strconv.Itoa(n), fmt.Sprintf("must be at most %d", max))
		}
	}
	count("connections", o.Connections, MaxConnections)
	count("threads", o.Threads, MaxThreads)
	if o.Requests < 0 {
		bad("requests", strconv.FormatInt(o.Requests, 10), "must not be negative")
	}
	if err := checkRate("rate", o.Rate, Defaults(Options{Connections: o.Connections}).Connections); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
		max   time.Duration
	}{{"duration", o.Duration, MaxDuration}, {"timeout", o.Timeout, MaxTimeout}, {"interval", o.Interval, MaxDuration}} {
		switch {
		case d.v < 0:
			bad(d.field, d.v.String(), "must not be negative")
		case d.v > d.max:
			bad(d.field, d.v.String(), "must be at most "+d.max.String())
		}
	}
	switch interval := Defaults(Options{Interval: o.Interval}).Interval; {
	case o.Interval > 0 && o.Interval < MinInterval:
		bad("interval", o.Interval.String(), fmt.Sprintf("must be at least %s (each interval keeps a histogram)", MinInterval))
	case interval > 0 && o.Duration/interval > MaxIntervals:
		bad("interval", interval.String(), fmt.Sprintf("makes %d timeseries rows over the duration %s, more than %d: use a longer interval", o.Duration/interval, o.Duration, MaxIntervals))
	}
	switch {
	case o.BusyPoll < 0:
		bad("busy_poll", o.BusyPoll.String(), "must not be negative")
	case o.BusyPoll > MaxBusyPoll:
		bad("busy_poll", o.BusyPoll.String(), fmt.Sprintf("at most %s (polling longer before sleeping only burns CPU)", MaxBusyPoll))
	}
	switch o.Engine {
	case "", "auto", EngineUring, EngineEpoll, EngineGoroutines:
	default:
		bad("engine", o.Engine, "want auto, uring, epoll or goroutines")
	}
	h2 := o.Protocol == ProtoH2
	h3 := o.Protocol == ProtoH3
	switch o.Protocol {
	case "", ProtoHTTP1, ProtoH2, ProtoH3:
	default:
		bad("protocol", o.Protocol, `want "http/1.1", "h2" (HTTP/2: over TLS by ALPN for https, h2c for http) or "h3" (HTTP/3 over QUIC, https only)`)
	}
	if h3 {
		validateH3(o, bad)
	} else if o.H3ZeroRTT {
		bad("h3_0rtt", "true", `0-RTT early data is HTTP/3's: it needs protocol "h3" (--h3); HTTP/1.1 and HTTP/2 resume sessions with tls_resume (--tls-resume)`)
	}
	switch {
	case o.Streams < 0:
		bad("streams", strconv.Itoa(o.Streams), "must be at least 1")
	case o.Streams > MaxStreams:
		bad("streams", strconv.Itoa(o.Streams), fmt.Sprintf("must be at most %d", MaxStreams))
	case o.Streams > 1 && !h2 && !h3:
		bad("streams", strconv.Itoa(o.Streams), `concurrent streams need protocol "h2" (HTTP/1.1 sends one request at a time per connection)`)
	}
	if h2 {
		if Defaults(o).Close {
			bad("protocol", o.Protocol, "a new connection per request (close) is not supported with HTTP/2: use HTTP/1.1 to measure connection setup")
		}
		if o.Engine == EngineUring || o.Engine == EngineEpoll {
			bad("engine", o.Engine, "HTTP/2 runs on the goroutine engine only")
		}
		if err := sameEndpoint(o.Targets); err != nil {
			bad("protocol", o.Protocol, err.Error())
		}
	}
	switch {
	case o.Nap < 0:
		bad("nap", o.Nap.String(), "must not be negative")
	case o.Nap > MaxNap:
		bad("nap", o.Nap.String(), fmt.Sprintf("at most %s (each nap delays the responses that arrive during it)", MaxNap))
	case o.Nap > 0 && !h2:
		bad("nap", o.Nap.String(), `naps need protocol "h2" (HTTP/1.1's event loops wait in epoll_wait; busy polling spares the server their wake-ups)`)
	case o.Nap > 0 && Defaults(o).Streams < 2:
		bad("nap", o.Nap.String(), "naps need streams of 2 or more: with one request in flight per connection the server runs out of work while the client naps (use busy_poll)")
	case o.Nap > 0 && o.Rate > 0:
		bad("nap", o.Nap.String(), "naps are for closed loop: with a rate they would delay the scheduled sends (busy polling does not)")
	}
	errs = append(errs, o.validateChecks()...)
	errs = append(errs, o.validateStages(Defaults(Options{Connections: o.Connections}).Connections)...)
	if fe := o.checkCACert(); fe != nil {
		errs = append(errs, fe)
	}
	return errors.Join(errs...)
}

// ValidateCACert is Validate's last rule alone: the CA certificates
// (CACert, CACertPEM) parse. It is for a caller that ran Validate on o
// before the certificates were read: Validate's error with the
// certificates is that error's field errors followed by this one's.
func (o Options) ValidateCACert() error {
	if fe := o.checkCACert(); fe != nil {
		return fe
	}
	return nil
}

func (o Options) checkCACert() *FieldError {
	if o.CACert != "" || o.CACertPEM != nil {
		if _, err := loadCAs(o); err != nil {
			return &FieldError{Field: "cacert", Value: o.CACert, Reason: err.Error()}
		}
	}
	return nil
}
