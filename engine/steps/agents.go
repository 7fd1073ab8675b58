package steps

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// AgentsConfig is the `agents {}` block of a load or warm step: where the
// load generators run and how many (docs/distributed.md). engine/plan
// checks the provider it names; engine/run runs the step on the agents.
type AgentsConfig struct {
	// Provider names a provider block whose type runs agents (local, k8s,
	// nomad); optional when the pipeline declares none ("local" then).
	Provider string `hcl:"provider,optional"`
	Count    int    `hcl:"count"`
	// Image is the container image holding benchflow, for providers that
	// run containers (default benchflow/agent:local).
	Image string `hcl:"image,optional"`
	// Tolerance is how late an agent may begin its share after the common
	// start instant, by its own clock, before the step fails (default
	// "50ms").
	Tolerance string `hcl:"tolerance,optional"`
}

// MaxAgents bounds an agents block's count.
const MaxAgents = 1024

// agentsBlock finds a step body's agents block.
func agentsBlock(body hcl.Body) *hclsyntax.Block {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	for _, b := range sb.Blocks {
		if b.Type == "agents" {
			return b
		}
	}
	return nil
}

// AgentsDiag is a diagnostic on attr of the step's agents block (the block
// itself when attr is absent, the step without a block).
func AgentsDiag(st *pipeline.Step, attr, summary, detail string) *hcl.Diagnostic {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: st.DeclRange.Ptr()}
	if blk := agentsBlock(st.Body); blk != nil {
		d.Subject = blk.DefRange().Ptr()
		if a, ok := blk.Body.Attributes[attr]; ok {
			d.Subject = a.Expr.Range().Ptr()
		}
	}
	return d
}

// validateAgents checks a load or warm step's agents block against the
// step's own settings: what can be split and what cannot travel.
func validateAgents(st *pipeline.Step, c *LoadConfig) hcl.Diagnostics {
	a := c.Agents
	if a == nil {
		return nil
	}
	var diags hcl.Diagnostics
	add := func(d *hcl.Diagnostic) { diags = append(diags, d) }
	if a.Count < 1 || a.Count > MaxAgents {
		add(AgentsDiag(st, "count", "Invalid agent count", fmt.Sprintf("count is the number of agents that share the load, from 1 to %d, not %d.", MaxAgents, a.Count)))
		return diags
	}
	conns := c.Connections
	if conns == 0 {
		conns = 10 // load.Defaults
	}
	if conns < a.Count {
		add(AgentsDiag(st, "count", "Too few connections for the agents", fmt.Sprintf("Step %s has %d connections and %d agents: every agent needs at least one connection; raise connections to %d or more, or lower count.", st.Addr(), conns, a.Count, a.Count)))
	}
	if c.Requests > 0 && c.Requests < int64(a.Count) {
		add(AgentsDiag(st, "count", "Too few requests for the agents", fmt.Sprintf("Step %s has requests = %d and %d agents: every agent needs at least one request.", st.Addr(), c.Requests, a.Count)))
	}
	if a.Tolerance != "" {
		if d, err := pipeline.ParseDuration(a.Tolerance); err != nil || d <= 0 {
			add(AgentsDiag(st, "tolerance", "Invalid tolerance", fmt.Sprintf("tolerance is how late an agent may start after the common instant, a duration such as \"50ms\", not %q.", a.Tolerance)))
		}
	}
	for _, x := range []struct {
		set          bool
		attr, reason string
	}{
		{c.Script != "", "script", "a request script runs in the controller's Starlark interpreter"},
		{c.CACert != "", "cacert", "a CA file is read on this machine and is not sent to agents (they load https targets without verifying certificates)"},
	} {
		if x.set {
			add(AttrErr(st.Body, x.attr, "Unsupported with agents", fmt.Sprintf("Step %s runs on agents, and %s: %s cannot be combined with an agents block. Drop one of them.", st.Addr(), x.reason, x.attr)))
		}
	}
	return diags
}
