package results

import "github.com/benchflow/benchflow/engine/measure"

// TableAgents holds one row per agent of a load or warm step that ran on
// agents (agents.parquet).
const TableAgents = "agents"

// AgentRecord is one agent of a step that ran on agents (an agents
// block): its share of the load, what it measured, its own health and its
// clock.
type AgentRecord struct {
	Index int    // 0-based; agents.parquet and latency.parquet number agents from 1
	Host  string // where it ran (its hostname: a pod name on Kubernetes)
	PID   int
	// Connections, Threads, Requests (0: bounded by duration) and Rate (0:
	// closed loop) are its share of the step's load.
	Connections int
	Threads     int
	Requests    int64
	Rate        float64
	// Result is what it measured (Started on the controller's clock); nil
	// when it failed before measuring.
	Result *measure.Record
	// CPUPct is its process's CPU during its load, % of one core; Cores
	// the CPUs it saw.
	CPUPct float64
	Cores  int
	// OffsetS is its clock minus the controller's, SkewBoundS the bound
	// of that estimate (half the round trip of the best probe), RTTS that
	// round trip; LateS how much after the common start instant it
	// began, by its own clock.
	OffsetS, SkewBoundS, RTTS, LateS float64
	// DriftS is how much the offset changed during the load (probed again
	// after it), DriftBoundS its error bound; both 0 when not re-probed.
	DriftS, DriftBoundS float64
	// Verdict is "loader-bound" when the agent limited its share (CPU
	// saturated, or an open-loop rate it could not hold), else "".
	Verdict         string
	VerdictEvidence string
	Error           string
}

// AgentRow is one row of agents.parquet.
type AgentRow struct {
	RunID, TrialID, Step string
	Agent                int64
	Host                 string
	PID                  int64
	Connections, Threads int64
	RequestsShare        int64
	RateShare            float64
	Requests, Errors     int64
	DurationS, RPS       float64
	P50US, P99US, P999US float64
	MaxUS                float64
	CPUPct               float64
	Cores                int64
	LagP99US             float64
	MaxBehindUS          float64
	ClockOffsetS         float64
	SkewBoundS           float64
	ClockDriftS          float64
	ClockDriftBoundS     float64
	RTTS                 float64
	LateS                float64
	StartedAt            float64 // Unix seconds on the controller's clock
	Verdict, Evidence    string
	Error                string
}

var agentColumns = []column[AgentRow]{
	str("run_id", func(r *AgentRow) *string { return &r.RunID }),
	str("trial_id", func(r *AgentRow) *string { return &r.TrialID }),
	str("step", func(r *AgentRow) *string { return &r.Step }),
	i64("agent", func(r *AgentRow) *int64 { return &r.Agent }),
	str("host", func(r *AgentRow) *string { return &r.Host }),
	i64("pid", func(r *AgentRow) *int64 { return &r.PID }),
	i64("connections", func(r *AgentRow) *int64 { return &r.Connections }),
	i64("threads", func(r *AgentRow) *int64 { return &r.Threads }),
	i64("requests_share", func(r *AgentRow) *int64 { return &r.RequestsShare }),
	f64("rate_share", func(r *AgentRow) *float64 { return &r.RateShare }),
	i64("requests", func(r *AgentRow) *int64 { return &r.Requests }),
	i64("errors", func(r *AgentRow) *int64 { return &r.Errors }),
	f64("duration_s", func(r *AgentRow) *float64 { return &r.DurationS }),
	f64("rps", func(r *AgentRow) *float64 { return &r.RPS }),
	f64("latency_p50_us", func(r *AgentRow) *float64 { return &r.P50US }),
	f64("latency_p99_us", func(r *AgentRow) *float64 { return &r.P99US }),
	f64("latency_p999_us", func(r *AgentRow) *float64 { return &r.P999US }),
	f64("latency_max_us", func(r *AgentRow) *float64 { return &r.MaxUS }),
	f64("cpu_pct", func(r *AgentRow) *float64 { return &r.CPUPct }),
	i64("cores", func(r *AgentRow) *int64 { return &r.Cores }),
	f64("lag_p99_us", func(r *AgentRow) *float64 { return &r.LagP99US }),
	f64("max_behind_us", func(r *AgentRow) *float64 { return &r.MaxBehindUS }),
	f64("clock_offset_s", func(r *AgentRow) *float64 { return &r.ClockOffsetS }),
	f64("skew_bound_s", func(r *AgentRow) *float64 { return &r.SkewBoundS }),
	f64("rtt_s", func(r *AgentRow) *float64 { return &r.RTTS }),
	f64("late_s", func(r *AgentRow) *float64 { return &r.LateS }),
	f64("started_at_s", func(r *AgentRow) *float64 { return &r.StartedAt }),
	str("verdict", func(r *AgentRow) *string { return &r.Verdict }),
	str("verdict_evidence", func(r *AgentRow) *string { return &r.Evidence }),
	str("error", func(r *AgentRow) *string { return &r.Error }),
	f64("clock_drift_s", func(r *AgentRow) *float64 { return &r.ClockDriftS }),
	f64("clock_drift_bound_s", func(r *AgentRow) *float64 { return &r.ClockDriftBoundS }),
}

// agentRows converts a step's agents.
func agentRows(runID, trialID string, s *StepRecord) []AgentRow {
	var rows []AgentRow
	for _, a := range s.Agents {
		r := AgentRow{RunID: runID, TrialID: trialID, Step: s.Name, Agent: int64(a.Index + 1), Host: a.Host, PID: int64(a.PID),
			Connections: int64(a.Connections), Threads: int64(a.Threads), RequestsShare: a.Requests, RateShare: a.Rate,
			CPUPct: a.CPUPct, Cores: int64(a.Cores), ClockOffsetS: a.OffsetS, SkewBoundS: a.SkewBoundS, ClockDriftS: a.DriftS, ClockDriftBoundS: a.DriftBoundS, RTTS: a.RTTS, LateS: a.LateS,
			Verdict: a.Verdict, Evidence: a.VerdictEvidence, Error: a.Error}
		if res := a.Result; res != nil {
			r.Requests, r.Errors, r.DurationS, r.RPS = res.Requests, res.Errors, res.Duration.Seconds(), res.RPS()
			r.MaxBehindUS = float64(res.MaxBehind.Microseconds())
			if !res.Started.IsZero() {
				r.StartedAt = float64(res.Started.UnixNano()) / 1e9
			}
			if h := res.Latency; h != nil && h.TotalCount() > 0 {
				r.P50US, r.P99US, r.P999US = float64(h.ValueAtQuantile(50)), float64(h.ValueAtQuantile(99)), float64(h.ValueAtQuantile(99.9))
				_, mx := barsMeanMax(nonEmptyBars(h), h.TotalCount())
				r.MaxUS = float64(mx)
				if u := res.Uncorrected; u != nil && u.TotalCount() > 0 {
					r.LagP99US = float64(h.ValueAtQuantile(99) - u.ValueAtQuantile(99))
				}
			}
		}
		rows = append(rows, r)
	}
	return rows
}
