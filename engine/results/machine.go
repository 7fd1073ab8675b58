package results

import "fmt"

// MachineState is the one rule for calling the machine busy, partly busy
// or quiet, from the trials table: the console (report), the report page,
// a bundle's README and environment row and reproduce's table all word
// the machine's state through it, so a page whose cells are noisy never
// calls the machine quiet.
//
// It counts the measured rows (not warm-up) with a quiet check: a row is
// disturbed when its trial started busy (busy_start) or its verdict is
// noisy (processes outside the run used the CPU during the load). The
// machine is busy when more than half of the rows were disturbed, partly
// busy when some were, quiet when none was, and unknown without a quiet
// check.
type MachineState struct {
	// Checks counts the rows with a quiet check; BusyStarts those that
	// started busy, Noisy those whose verdict is noisy, Disturbed those
	// with either. Rows of discarded attempts (busy_rerun) are not among
	// them: Discarded counts them, and the state is that of the rows
	// that count.
	Checks, BusyStarts, Noisy, Disturbed int
	Discarded                            int
}

// Add counts one trials row.
func (m *MachineState) Add(t *TrialRow) {
	if t.StepKind == "warm" || t.QuietWindowS <= 0 {
		return
	}
	if t.Discarded {
		m.Discarded++
		return
	}
	m.Checks++
	noisy := t.Verdict == "noisy" // collect.VerdictNoisy
	if t.BusyStart {
		m.BusyStarts++
	}
	if noisy {
		m.Noisy++
	}
	if t.BusyStart || noisy {
		m.Disturbed++
	}
}

// MachineStateOf counts the rows of a trials table.
func MachineStateOf(rows []TrialRow) MachineState {
	var m MachineState
	for i := range rows {
		m.Add(&rows[i])
	}
	return m
}

// Machine states.
const (
	MachineBusy    = "busy"
	MachinePartly  = "partly busy"
	MachineQuiet   = "quiet"
	MachineUnknown = "unknown"
)

// State is MachineBusy, MachinePartly, MachineQuiet or MachineUnknown
// (no quiet check).
func (m MachineState) State() string {
	switch {
	case m.Checks == 0:
		return MachineUnknown
	case 2*m.Disturbed > m.Checks:
		return MachineBusy
	case m.Disturbed > 0:
		return MachinePartly
	}
	return MachineQuiet
}

// Why is "6 of 12 trials started busy; 12 of 12 noisy", "" when quiet or
// unknown.
func (m MachineState) Why() string {
	if m.Disturbed == 0 {
		return ""
	}
	s := ""
	if m.BusyStarts > 0 {
		s = fmt.Sprintf("%d of %d trials started busy", m.BusyStarts, m.Checks)
	}
	if m.Noisy > 0 {
		if s != "" {
			s += "; "
		} else {
			s = fmt.Sprintf("%d of %d trials ", m.Noisy, m.Checks)
			return s + "noisy"
		}
		s += fmt.Sprintf("%d of %d noisy", m.Noisy, m.Checks)
	}
	return s
}

// String is the state in words: "busy (6 of 12 trials started busy; 12 of
// 12 noisy)", "partly busy (1 of 12 trials started busy)", "quiet" or
// "unknown (no quiet check)".
func (m MachineState) String() string {
	switch st := m.State(); st {
	case MachineUnknown:
		return "unknown (no quiet check)"
	case MachineQuiet:
		if m.Discarded > 0 {
			return fmt.Sprintf("%s (%d busy %s re-run and discarded)", st, m.Discarded, map[bool]string{true: "attempt", false: "attempts"}[m.Discarded == 1])
		}
		return st
	default:
		why := m.Why()
		if m.Discarded > 0 {
			why += fmt.Sprintf("; %d busy %s re-run and discarded", m.Discarded, map[bool]string{true: "attempt", false: "attempts"}[m.Discarded == 1])
		}
		return st + " (" + why + ")"
	}
}
