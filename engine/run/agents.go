package run

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/benchflow/benchflow/engine/agent"
	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/providers"
)

// DefaultAgentImage is the image of agents that run in containers
// (providers/docker/images builds it).
const DefaultAgentImage = "benchflow/agent:local"

// AgentBinary is the benchflow binary local and raw_exec agents run
// (default: this process's executable).
var AgentBinary = func() (string, error) { return os.Executable() }

// runOnAgents runs a load or warm step's load from its agents block: the
// provider starts the agents, the controller synchronises and merges them
// (engine/agent), and the agents are torn down before it returns, whatever
// happened. A failed or late agent fails the step; the records of every
// agent are returned either way.
func (tr *trialRun) runOnAgents(ctx context.Context, st *pipeline.Step, a *steps.AgentsConfig, opts load.Options) (*measure.Record, []results.AgentRecord, error) {
	ag, err := tr.startAgents(ctx, st, a, opts)
	if err != nil {
		return nil, nil, err
	}
	defer ag.done()
	out, err := agent.Run(ctx, tr.agentConfig(st, ag, opts))
	var recs []results.AgentRecord
	if out != nil {
		recs = agentRecords(out)
	}
	if err != nil {
		return nil, recs, fmt.Errorf("%w (agents' logs in %s)", err, tr.logDir)
	}
	return out.Merged, recs, nil
}

// agentSession starts the step's agents once and calls f with a function
// that runs one synchronised, merged load on them, keeping the records of
// the latest load in *last; the agents are stopped and torn down when f
// returns.
func (tr *trialRun) agentSession(ctx context.Context, st *pipeline.Step, c *steps.LoadConfig, opts load.Options,
	last *[]results.AgentRecord, f func(loadOn func(context.Context, load.Options) (*agent.Outcome, error)) error) error {
	ag, err := tr.startAgents(ctx, st, c.Agents, opts)
	if err != nil {
		return err
	}
	defer ag.done()
	sess, err := agent.Open(tr.agentConfig(st, ag, opts))
	if err != nil {
		return err
	}
	defer sess.Close()
	return f(func(ctx context.Context, o load.Options) (*agent.Outcome, error) {
		out, err := sess.Load(ctx, o)
		if out != nil {
			*last = agentRecords(out)
		}
		if err != nil {
			return nil, fmt.Errorf("%w (agents' logs in %s)", err, tr.logDir)
		}
		return out, nil
	})
}

// searchOnAgents runs a load step's capacity search with every probe on
// its agents (agentSession), and a probe fails as the generator's when the
// busiest agent used 90% of the cores its threads can use. The agents'
// records are those of the probe at the capacity's rate (of the last
// probe when none passed).
func (tr *trialRun) searchOnAgents(ctx context.Context, st *pipeline.Step, c *steps.LoadConfig, opts load.Options) (*measure.Capacity, []results.AgentRecord, error) {
	var capacity *measure.Capacity
	var last []results.AgentRecord
	byResult := map[*measure.Record][]results.AgentRecord{}
	err := tr.agentSession(ctx, st, c, opts, &last, func(loadOn func(context.Context, load.Options) (*agent.Outcome, error)) error {
		var err error
		capacity, err = tr.search(ctx, st, c, opts, func(ctx context.Context, o load.Options) (*measure.Record, float64, error) {
			out, err := loadOn(ctx, o)
			if err != nil {
				return nil, 0, err
			}
			byResult[out.Merged] = last
			return out.Merged, busiestAgent(out), nil
		})
		return err
	})
	if at := capacity.At(); at != nil {
		return capacity, byResult[at.Result], err
	}
	return capacity, last, err
}

// warmSteadyOnAgents warms until steady with every window on the step's
// agents (agentSession; each window after the start lead, about half a
// second). The agents' records are those of the last window.
func (tr *trialRun) warmSteadyOnAgents(ctx context.Context, st *pipeline.Step, c *steps.LoadConfig, opts load.Options) (*measure.Record, []results.AgentRecord, error) {
	var res *measure.Record
	var last []results.AgentRecord
	err := tr.agentSession(ctx, st, c, opts, &last, func(loadOn func(context.Context, load.Options) (*agent.Outcome, error)) error {
		var err error
		res, err = tr.warmSteady(ctx, st, c, opts, func(ctx context.Context, o load.Options) (*measure.Record, error) {
			out, err := loadOn(ctx, o)
			if err != nil {
				return nil, err
			}
			return out.Merged, nil
		})
		return err
	})
	return res, last, err
}

// busiestAgent is the highest CPU of the outcome's agents as a fraction
// of the cores their threads can use (one per thread, at most the
// agent's CPUs).
func busiestAgent(out *agent.Outcome) float64 {
	most := 0.0
	for _, m := range out.Members {
		cores := max(min(m.Share.Threads, m.Hello.Cores), 1)
		most = max(most, m.CPUPct()/100/float64(cores))
	}
	return most
}

// agentConfig is the controller's configuration for a step's agents.
func (tr *trialRun) agentConfig(st *pipeline.Step, ag *launched, opts load.Options) agent.Config {
	return agent.Config{
		Agents: ag.urls, Options: opts, Tolerance: ag.tolerance, Token: ag.token,
		Logf: func(format string, args ...any) {
			tr.r.rep.Logf("trial %s: %s: %s", tr.trial.ID, st.Addr(), fmt.Sprintf(format, args...))
		},
	}
}

// launched is a step's running agents.
type launched struct {
	urls      []string
	tolerance time.Duration
	token     string // their token (agent.NewToken), for the controller only
	done      func() // the teardown, to call when the step is done with them
}

// startAgents has the provider of a's agents block start them, with a
// fresh token and opts' targets as the only ones they may load.
func (tr *trialRun) startAgents(ctx context.Context, st *pipeline.Step, a *steps.AgentsConfig, opts load.Options) (*launched, error) {
	sp, d := tr.te.AgentsProvider(a)
	if d.HasErrors() {
		return nil, diag.Err(d)
	}
	name := sp.Name
	if sp.Err != nil {
		return nil, fmt.Errorf("agents: configuring provider %q: %w", name, sp.Err)
	}
	launcher, ok := sp.Provider.(providers.AgentLauncher)
	if !ok {
		return nil, fmt.Errorf("agents: provider %q (%s) cannot run agents", name, sp.Type.Name)
	}
	bin, err := AgentBinary()
	if err != nil {
		return nil, fmt.Errorf("agents: finding the benchflow binary: %w", err)
	}
	tolerance := 50 * time.Millisecond
	if a.Tolerance != "" {
		tolerance, _ = pipeline.ParseDuration(a.Tolerance) // validated
	}
	image := a.Image
	if image == "" {
		image = DefaultAgentImage
	}
	env := map[string]string{}
	if v := os.Getenv(agent.ClockShiftEnv); v != "" {
		env[agent.ClockShiftEnv] = v
	}
	token, err := agent.NewToken()
	if err != nil {
		return nil, err
	}
	var targets []string
	for _, t := range opts.Targets {
		if !slices.Contains(targets, t.URL) {
			targets = append(targets, t.URL)
		}
	}
	if err := os.MkdirAll(tr.logDir, dirPerm(tr.r.w.Dir())); err != nil {
		return nil, fmt.Errorf("creating the log folder: %w", err)
	}
	tr.r.rep.Logf("trial %s: %s: starting %d agents with %s", tr.trial.ID, st.Addr(), a.Count, name)
	group, err := launcher.LaunchAgents(ctx, &providers.AgentRequest{
		RunID: tr.r.w.Manifest().RunID, TrialID: tr.trial.ID, Step: st.Name, Count: a.Count,
		Binary: bin, Image: image, Env: env, Idle: "60s", LogDir: tr.logDir, Logf: tr.r.rep.Logf,
		Token: token, Targets: targets,
	})
	if err != nil {
		return nil, fmt.Errorf("agents: %w (logs in %s)", err, tr.logDir)
	}
	if pr, ok := group.(providers.ProcessReporter); ok {
		tr.mu.Lock()
		tr.agents = append(tr.agents, pr)
		tr.mu.Unlock()
	}
	return &launched{urls: group.URLs(), tolerance: tolerance, token: token, done: func() {
		tr.mu.Lock()
		tr.agents = slices.DeleteFunc(tr.agents, func(p providers.ProcessReporter) bool { return any(p) == any(group) })
		tr.mu.Unlock()
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := group.Teardown(tctx); err != nil {
			tr.r.rep.Warnf("trial %s: %s: tearing down agents: %v", tr.trial.ID, st.Addr(), err)
		}
	}}, nil
}

// agentProcs lists the processes of agents running on this machine, as the
// loader's: the machine accounting of collect steps then counts their CPU
// with benchflow's rather than as other processes (which would make the
// load look noisy).
func agentProcs(ctx context.Context, groups []providers.ProcessReporter) []providers.Process {
	var out []providers.Process
	for _, g := range groups {
		ps, err := g.Processes(ctx)
		if err != nil {
			continue
		}
		for _, p := range ps {
			p.Role = collect.RoleLoader
			out = append(out, p)
		}
	}
	return out
}

// agentRecords converts the controller's members for the results, with
// each agent's own verdict.
func agentRecords(out *agent.Outcome) []results.AgentRecord {
	recs := make([]results.AgentRecord, 0, len(out.Members))
	for _, m := range out.Members {
		r := results.AgentRecord{
			Index: m.Index, Host: m.Hello.Host, PID: m.Hello.PID, Cores: m.Hello.Cores,
			Connections: m.Share.Connections, Threads: m.Share.Threads, Requests: m.Share.Requests, Rate: m.Share.Rate,
			Result: m.Result, CPUPct: m.CPUPct(),
			OffsetS: m.Offset.Seconds(), SkewBoundS: m.SkewBound.Seconds(), RTTS: m.RTT.Seconds(), LateS: m.Late.Seconds(),
			DriftS: m.Drift.Seconds(), DriftBoundS: m.DriftBound.Seconds(),
		}
		if m.Err != nil {
			r.Error = m.Err.Error()
		}
		if v := collect.JudgeAgent(agentHealth(m)); v.Kind != "" {
			r.Verdict, r.VerdictEvidence = v.Kind, v.Evidence
		}
		recs = append(recs, r)
	}
	return recs
}

func agentHealth(m *agent.Member) collect.AgentHealth {
	h := collect.AgentHealth{Index: m.Index + 1, CPUPct: m.CPUPct(), Threads: m.Share.Threads, Cores: m.Hello.Cores, TargetRate: m.Share.Rate}
	if res := m.Result; res != nil {
		h.RateWarning = res.Warning
		if res.Latency != nil && res.Uncorrected != nil && res.Latency.TotalCount() > 0 {
			h.LagP99US = float64(res.Latency.ValueAtQuantile(99) - res.Uncorrected.ValueAtQuantile(99))
		}
	}
	return h
}

// judgeAgents puts a loader-bound agent into the step's verdict: a
// saturated load generator makes the step's figures its own limit, not
// the server's.
func judgeAgents(step *results.StepRecord) {
	var hs []collect.AgentHealth
	for _, a := range step.Agents {
		h := collect.AgentHealth{Index: a.Index + 1, CPUPct: a.CPUPct, Threads: a.Threads, Cores: a.Cores, TargetRate: a.Rate}
		if res := a.Result; res != nil {
			h.RateWarning = res.Warning
			if res.Latency != nil && res.Uncorrected != nil && res.Latency.TotalCount() > 0 {
				h.LagP99US = float64(res.Latency.ValueAtQuantile(99) - res.Uncorrected.ValueAtQuantile(99))
			}
		}
		hs = append(hs, h)
	}
	if v := collect.JudgeAgents(hs); v.Kind != "" {
		step.Verdict, step.VerdictEvidence = v.Kind, v.Evidence
	}
}
