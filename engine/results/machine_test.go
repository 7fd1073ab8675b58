package results

import "testing"

// TestMachineState: the one rule for the machine's state. The case of a
// bundle with 6 of 12 trials started busy and every trial noisy is busy,
// never quiet; one disturbed trial of 12 is partly busy; warm-up rows and
// rows without a quiet check do not count.
func TestMachineState(t *testing.T) {
	rows := func(n, busy, noisy int) []TrialRow {
		var out []TrialRow
		for i := 0; i < n; i++ {
			r := TrialRow{StepKind: "load", QuietWindowS: 1, Verdict: "server-bound"}
			if i < busy {
				r.BusyStart = true
			}
			if i < noisy {
				r.Verdict = "noisy"
			}
			out = append(out, r)
		}
		// never counted
		out = append(out, TrialRow{StepKind: "warm", QuietWindowS: 1, BusyStart: true, Verdict: "noisy"},
			TrialRow{StepKind: "load", Verdict: "noisy"})
		return out
	}
	for _, c := range []struct {
		n, busy, noisy int
		state, words   string
	}{
		{12, 6, 12, MachineBusy, "busy (6 of 12 trials started busy; 12 of 12 noisy)"},
		{12, 7, 7, MachineBusy, "busy (7 of 12 trials started busy; 7 of 12 noisy)"},
		{12, 0, 7, MachineBusy, "busy (7 of 12 trials noisy)"},
		{12, 6, 6, MachinePartly, "partly busy (6 of 12 trials started busy; 6 of 12 noisy)"},
		{12, 1, 0, MachinePartly, "partly busy (1 of 12 trials started busy)"},
		{12, 0, 1, MachinePartly, "partly busy (1 of 12 trials noisy)"},
		{12, 0, 0, MachineQuiet, "quiet"},
		{0, 0, 0, MachineUnknown, "unknown (no quiet check)"},
	} {
		m := MachineStateOf(rows(c.n, c.busy, c.noisy))
		if m.State() != c.state || m.String() != c.words {
			t.Errorf("%d trials, %d busy starts, %d noisy: %q (%q), want %q (%q)", c.n, c.busy, c.noisy, m.State(), m.String(), c.state, c.words)
		}
		if c.noisy > 0 && m.State() == MachineQuiet {
			t.Errorf("noisy trials and a quiet machine: %+v", m)
		}
	}
}
