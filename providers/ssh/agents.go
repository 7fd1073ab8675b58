package ssh

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/providers"
)

var _ providers.AgentLauncher = (*Provider)(nil)

// LaunchAgents runs req.Count `benchflow agent` processes on the hosts of
// addresses (address when unset), in turn: each a service of its host
// (the copy of benchflow there, its own process group, stopped at
// teardown), listening on every address of the host at a port the kernel
// picks, reached at the host's address. The token reaches each agent in a
// file only the login user reads, written over SSH into its folder.
func (p *Provider) LaunchAgents(ctx context.Context, req *providers.AgentRequest) (providers.AgentGroup, error) {
	addrs := p.cfg.Addresses
	if len(addrs) == 0 {
		addrs = []string{p.t.Address}
	}
	hosts := make([]*Provider, len(addrs))
	for i, a := range addrs {
		cfg := p.cfg
		cfg.Address, cfg.Addresses = a, nil
		hp, err := New(p.name, cfg)
		if err != nil {
			return nil, err
		}
		hosts[i] = hp
	}
	g := &agentGroup{}
	fail := func(err error) (providers.AgentGroup, error) {
		g.Teardown(context.WithoutCancel(ctx))
		return nil, err
	}
	for i := range req.Count {
		hp := hosts[i%len(hosts)]
		d, url, err := hp.launchAgent(ctx, req, i)
		if d != nil {
			g.deps = append(g.deps, d)
		}
		if err != nil {
			return fail(fmt.Errorf("starting agent %d on %s: %w", i+1, hp.t.addr(), err))
		}
		g.urls = append(g.urls, url)
	}
	return g, nil
}

// launchAgent starts agent i on p's host and waits for its address.
func (p *Provider) launchAgent(ctx context.Context, req *providers.AgentRequest, i int) (*Deployment, string, error) {
	c, err := acquire(ctx, p.t)
	if err != nil {
		return nil, "", err
	}
	defer c.release()
	name := providers.AgentName(req.Step, i)
	env := maps.Clone(req.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[providers.AgentTargetsEnv] = providers.AgentTargets(req.Targets)
	spec := providers.ServiceSpec{Name: name, Env: env,
		Command: []string{c.bin, "agent", "--listen", "0.0.0.0:0", "--index", strconv.Itoa(i)}}
	if req.Idle != "" {
		spec.Command = append(spec.Command, "--idle", req.Idle)
	}
	if req.Token != "" {
		// Copied into the agent's folder on the host, 0600; the local
		// copy lives only until then.
		dir, err := os.MkdirTemp("", "benchflow-agent-token-")
		if err != nil {
			return nil, "", err
		}
		defer os.RemoveAll(dir)
		tf := filepath.Join(dir, "token")
		if err := os.WriteFile(tf, []byte(req.Token+"\n"), 0o600); err != nil {
			return nil, "", err
		}
		spec.Files = []providers.File{{Name: "token", HostPath: tf, Mode: 0o600}}
		env[providers.AgentTokenFileEnv] = path.Join(p.ServiceDir(name), "token")
	}
	dep, err := p.Provision(ctx, &providers.ProvisionRequest{RunID: req.RunID, TrialID: req.TrialID, LogDir: req.LogDir, Logf: req.Logf, Service: spec})
	if err != nil {
		return nil, "", err
	}
	d := dep.(*Deployment)
	port, err := d.agentPort(ctx, 30*time.Second)
	if err != nil {
		return d, "", err
	}
	return d, "http://" + net.JoinHostPort(p.t.Address, port), nil
}

// agentPort waits for the agent's "agent listening on ADDR" line in its
// output on the host and returns ADDR's port.
func (d *Deployment) agentPort(ctx context.Context, limit time.Duration) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		if r, err := d.c.call(ctx, &request{Op: opRead, Path: d.logPrefix + ".stdout.log"}); err == nil {
			for _, l := range strings.Split(string(r.Data), "\n") {
				if a, ok := strings.CutPrefix(l, "agent listening on "); ok {
					_, port, err := net.SplitHostPort(strings.TrimSpace(a))
					if err != nil {
						return "", fmt.Errorf("the agent reported %q: %w", a, err)
					}
					return port, nil
				}
			}
		}
		if err := d.Alive(ctx); err != nil {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no address reported within %s", limit)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type agentGroup struct {
	deps []*Deployment
	urls []string
}

func (g *agentGroup) URLs() []string { return g.urls }

// Processes are the agents' processes where their host shares this
// machine's kernel (Deployment.Processes), none otherwise.
func (g *agentGroup) Processes(ctx context.Context) ([]providers.Process, error) {
	var out []providers.Process
	for _, d := range g.deps {
		ps, _ := d.Processes(ctx)
		out = append(out, ps...)
	}
	return out, nil
}

// Teardown stops every agent, copying its output into the log folder, and
// removes its folder on the host.
func (g *agentGroup) Teardown(ctx context.Context) error {
	var errs []error
	for i := len(g.deps) - 1; i >= 0; i-- {
		if err := g.deps[i].Teardown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	g.deps = nil
	return errors.Join(errs...)
}
