package collect

import "testing"

func TestJudgeAgents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		agents []AgentHealth
		want   string
	}{
		{"healthy", []AgentHealth{{Index: 0, CPUPct: 40, Threads: 2, Cores: 8}, {Index: 1, CPUPct: 50, Threads: 2}}, ""},
		{"CPU saturated", []AgentHealth{{Index: 0, CPUPct: 40, Threads: 2}, {Index: 1, CPUPct: 95, Threads: 1, Cores: 4}}, "agent 1 loader-bound"},
		{"fewer cores than threads", []AgentHealth{{Index: 0, CPUPct: 190, Threads: 4, Cores: 2}}, "agent 0 loader-bound"},
		{"open-loop rate missed", []AgentHealth{{Index: 2, CPUPct: 10, Threads: 1, TargetRate: 1000, RateWarning: "achieved 700 req/s"}}, "agent 2 loader-bound"},
		{"open-loop lag", []AgentHealth{{Index: 3, CPUPct: 10, Threads: 1, TargetRate: 1000, LagP99US: 25_000}}, "agent 3 loader-bound"},
		{"lag ignored in closed loop", []AgentHealth{{Index: 3, CPUPct: 10, Threads: 1, LagP99US: 25_000}}, ""},
	} {
		if got := JudgeAgents(tc.agents); got.Kind != tc.want {
			t.Errorf("%s: verdict %q (%s), want %q", tc.name, got.Kind, got.Evidence, tc.want)
		}
	}
}
