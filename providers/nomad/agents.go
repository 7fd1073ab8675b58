package nomad

import (
	"context"
	"errors"
	"strings"
	"time"

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
// with an HTTP check on /v1/hello, and is waited for, torn down (purged,
// logs copied to the trial's logs folder) and collected by gc exactly like
// a service's job.
func (p *Provider) LaunchAgents(ctx context.Context, req *providers.AgentRequest) (providers.AgentGroup, error) {
	if req.Binary == "" {
		return nil, errors.New("starting agents: no benchflow binary to run")
	}
	s := *p.s
	s.Driver, s.Count, s.JobName, s.Gateway, s.gatewayErr = "raw_exec", req.Count, "", false, nil
	ap := &Provider{name: p.name, s: &s, pollInterval: p.pollInterval, stopTimeout: p.stopTimeout}
	// --linger: an agent the controller stops keeps running until the
	// job is stopped, because Nomad counts a service task that ends on its
	// own as failed (real Nomad 1.6.5: "Not Restarting", allocation
	// failed), even with exit code 0.
	args := []string{req.Binary, "agent", "--listen", "${NOMAD_ADDR_agent}", "--index", "${NOMAD_ALLOC_INDEX}", "--linger"}
	if req.Idle != "" {
		args = append(args, "--idle", req.Idle)
	}
	dep, err := ap.Provision(ctx, &providers.ProvisionRequest{
		RunID: req.RunID, TrialID: req.TrialID, LogDir: req.LogDir, Logf: req.Logf,
		Service: providers.ServiceSpec{
			Name: "agent-" + req.Step, Command: args, Env: req.Env, Replicas: req.Count,
			Ports:  []providers.Port{{Name: "agent"}},
			Health: providers.Health{HTTPPath: "/v1/hello", PortName: "agent", Interval: time.Second, Timeout: 2 * time.Second},
		},
	})
	if err != nil {
		return nil, err
	}
	g := &agentJob{dep: dep}
	for _, a := range strings.Split(dep.Endpoint().Attrs["allocations"], ",") {
		if a != "" {
			g.urls = append(g.urls, "http://"+a)
		}
	}
	if len(g.urls) != req.Count {
		terr := dep.Teardown(context.WithoutCancel(ctx))
		return nil, errors.Join(errors.New("starting agents: the job's allocations do not match its count"), terr)
	}
	return g, nil
}

// agentJob is a running agents job.
type agentJob struct {
	dep  providers.Deployment
	urls []string
}

func (g *agentJob) URLs() []string { return g.urls }

// Teardown purges the job, waits for its allocations to stop and keeps
// their logs (the service teardown).
func (g *agentJob) Teardown(ctx context.Context) error { return g.dep.Teardown(ctx) }
