package collect

import (
	"fmt"
	"strings"
)

// AgentHealth is what an agent reported of itself (agents block).
type AgentHealth struct {
	Index   int     // the agent's number, from 1
	CPUPct  float64 // its process's CPU during its load, % of one core
	Threads int     // its event loops
	Cores   int     // CPUs it saw (0: unknown)
	// TargetRate is its open-loop share (0: closed loop); RateWarning is
	// set when it did not hold that rate; LagP99US is its corrected minus
	// uncorrected p99.
	TargetRate  float64
	RateWarning string
	LagP99US    float64
}

// LagBoundUS: an open-loop agent whose corrected p99 exceeds its
// uncorrected p99 by this much (µs) sent late enough to matter.
const LagBoundUS = 10_000.0

// JudgeAgent applies the loader rule to one agent: it is loader-bound
// when its CPU reached LoaderSaturatedPct of what its threads can use
// (one core per thread, at most its cores), or, in open loop, when it did
// not hold its rate or its lag (corrected minus uncorrected p99) reached
// LagBoundUS.
func JudgeAgent(a AgentHealth) Verdict {
	usable := max(a.Threads, 1)
	if a.Cores > 0 {
		usable = min(usable, a.Cores)
	}
	limit := float64(usable) * 100
	var why []string
	if a.CPUPct >= LoaderSaturatedPct/100*limit {
		why = append(why, fmt.Sprintf("CPU %.0f%% of %d core(s) it can use", a.CPUPct, usable))
	}
	if a.TargetRate > 0 {
		if a.RateWarning != "" {
			why = append(why, a.RateWarning)
		}
		if a.LagP99US >= LagBoundUS {
			why = append(why, fmt.Sprintf("open-loop lag p99 %.1f ms", a.LagP99US/1e3))
		}
	}
	if len(why) == 0 {
		return Verdict{}
	}
	return Verdict{Kind: VerdictLoader, Evidence: strings.Join(why, "; ")}
}

// JudgeAgents names the first loader-bound agent ("agent 3 loader-bound")
// with its evidence, or returns an empty Verdict when none is.
func JudgeAgents(as []AgentHealth) Verdict {
	var bound []string
	first := Verdict{}
	for _, a := range as {
		v := JudgeAgent(a)
		if v.Kind == "" {
			continue
		}
		bound = append(bound, fmt.Sprint(a.Index))
		if first.Kind == "" {
			first = Verdict{Kind: fmt.Sprintf("agent %d %s", a.Index, VerdictLoader), Evidence: fmt.Sprintf("agent %d: %s", a.Index, v.Evidence)}
		}
	}
	if len(bound) > 1 {
		first.Evidence += fmt.Sprintf(" (loader-bound agents: %s)", strings.Join(bound, ", "))
	}
	return first
}
