package plan

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/providers"
)

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

// agentsDiag is a diagnostic on attr of the step's agents block (the block
// itself when attr is absent).
func agentsDiag(st *pipeline.Step, attr, summary, detail string) *hcl.Diagnostic {
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
func validateAgents(st *pipeline.Step, c *pipeline.LoadConfig) hcl.Diagnostics {
	a := c.Agents
	if a == nil {
		return nil
	}
	var diags hcl.Diagnostics
	add := func(d *hcl.Diagnostic) { diags = append(diags, d) }
	if a.Count < 1 || a.Count > MaxAgents {
		add(agentsDiag(st, "count", "Invalid agent count", fmt.Sprintf("count is the number of agents that share the load, from 1 to %d, not %d.", MaxAgents, a.Count)))
		return diags
	}
	conns := c.Connections
	if conns == 0 {
		conns = 10 // load.Defaults
	}
	if conns < a.Count {
		add(agentsDiag(st, "count", "Too few connections for the agents", fmt.Sprintf("Step %s has %d connections and %d agents: every agent needs at least one connection; raise connections to %d or more, or lower count.", st.Addr(), conns, a.Count, a.Count)))
	}
	if c.Requests > 0 && c.Requests < int64(a.Count) {
		add(agentsDiag(st, "count", "Too few requests for the agents", fmt.Sprintf("Step %s has requests = %d and %d agents: every agent needs at least one request.", st.Addr(), c.Requests, a.Count)))
	}
	if a.Tolerance != "" {
		if d, err := pipeline.ParseDuration(a.Tolerance); err != nil || d <= 0 {
			add(agentsDiag(st, "tolerance", "Invalid tolerance", fmt.Sprintf("tolerance is how late an agent may start after the common instant, a duration such as \"50ms\", not %q.", a.Tolerance)))
		}
	}
	for _, x := range []struct {
		set          bool
		attr, reason string
	}{
		{c.Script != "", "script", "a request script runs in the controller's Starlark interpreter"},
		{c.Search != nil, "search", "a capacity search adapts each probe to the last one"},
		{c.Until != "", "until", "warming until steady judges each window as it ends"},
	} {
		if x.set {
			d := attrErr(st.Body, x.attr, "Unsupported with agents", fmt.Sprintf("Step %s runs on agents, and %s: %s cannot be combined with an agents block. Drop one of them.", st.Addr(), x.reason, x.attr))
			if blk := searchBlock(st.Body); x.attr == "search" && blk != nil {
				d.Subject = blk.DefRange().Ptr()
			}
			add(d)
		}
	}
	return diags
}

// checkAgentsProvider checks that the agents block names a declared
// provider whose type runs agents.
func (te *TrialEval) checkAgentsProvider(st *pipeline.Step, c *pipeline.LoadConfig) hcl.Diagnostics {
	if c.Agents == nil {
		return nil
	}
	typ, d := te.AgentsProvider(c.Agents)
	if d != nil {
		d.Subject = agentsDiag(st, "provider", "", "").Subject
		return hcl.Diagnostics{d}
	}
	if !typ.Agents {
		var able []string
		for _, n := range providers.Names() {
			if t, ok := providers.Lookup(n); ok && t.Agents {
				able = append(able, n)
			}
		}
		return hcl.Diagnostics{agentsDiag(st, "provider", "Provider cannot run agents",
			fmt.Sprintf("Step %s runs its agents with provider %q of type %s, which cannot run load agents. Types that can: %s.", st.Addr(), c.Agents.Provider, typ.Name, listOrNone(able)))}
	}
	return nil
}

// AgentsProvider resolves an agents block's provider: the named provider
// block, or the implicit local provider when the pipeline declares none
// and the block names none (or names "local"). It returns the type and
// the provider block (nil for the implicit local one).
func (te *TrialEval) AgentsProvider(a *pipeline.AgentsConfig) (*providers.Type, *hcl.Diagnostic) {
	pv, d := te.agentsProviderBlock(a)
	if d != nil {
		return nil, d
	}
	typ, diags := ProviderType(pv)
	if diags.HasErrors() {
		return nil, diags[0]
	}
	return typ, nil
}

func (te *TrialEval) agentsProviderBlock(a *pipeline.AgentsConfig) (*pipeline.Provider, *hcl.Diagnostic) {
	p := te.plan.Pipeline
	var names []string
	for _, pv := range p.Providers {
		names = append(names, pv.Name)
		if pv.Name == a.Provider {
			return pv, nil
		}
	}
	if len(p.Providers) == 0 && (a.Provider == "" || a.Provider == ImplicitLocal) {
		return nil, nil
	}
	if a.Provider == "" {
		if len(p.Providers) == 1 {
			return p.Providers[0], nil
		}
		return nil, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing agents provider",
			Detail: fmt.Sprintf("The pipeline declares several providers: name the one that runs the agents, provider = \"…\" (declared: %s).", listOrNone(names))}
	}
	return nil, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared provider",
		Detail: fmt.Sprintf("The agents block names provider %q, which is not declared.%s Declared providers: %s.", a.Provider, Suggest(a.Provider, names), listOrNone(names))}
}

// AgentsProviderBlock is the provider block an agents block names (nil
// for the implicit local provider), after validation.
func (te *TrialEval) AgentsProviderBlock(a *pipeline.AgentsConfig) *pipeline.Provider {
	pv, _ := te.agentsProviderBlock(a)
	return pv
}
