package load

import "github.com/benchflow/benchflow/engine/measure"

// What a load measures is declared once, in engine/measure; these are the
// generator's names for it.
type (
	// Result is the record one load fills (measure.Record).
	Result = measure.Record
	// Interval is one timeseries row of a Result.
	Interval = measure.Interval
	// SLO, LatencyBound, Probe and Capacity are a capacity search's
	// objective and outcome.
	SLO          = measure.SLO
	LatencyBound = measure.LatencyBound
	Probe        = measure.Probe
	Capacity     = measure.Capacity
)

// Protocol names, as in Options.Protocol and Result.Protocol.
const (
	ProtoHTTP1 = measure.ProtoHTTP1
	ProtoH2    = measure.ProtoH2
	ProtoH2C   = measure.ProtoH2C
	ProtoH3    = measure.ProtoH3
)

// What a generator-limited probe was short of (Probe.Cause, Capacity.Cause).
const (
	CauseCPU         = measure.CauseCPU
	CauseConnections = measure.CauseConnections
	CauseClock       = measure.CauseClock
)
