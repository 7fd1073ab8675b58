package load

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/units"
)

// Stage is one stage of a ramped open loop (--stage DURATION:RATE, a
// step's stages = ["10s:2000"]): over Duration the rate moves linearly
// from the previous stage's target (the first stage's from Options.Rate,
// 0 when not given) to Rate requests/s — k6's ramping-arrival-rate. The
// load lasts the sum of its stages.
type Stage struct {
	Duration time.Duration `json:"duration_ns"`
	Rate     float64       `json:"rate"`
}

// MaxStages bounds the stages of one load.
const MaxStages = 100

// ParseStage reads DURATION:RATE ("10s:2000"). A target of connections
// ("10s:64c", a closed-loop ramp) is refused: only the open loop ramps.
func ParseStage(s string) (Stage, error) {
	d, target, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || strings.TrimSpace(d) == "" || strings.TrimSpace(target) == "" {
		return Stage{}, fmt.Errorf("want DURATION:RATE, e.g. 10s:2000 (ramp to 2000 req/s over 10s)")
	}
	dur, err := units.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return Stage{}, fmt.Errorf("duration %q: %w", d, err)
	}
	if dur <= 0 {
		return Stage{}, fmt.Errorf("duration %q: must be more than 0", d)
	}
	target = strings.TrimSpace(target)
	if strings.HasSuffix(target, "c") {
		return Stage{}, fmt.Errorf("target %q: ramping connections (closed loop) is not supported; ramp a rate (open loop, e.g. %s:2000)", target, d)
	}
	rate, err := strconv.ParseFloat(target, 64)
	if err != nil || rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return Stage{}, fmt.Errorf("target %q: want a rate in requests/s (0 or more)", target)
	}
	return Stage{Duration: dur, Rate: rate}, nil
}

// ParseStages reads every DURATION:RATE, the first error naming its place.
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
