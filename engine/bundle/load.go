package bundle

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/engine/results"
)

// Load is how busy the machine was while a run measured, from what the
// run recorded: the load average when its environment was collected,
// before the first trial (manifest.json environment.load_average, from
// /proc/loadavg), and the quiet check a collect step takes before each
// trial's load (trials.parquet quiet_load_avg, the 1-minute load average
// then, and quiet_other_pct and busy_start: the CPU of the processes
// outside the run).
//
// The machine's state is results.MachineState's rule, the one the report
// and the page use too: busy when more than half of the quiet-checked
// trials started busy (processes outside the run using the CPU just before
// a load) or were noisy (during it), partly busy when some were, quiet
// when none was: they measure what else ran, trial by trial. Without quiet
// checks (no
// collect step), when the 1-minute load average before the first trial is
// at least its CPUs (on average every CPU had another runnable task to
// share with the loader and the server). Either makes absolute figures
// (req/s, latency tails) of the two runs incomparable, whatever the other
// fields say. Load averages are shown but judge only without quiet
// checks: a 1-minute average taken within a minute or two of a load counts
// that load's loader and server (the run's own previous trial, or the run
// reproduce follows), so a run alone on a 2-CPU machine reads about 2.
type Load struct {
	// CPUs are the CPUs benchflow could use (allowed_cpus, else
	// cpu_threads); 0 when not recorded.
	CPUs int `json:"cpus"`
	// LoadAverage is the 1-, 5- and 15-minute load average before the
	// first trial; empty in runs recorded before it was.
	LoadAverage []float64 `json:"load_average,omitempty"`
	// QuietChecks counts the trials × load steps with a quiet check;
	// QuietMedianPct and QuietMaxPct are the CPU of the processes
	// outside the run over them, % of one core.
	QuietChecks int `json:"quiet_checks"`
	// TrialLoads counts the quiet checks that recorded the 1-minute load
	// average at the start of a trial's load; TrialLoadMedian and
	// TrialLoadMax are its median and maximum over them.
	TrialLoads      int     `json:"trial_loads"`
	TrialLoadMedian float64 `json:"trial_load_median"`
	TrialLoadMax    float64 `json:"trial_load_max"`
	QuietMedianPct  float64 `json:"quiet_median_pct"`
	QuietMaxPct     float64 `json:"quiet_max_pct"`
	// BusyStarts counts the quiet checks that flagged a busy start;
	// Noisy the trials whose verdict is noisy.
	BusyStarts int `json:"busy_starts"`
	Noisy      int `json:"noisy"`
	// State is "busy", "partly busy", "quiet" or "unknown" (the rule
	// above); Busy is State == "busy"; Why says which part of the rule, in
	// words.
	State string `json:"state"`
	Busy  bool   `json:"busy"`
	Why   string `json:"why,omitempty"`
}

// MachineLoad reads a run's load (see Load).
func MachineLoad(run *results.Run) Load {
	var l Load
	if run == nil || run.Manifest == nil {
		return l
	}
	env := run.Manifest.Environment
	for _, k := range []string{"allowed_cpus", "cpu_threads"} {
		if f, ok := env[k].(float64); ok && f > 0 {
			l.CPUs = int(f)
			break
		}
		if i, ok := env[k].(int); ok && i > 0 {
			l.CPUs = i
			break
		}
	}
	switch la := env["load_average"].(type) {
	case []any:
		for _, v := range la {
			if f, ok := v.(float64); ok {
				l.LoadAverage = append(l.LoadAverage, f)
			}
		}
	case []float64:
		l.LoadAverage = append(l.LoadAverage, la...)
	}
	var quiet, loads []float64
	var state results.MachineState
	for i := range run.Trials {
		t := &run.Trials[i]
		state.Add(t)
		if !t.IsMeasurement() || t.QuietWindowS <= 0 || t.Discarded {
			continue
		}
		quiet = append(quiet, t.QuietPct)
		if t.QuietLoadAvg > 0 {
			loads = append(loads, t.QuietLoadAvg)
		}
	}
	l.BusyStarts, l.Noisy = state.BusyStarts, state.Noisy
	l.QuietChecks = len(quiet)
	if len(quiet) > 0 {
		sort.Float64s(quiet)
		l.QuietMedianPct = median(quiet)
		l.QuietMaxPct = quiet[len(quiet)-1]
	}
	l.TrialLoads = len(loads)
	if len(loads) > 0 {
		sort.Float64s(loads)
		l.TrialLoadMedian = median(loads)
		l.TrialLoadMax = loads[len(loads)-1]
	}
	switch {
	case l.QuietChecks > 0:
		l.State, l.Why = state.State(), state.Why()
	case l.CPUs > 0 && len(l.LoadAverage) > 0 && l.LoadAverage[0] >= float64(l.CPUs):
		l.State, l.Why = results.MachineBusy, fmt.Sprintf("load average before the first trial %s ≥ %d CPUs", num(l.LoadAverage[0]), l.CPUs)
	case len(l.LoadAverage) > 0:
		l.State = results.MachineQuiet
	default:
		l.State = results.MachineUnknown
	}
	l.Busy = l.State == results.MachineBusy
	return l
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// Recorded reports whether the run recorded anything of its load.
func (l Load) Recorded() bool { return len(l.LoadAverage) > 0 || l.QuietChecks > 0 }

// TrialsText is "median 3.10, max 7.20 over 6 trials", or "not recorded"
// (no collect step with a quiet check, or a run recorded before it was).
func (l Load) TrialsText() string {
	if l.TrialLoads == 0 {
		return "not recorded"
	}
	return fmt.Sprintf("median %s, max %s over %d trials (counting the run's own previous loads)", num(l.TrialLoadMedian), num(l.TrialLoadMax), l.TrialLoads)
}

// AverageText is "24.10 / 18.52 / 9.60 (1 / 5 / 15 min) on 2 CPUs", or
// "not recorded".
func (l Load) AverageText() string {
	if len(l.LoadAverage) < 3 {
		return "not recorded"
	}
	s := fmt.Sprintf("%s / %s / %s (1 / 5 / 15 min)", num(l.LoadAverage[0]), num(l.LoadAverage[1]), num(l.LoadAverage[2]))
	if l.CPUs > 0 {
		s += fmt.Sprintf(" on %d CPUs", l.CPUs)
	}
	return s
}

// QuietText is "median 3.1%, max 12.0% of a core outside the run, 1 of 6
// trials started busy", or "no quiet check" (no collect step).
func (l Load) QuietText() string {
	if l.QuietChecks == 0 {
		return "no quiet check"
	}
	return fmt.Sprintf("median %.1f%%, max %.1f%% of a core outside the run; %d of %d trials started busy",
		l.QuietMedianPct, l.QuietMaxPct, l.BusyStarts, l.QuietChecks)
}

// Verdict is "busy (load average 24.10 ≥ 2 CPUs)", "partly busy (1 of
// 12 trials started busy)", "quiet" or "unknown (not recorded)".
func (l Load) Verdict() string {
	switch {
	case !l.Recorded() || l.State == results.MachineUnknown || l.State == "":
		return "unknown (not recorded)"
	case l.Why != "":
		return l.State + " (" + l.Why + ")"
	}
	return l.State
}

// String is the load in one line, as the published page and REPRODUCE.md
// state it.
func (l Load) String() string {
	if !l.Recorded() {
		return "not recorded (a run made before benchflow recorded the load average, without a collect step)"
	}
	return fmt.Sprintf("%s; load average before the first trial %s, at the trials' start %s; quiet checks: %s", l.Verdict(), l.AverageText(), l.TrialsText(), l.QuietText())
}

// LoadComparison is the machine's load in the bundle and here.
type LoadComparison struct {
	Bundle Load `json:"bundle"`
	Here   Load `json:"here"`
}

// Busy reports whether either side was busy.
func (c LoadComparison) Busy() bool { return c.Bundle.Busy || c.Here.Busy }

// Explain names the load as a difference that explains a moved cell or
// claim: "machine load (bundle busy: load average 24.10 ≥ 2 CPUs)"; ""
// when neither side was busy.
func (c LoadComparison) Explain() string {
	var parts []string
	if c.Bundle.Busy {
		parts = append(parts, "bundle busy: "+c.Bundle.Why)
	}
	if c.Here.Busy {
		parts = append(parts, "busy here: "+c.Here.Why)
	}
	if len(parts) == 0 {
		return ""
	}
	return "machine load (" + strings.Join(parts, "; ") + ")"
}
