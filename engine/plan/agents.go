package plan

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/providers"
)

// checkAgentsProvider checks that a load or warm step's agents block
// names a declared provider whose type runs agents (the rest of the block
// is the step kind's to check: engine/steps/agents.go).
func (te *TrialEval) checkAgentsProvider(st *pipeline.Step, c *steps.LoadConfig) hcl.Diagnostics {
	if c.Agents == nil {
		return nil
	}
	typ, d := te.agentsProviderType(c.Agents)
	if d != nil {
		d.Subject = steps.AgentsDiag(st, "provider", "", "").Subject
		return hcl.Diagnostics{d}
	}
	if !typ.Agents {
		var able []string
		for _, n := range providers.Names() {
			if t, ok := providers.Lookup(n); ok && t.Agents {
				able = append(able, n)
			}
		}
		return hcl.Diagnostics{steps.AgentsDiag(st, "provider", "Provider cannot run agents",
			fmt.Sprintf("Step %s runs its agents with provider %q of type %s, which cannot run load agents. Types that can: %s.", st.Addr(), c.Agents.Provider, typ.Name, listOrNone(able)))}
	}
	return nil
}

// agentsProviderType resolves an agents block's provider: the named
// provider block, or the implicit local provider when the pipeline
// declares none and the block names none (or names "local"). It returns
// the type.
func (te *TrialEval) agentsProviderType(a *steps.AgentsConfig) (*providers.Type, *hcl.Diagnostic) {
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

func (te *TrialEval) agentsProviderBlock(a *steps.AgentsConfig) (*pipeline.Provider, *hcl.Diagnostic) {
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
		Detail: fmt.Sprintf("The agents block names provider %q, which is not declared.%s Declared providers: %s.", a.Provider, diag.Suggest(a.Provider, names), listOrNone(names))}
}

// AgentsProvider resolves the provider of an agents block for this trial
// as ServiceProvider does a service's: its block (as agentsProviderType
// finds it), type, configuration and the provider New builds.
func (te *TrialEval) AgentsProvider(a *steps.AgentsConfig) (_ *ServiceProvider, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	pv, d := te.agentsProviderBlock(a)
	if d != nil {
		return nil, hcl.Diagnostics{d}
	}
	return te.buildProvider(pv)
}
