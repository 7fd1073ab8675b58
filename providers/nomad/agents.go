package nomad

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers"
)

var _ providers.AgentLauncher = (*Provider)(nil)

// LaunchAgents runs req.Count agents as one Nomad job of req.Count
// allocations with the raw_exec driver (whatever driver the provider's
// services use): each runs `benchflow agent --listen ${NOMAD_ADDR_agent}
// --index ${NOMAD_ALLOC_INDEX}` from req.Binary, which must exist at that
// path on the Nomad clients. The job carries the same meta as a service's
// (managed, run, trial, service, owner), registers the agents in Consul
// (or, with service_provider "nomad", in Nomad, contacting no Consul)
// with a TCP check (the agents refuse HTTP requests without their token),
// reads its token and targets from the job's Nomad variable through a
// template, and is waited for, torn down (purged,
// logs copied to the trial's logs folder as agent-<step>-<n>.stdout.log,
// .stderr.log and .events.log, n from 1 as providers.AgentName numbers
// agents everywhere) and collected by gc exactly like a service's job.
func (p *Provider) LaunchAgents(ctx context.Context, req *providers.AgentRequest) (providers.AgentGroup, error) {
	if req.Binary == "" {
		return nil, errors.New("starting agents: no benchflow binary to run")
	}
	// `benchflow agent` exits 1 at once when $BENCHFLOW_AGENT_TOKEN is
	// empty ("no token") or $BENCHFLOW_AGENT_TARGETS holds no URL ("no
	// target"), which real Nomad reports as failed allocations only after
	// the job is registered: refuse before anything is created.
	if strings.TrimSpace(req.Token) == "" {
		return nil, errors.New("starting agents: no token: the agents refuse to start without one " +
			"(the request's Token, a fresh secret per run as the engine gives; it reaches them as $" + providers.AgentTokenEnv + " through the job's Nomad variable)")
	}
	if strings.TrimSpace(strings.Join(req.Targets, "")) == "" {
		return nil, errors.New("starting agents: no target: the agents refuse to start without the URLs they may load " +
			"(the request's Targets; they reach them as $" + providers.AgentTargetsEnv + " through the job's Nomad variable)")
	}
	s := *p.s
	s.Driver, s.Count, s.JobName, s.Gateway, s.gatewayErr = "raw_exec", req.Count, "", false, nil
	ap := &Provider{name: p.name, s: &s, pollInterval: p.pollInterval, stopTimeout: p.stopTimeout, agentStep: req.Step}
	// --linger: an agent the controller stops keeps running until the
	// job is stopped, because Nomad counts a service task that ends on its
	// own as failed (real Nomad 1.6.5: "Not Restarting", allocation
	// failed), even with exit code 0.
	args := []string{req.Binary, "agent", "--listen", "${NOMAD_ADDR_agent}", "--index", "${NOMAD_ALLOC_INDEX}", "--linger"}
	if req.Idle != "" {
		args = append(args, "--idle", req.Idle)
	}
	preq := &providers.ProvisionRequest{
		RunID: req.RunID, TrialID: req.TrialID, LogDir: req.LogDir, Logf: req.Logf,
		Service: providers.ServiceSpec{
			Name: "agent-" + req.Step, Command: args, Env: req.Env, Replicas: req.Count,
			Ports: []providers.Port{{Name: "agent"}},
			// A TCP check: the agent refuses every HTTP request without
			// the token, which the checks must not hold.
			Health: providers.Health{TCP: true, PortName: "agent", Interval: time.Second, Timeout: 2 * time.Second},
		},
	}
	// The token and targets in the job's own variable, which a template
	// reads into each agent's environment: the job carries neither.
	nc, err := ap.nomadClient()
	if err != nil {
		return nil, err
	}
	g := &agentJob{nomad: nc, varPath: varPrefix + ap.jobSpec(preq).jobID, namespace: s.Namespace}
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	logf("nomad: writing variable %s (the agents' token)", g.varPath)
	// Beside them, the job's labels and its owner's (Nomad variables
	// carry no metadata but their items): gc finds a variable whose job
	// was never registered (apply killed in between) by its path and
	// tells a dead run's from a live one's by these.
	items := napi.VariableItems{varKeyToken: req.Token, varKeyTargets: strings.Join(req.Targets, " "),
		providers.LabelManaged: "true", providers.LabelRun: req.RunID, providers.LabelTrial: req.TrialID,
		providers.LabelService: preq.Service.Name}
	addOwnerLabels(items)
	v := &napi.Variable{Namespace: s.Namespace, Path: g.varPath, Items: items}
	if _, _, err := nc.Variables().Create(v, (&napi.WriteOptions{Namespace: s.Namespace}).WithContext(ctx)); err != nil {
		return nil, fmt.Errorf("starting agents: writing their token to Nomad variable %s: %w", g.varPath, err)
	}
	ap.envVar = g.varPath
	dep, err := ap.Provision(ctx, preq)
	if err != nil {
		return nil, errors.Join(err, g.deleteVar(context.WithoutCancel(ctx)))
	}
	g.dep = dep
	for _, a := range strings.Split(dep.Endpoint().Attrs["allocations"], ",") {
		if a != "" {
			g.urls = append(g.urls, "http://"+a)
		}
	}
	if len(g.urls) != req.Count {
		terr := g.Teardown(context.WithoutCancel(ctx))
		return nil, errors.Join(errors.New("starting agents: the job's allocations do not match its count"), terr)
	}
	return g, nil
}

// The items of the agents' variable (and the Label* items beside them).
const (
	varKeyToken   = "token"
	varKeyTargets = "targets"
)

// varPrefix is where a job's own variable lives (nomad/jobs/<job id>),
// and agentVarPrefix where an agents job's does: its job id is
// "benchflow-agent-<step>-<run id>" (jobSpec of the service
// "agent-<step>"), so gc lists benchflow's agent variables by this prefix.
const (
	varPrefix      = "nomad/jobs/"
	agentVarPrefix = varPrefix + "benchflow-agent-"
)

// agentJob is a running agents job.
type agentJob struct {
	dep       providers.Deployment
	urls      []string
	nomad     *napi.Client
	varPath   string // the variable holding the token
	namespace string
}

func (g *agentJob) URLs() []string { return g.urls }

// Teardown purges the job, waits for its allocations to stop and keeps
// their logs (the service teardown), and deletes the token's variable.
func (g *agentJob) Teardown(ctx context.Context) error {
	var err error
	if g.dep != nil {
		err = g.dep.Teardown(ctx)
	}
	dctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), forcedTimeout)
		defer cancel()
	}
	return errors.Join(err, g.deleteVar(dctx))
}

func (g *agentJob) deleteVar(ctx context.Context) error {
	if _, err := g.nomad.Variables().Delete(g.varPath, (&napi.WriteOptions{Namespace: g.namespace}).WithContext(ctx)); err != nil {
		return fmt.Errorf("deleting Nomad variable %s (the agents' token): %w", g.varPath, err)
	}
	return nil
}
