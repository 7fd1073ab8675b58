package load

import "time"

// countMissed accounts for every send an open loop's schedule intended
// before the end of the load (Result.Intended): each one either has an
// outcome (a response or an error, counted in Requests and Errors; one
// sent late has its lag in the corrected latency, which counts from the
// intended send), or was sent but had none when the load ended
// (Unfinished: in flight, as in wrk2, which leaves them out), or was never
// sent because its connection was still busy with earlier ones (Missed:
// k6's dropped_iterations, Nighthawk's blocked sends). The slots' schedules
// are fixed (slot i sends at first_i + k × period), so how many sends fell
// before the end, and how many each slot took, are exact counts, not
// estimates. A missed send was behind schedule by the end of the load
// minus its intended time: the oldest one of each slot raises MaxBehind,
// so a schedule that fell seconds behind never reads as milliseconds.
//
// It runs once, after every slot ended, and costs nothing per request.
func (r *runner) countMissed(res *Result, measured time.Duration) {
	if !r.openLoop || !r.hasEnd {
		return
	}
	end := min(measured, r.endOff)
	var intended, taken int64
	var rampSends int64 // with stages: the sends of every slot before the end
	if r.ramp != nil {
		rampSends = r.ramp.before(end)
	}
	conns := int64(len(r.conns))
	for _, c := range r.conns {
		var n, t int64
		if r.ramp != nil {
			// Slot i takes sends i, i+C, i+2C, … of the ramp.
			if id := int64(c.id); rampSends > id {
				n = (rampSends - id + conns - 1) / conns
			}
			t = min(c.k, n)
		} else {
			n = scheduled(c.first, c.period, end)
			t = min(int64((c.next-c.first)/c.period), n)
		}
		intended += n
		taken += t
		if t < n {
			// c.next is the slot's oldest send not taken, before the end.
			res.MaxBehind = max(res.MaxBehind, end-c.next)
		}
	}
	if r.bounded {
		intended = min(intended, r.opts.Requests)
		taken = min(taken, intended)
	}
	res.Intended = intended
	res.Missed = intended - taken
	res.Unfinished = max(taken-(res.Requests+res.Errors-res.ErrorsBy["http"]), 0)
}

// scheduled is how many of the sends first, first+period, first+2×period,
// … fall before end: the schedule of one slot, counted exactly as the
// slot walks it (next += period, integer nanoseconds).
func scheduled(first, period, end time.Duration) int64 {
	if period <= 0 || first >= end {
		return 0
	}
	return int64((end - first + period - 1) / period)
}
