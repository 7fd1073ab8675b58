package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/providers"
)

var (
	_ providers.AgentLauncher   = (*Local)(nil)
	_ providers.ProcessReporter = (*agentGroup)(nil)
)

// LaunchAgents runs req.Count `benchflow agent` processes on this machine,
// each a service process like any other (its own process group, killed
// with benchflow, found by GC through the BENCHFLOW_* markers), listening
// on a free loopback port it reports on its first line of output.
func (l *Local) LaunchAgents(ctx context.Context, req *providers.AgentRequest) (providers.AgentGroup, error) {
	if req.Binary == "" {
		return nil, errors.New("starting agents: no benchflow binary to run")
	}
	g := &agentGroup{}
	env := maps.Clone(req.Env)
	if env == nil {
		env = map[string]string{}
	}
	if req.Token != "" {
		// The token in a file only this user reads, in a folder only this
		// user opens, removed at teardown; its path in the environment.
		dir, err := os.MkdirTemp("", "benchflow-agents-")
		if err != nil {
			return nil, fmt.Errorf("starting agents: %w", err)
		}
		g.secretDir = dir
		path := filepath.Join(dir, "token")
		if err := os.WriteFile(path, []byte(req.Token+"\n"), 0o600); err != nil {
			g.Teardown(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("starting agents: writing their token: %w", err)
		}
		env[providers.AgentTokenFileEnv] = path
	}
	env[providers.AgentTargetsEnv] = providers.AgentTargets(req.Targets)
	for i := range req.Count {
		name := providers.AgentName(req.Step, i)
		args := []string{req.Binary, "agent", "--listen", "127.0.0.1:0", "--index", strconv.Itoa(i)}
		if req.Idle != "" {
			args = append(args, "--idle", req.Idle)
		}
		dep, err := l.Provision(ctx, &providers.ProvisionRequest{
			RunID: req.RunID, TrialID: req.TrialID, LogDir: req.LogDir, Logf: req.Logf,
			Service: providers.ServiceSpec{Name: name, Command: args, Env: env},
		})
		if err != nil {
			g.Teardown(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("starting agent %d: %w", i, err)
		}
		d := dep.(*Deployment)
		g.deps = append(g.deps, d)
		addr, err := agentAddress(ctx, d, 30*time.Second)
		if err != nil {
			g.Teardown(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("starting agent %d: %w", i, err)
		}
		g.urls = append(g.urls, "http://"+addr)
	}
	return g, nil
}

// agentAddress waits for the agent's "agent listening on ADDR" line.
func agentAddress(ctx context.Context, d *Deployment, limit time.Duration) (string, error) {
	out, _ := d.LogPaths()
	deadline := time.Now().Add(limit)
	for {
		if f, err := os.Open(out); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if a, ok := strings.CutPrefix(sc.Text(), "agent listening on "); ok {
					f.Close()
					return strings.TrimSpace(a), nil
				}
			}
			f.Close()
		}
		if err := d.Alive(ctx); err != nil {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no address reported within %s (see %s)", limit, out)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type agentGroup struct {
	deps      []*Deployment
	urls      []string
	secretDir string // holds the token file
}

func (g *agentGroup) URLs() []string { return g.urls }

// Teardown stops every agent; their output stays in the log folder.
func (g *agentGroup) Teardown(ctx context.Context) error {
	var errs []error
	for i := len(g.deps) - 1; i >= 0; i-- {
		if err := g.deps[i].Teardown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	g.deps = nil
	if g.secretDir != "" {
		if err := os.RemoveAll(g.secretDir); err != nil {
			errs = append(errs, fmt.Errorf("removing the agents' token: %w", err))
		}
		g.secretDir = ""
	}
	return errors.Join(errs...)
}

// Processes are the agents' processes (role "loader": they are the load
// generator), for collect steps.
func (g *agentGroup) Processes(ctx context.Context) ([]providers.Process, error) {
	var out []providers.Process
	for _, d := range g.deps {
		ps, err := d.Processes(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			p.Role = "loader"
			out = append(out, p)
		}
	}
	return out, nil
}

// PIDs are the agents' process ids (tests check nothing is left).
func (g *agentGroup) PIDs() []int {
	var out []int
	for _, d := range g.deps {
		out = append(out, d.PID())
	}
	return out
}
