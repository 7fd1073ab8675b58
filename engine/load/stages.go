package load

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/units"
)

// Stage is one stage of a ramped open loop (--stage DURATION:RATE, a
// step's stages = ["10s:2000"]): over Duration the rate moves linearly
// from the previous stage's target (the first stage's from Options.Rate,
// 0 when not given) to Rate requests/s — k6's ramping-arrival-rate. The
// load lasts the sum of its stages.
//
// A stage of connections (--stage DURATION:64c, Closed set) ramps a
// closed loop instead — k6's ramping-vus: over Duration the number of
// open connections moves from the previous stage's target (the first
// stage's from Options.Connections, 0 when not given) to Connections, one
// connection at a time at exact instants (slotRamp). A load's stages are
// all of rates or all of connections.
type Stage struct {
	Duration    time.Duration `json:"duration_ns"`
	Rate        float64       `json:"rate"`
	Connections int           `json:"connections,omitempty"`
	Closed      bool          `json:"closed,omitempty"`
}

// MaxStages bounds the stages of one load.
const MaxStages = 100

// ParseStage reads DURATION:RATE ("10s:2000", an open-loop ramp) or
// DURATION:Nc ("10s:64c", a closed-loop ramp of connections).
func ParseStage(s string) (Stage, error) {
	d, target, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || strings.TrimSpace(d) == "" || strings.TrimSpace(target) == "" {
		return Stage{}, fmt.Errorf("want DURATION:RATE or DURATION:CONNECTIONSc, e.g. 10s:2000 (ramp to 2000 req/s over 10s) or 10s:64c (to 64 connections)")
	}
	dur, err := units.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return Stage{}, fmt.Errorf("duration %q: %w", d, err)
	}
	if dur <= 0 {
		return Stage{}, fmt.Errorf("duration %q: must be more than 0", d)
	}
	target = strings.TrimSpace(target)
	if n, ok := strings.CutSuffix(target, "c"); ok {
		c, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || c < 0 || c > MaxConnections {
			return Stage{}, fmt.Errorf("target %q: want a number of connections from 0 to %d, then c (e.g. 64c)", target, MaxConnections)
		}
		return Stage{Duration: dur, Connections: c, Closed: true}, nil
	}
	rate, err := strconv.ParseFloat(target, 64)
	if err != nil || rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return Stage{}, fmt.Errorf("target %q: want a rate in requests/s (0 or more) or a number of connections (64c)", target)
	}
	return Stage{Duration: dur, Rate: rate}, nil
}

// ParseStages reads every stage, the first error naming its place.
func ParseStages(exprs []string) ([]Stage, error) {
	var out []Stage
	for i, e := range exprs {
		st, err := ParseStage(e)
		if err != nil {
			if len(exprs) > 1 {
				return nil, fmt.Errorf("stage %d of %d, %q: %w", i+1, len(exprs), e, err)
			}
			return nil, fmt.Errorf("stage %q: %w", e, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// StagesDuration is how long stages last in total.
func StagesDuration(stages []Stage) time.Duration {
	var d time.Duration
	for _, s := range stages {
		d += s.Duration
	}
	return d
}

// validateStages is Validate's rule for Stages.
func (o Options) validateStages(conns int) []error {
	if len(o.Stages) == 0 {
		return nil
	}
	var errs []error
	if len(o.Stages) > MaxStages {
		errs = append(errs, &FieldError{Field: "stages", Value: strconv.Itoa(len(o.Stages)), Reason: fmt.Sprintf("at most %d stages", MaxStages)})
	}
	if ConnectionStages(o.Stages) {
		return append(errs, o.validateConnStages()...)
	}
	peak := o.Rate
	for i, s := range o.Stages {
		v := fmt.Sprintf("%s:%g", s.Duration, s.Rate)
		switch {
		case s.Duration <= 0:
			errs = append(errs, &FieldError{Field: "stages", Value: v, Reason: fmt.Sprintf("stage %d: the duration must be more than 0", i+1)})
		case s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0):
			errs = append(errs, &FieldError{Field: "stages", Value: v, Reason: fmt.Sprintf("stage %d: the rate must be 0 or more requests/s", i+1)})
		}
		peak = max(peak, s.Rate)
	}
	if total := StagesDuration(o.Stages); o.Duration != 0 && o.Duration != total {
		errs = append(errs, &FieldError{Field: "duration", Value: o.Duration.String(), Reason: fmt.Sprintf("a load with stages lasts their sum (%s): leave the duration out", total)})
	}
	if peak < MinRate {
		errs = append(errs, &FieldError{Field: "stages", Value: fmt.Sprintf("%d stages", len(o.Stages)), Reason: fmt.Sprintf("no stage reaches %g requests/s: nothing would be sent", MinRate)})
	}
	if conns > 0 && peak/float64(conns) > MaxRatePerConnection {
		errs = append(errs, &FieldError{Field: "stages", Value: strconv.FormatFloat(peak, 'g', -1, 64), Reason: "more than 10 million requests/s per connection"})
	}
	if o.Protocol == ProtoH2 && o.Nap > 0 {
		errs = append(errs, &FieldError{Field: "nap", Value: o.Nap.String(), Reason: "naps are for closed loop: stages are an open loop"})
	}
	return errs
}

// ramp is the schedule of a staged open loop: send k (0-based, over all
// connections; connection i sends k = i, i+C, i+2C, …) is intended when
// the ramp's cumulative count, the integral of the rate from the start,
// reaches k.
type ramp struct {
	segs []rampSeg
	// total is the cumulative count at the end of the last stage.
	total float64
}

// rampSeg is one stage: from start, over dur (seconds), the rate goes
// from a to b; n0 sends were intended before it.
type rampSeg struct {
	start    time.Duration
	dur      float64
	a, b, n0 float64
}

func newRamp(from float64, stages []Stage) *ramp {
	r := &ramp{}
	var at time.Duration
	a := from
	for _, s := range stages {
		d := s.Duration.Seconds()
		r.segs = append(r.segs, rampSeg{start: at, dur: d, a: a, b: s.Rate, n0: r.total})
		r.total += (a + s.Rate) / 2 * d
		at += s.Duration
		a = s.Rate
	}
	return r
}

// never is the intended time of a send beyond the last stage.
const never = time.Duration(math.MaxInt64)

// at is the intended time of send k: the t where the cumulative count
// N(t) = n0 + a·τ + (b−a)·τ²/(2·dur) equals k, τ = t − start; solved as
// τ = 2m / (a + √(a² + 2·s·m)), m = k − n0, s = (b−a)/dur, which is
// stable for rising, falling and flat stages (and a = 0).
func (r *ramp) at(k int64) time.Duration {
	n := float64(k)
	if n >= r.total {
		return never
	}
	for _, g := range r.segs {
		n1 := g.n0 + (g.a+g.b)/2*g.dur
		if n >= n1 {
			continue
		}
		m := n - g.n0
		if m <= 0 {
			return g.start
		}
		s := (g.b - g.a) / g.dur
		tau := 2 * m / (g.a + math.Sqrt(max(g.a*g.a+2*s*m, 0)))
		return g.start + time.Duration(tau*float64(time.Second))
	}
	return never
}

// before is how many sends are intended before end: the K with at(K−1)
// < end ≤ at(K), found from the cumulative count and settled against at
// itself, so that it counts exactly what the slots walk.
func (r *ramp) before(end time.Duration) int64 {
	k := int64(math.Ceil(r.cum(end)))
	for k > 0 && r.at(k-1) >= end {
		k--
	}
	for r.at(k) < end {
		k++
	}
	return k
}

// cum is the cumulative count N(t).
func (r *ramp) cum(t time.Duration) float64 {
	for _, g := range r.segs {
		tau := (t - g.start).Seconds()
		if tau < g.dur {
			return g.n0 + g.a*tau + (g.b-g.a)*tau*tau/(2*g.dur)
		}
	}
	return r.total
}

// advance moves the slot to its next intended send: by its period, or
// along the ramp when the load has stages.
func (c *conn) advance() {
	if c.ramp == nil {
		c.next += c.period
		return
	}
	c.k++
	c.next = c.ramp.at(c.k*int64(len(c.r.conns)) + int64(c.id))
}

// ConnectionStages reports whether stages ramp connections (a closed
// loop); mixed stages are refused by Validate.
func ConnectionStages(stages []Stage) bool {
	return len(stages) > 0 && stages[0].Closed
}

// validateConnStages is validateStages for stages of connections.
func (o Options) validateConnStages() []error {
	var errs []error
	peak := o.Connections
	for i, s := range o.Stages {
		v := fmt.Sprintf("%s:%dc", s.Duration, s.Connections)
		switch {
		case !s.Closed:
			errs = append(errs, &FieldError{Field: "stages", Value: fmt.Sprintf("%s:%g", s.Duration, s.Rate), Reason: fmt.Sprintf("stage %d is a rate, stage 1 a number of connections: a load ramps one or the other", i+1)})
		case s.Duration <= 0:
			errs = append(errs, &FieldError{Field: "stages", Value: v, Reason: fmt.Sprintf("stage %d: the duration must be more than 0", i+1)})
		case s.Connections < 0 || s.Connections > MaxConnections:
			errs = append(errs, &FieldError{Field: "stages", Value: v, Reason: fmt.Sprintf("stage %d: from 0 to %d connections", i+1, MaxConnections)})
		}
		peak = max(peak, s.Connections)
	}
	if total := StagesDuration(o.Stages); o.Duration != 0 && o.Duration != total {
		errs = append(errs, &FieldError{Field: "duration", Value: o.Duration.String(), Reason: fmt.Sprintf("a load with stages lasts their sum (%s): leave the duration out", total)})
	}
	if peak < 1 {
		errs = append(errs, &FieldError{Field: "stages", Value: fmt.Sprintf("%d stages", len(o.Stages)), Reason: "no stage reaches 1 connection: nothing would be sent"})
	}
	if o.Rate > 0 {
		errs = append(errs, &FieldError{Field: "rate", Value: strconv.FormatFloat(o.Rate, 'g', -1, 64), Reason: "stages of connections ramp a closed loop: leave the rate out (or ramp rates: --stage 10s:2000)"})
	}
	if o.Protocol == ProtoH2 || o.Protocol == ProtoH3 {
		errs = append(errs, &FieldError{Field: "stages", Value: fmt.Sprintf("%s:%dc", o.Stages[0].Duration, o.Stages[0].Connections), Reason: "stages of connections ramp HTTP/1.1 loads only for now; over " + o.Protocol + " ramp a rate (e.g. 10s:2000)"})
	}
	if o.Close {
		errs = append(errs, &FieldError{Field: "close", Value: "true", Reason: "stages of connections ramp kept-alive connections; a connection per request (--close) has none to ramp"})
	}
	return errs
}

// slotRamp is the schedule of a load with stages of connections: for
// each slot, the windows in which it is open. The number of open
// connections at τ into a stage from a to b connections over d is
// a + ⌊(b−a)·τ/d⌋ when rising and a − ⌊(a−b)·τ/d⌋ when falling (k6's
// ramping-vus: the count moves one connection at a time towards the
// target and reaches it at the stage's end): the k-th connection of a
// rise opens at ⌈k·d/(b−a)⌉, the k-th of a fall closes at ⌈k·d/(a−b)⌉, in
// integer nanoseconds, exactly. Slot i is open while the count exceeds i.
type slotRamp struct {
	windows [][]slotWindow // per slot
	peak    int
}

// slotWindow is one stretch [on, off) of a slot's connection, as offsets
// from the load's start.
type slotWindow struct {
	on, off time.Duration
}

func newSlotRamp(start int, stages []Stage) *slotRamp {
	peak := start
	for _, s := range stages {
		peak = max(peak, s.Connections)
	}
	sr := &slotRamp{windows: make([][]slotWindow, peak), peak: peak}
	on := make([]time.Duration, peak) // when an open slot opened (the first start slots at 0)
	open := func(i int, t time.Duration) { on[i] = t }
	shut := func(i int, t time.Duration) {
		if t > on[i] {
			sr.windows[i] = append(sr.windows[i], slotWindow{on[i], t})
		}
	}
	var at time.Duration
	a := start
	for _, s := range stages {
		b, d := s.Connections, int64(s.Duration)
		switch {
		case b > a:
			for k := int64(1); k <= int64(b-a); k++ {
				open(a+int(k)-1, at+time.Duration(ceilDiv(k*d, int64(b-a))))
			}
		case b < a:
			for k := int64(1); k <= int64(a-b); k++ {
				shut(a-int(k), at+time.Duration(ceilDiv(k*d, int64(a-b))))
			}
		}
		at += s.Duration
		a = b
	}
	for i := range a {
		shut(i, at)
	}
	return sr
}

// ceilDiv is ⌈x/y⌉ for x ≥ 0, y > 0 (x·y within int64: a stage lasts
// at most MaxDuration, and ramps at most MaxConnections).
func ceilDiv(x, y int64) int64 { return (x + y - 1) / y }

// count is the number of connections the schedule has open at t.
func (sr *slotRamp) count(t time.Duration) int {
	n := 0
	for _, ws := range sr.windows {
		for _, w := range ws {
			if w.on <= t && t < w.off {
				n++
				break
			}
		}
	}
	return n
}

// stagedLoop is the slot loop of a closed loop with stages of
// connections (HTTP/1.1, a goroutine per slot): in each of its windows
// the slot connects and sends request after request, at least one (so
// that every window of the schedule opens its connection, however late a
// busy machine wakes the slot), and closes its connection at the window's
// end once the request in flight is answered (k6's graceful ramp-down).
func (c *conn) stagedLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.flush()
	defer c.closeAll()
	r := c.r
	for _, w := range r.slotRamp.windows[c.id] {
		if d := w.on - time.Since(r.start); d > 0 && !c.sleep(d) {
			return
		}
		for first := true; first || time.Since(r.start) < w.off; first = false {
			if r.stop.Load() {
				return
			}
			if r.bounded {
				if c.quota == 0 {
					if c.quota = r.claim(); c.quota == 0 {
						return
					}
				}
				c.quota--
			}
			req := &r.reqs[c.pick()]
			o, sent := c.exchange(req, 0, time.Since(r.start))
			done := time.Since(r.start)
			if r.stop.Load() || (r.hasEnd && done >= r.endOff) {
				return // in flight when the load ended: not measured
			}
			c.record(req, o, sent, sent, done)
			if d := c.backoff(o); d > 0 && !c.sleep(d) {
				return
			}
		}
		c.closeAll()
	}
}
