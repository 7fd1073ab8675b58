package providers

import (
	"context"
	"strconv"
	"strings"
)

// AgentLauncher is implemented by providers that can run load agents
// (`benchflow agent`) for a load or warm step with an agents block: as
// processes on this machine (local), Kubernetes pods (k8s) or a Nomad
// batch job (nomad). Their Type sets Agents so validation can tell.
type AgentLauncher interface {
	// LaunchAgents starts req.Count agents and returns once each one's
	// address is known (the controller then waits for them to answer).
	// On error nothing it started may be left behind.
	LaunchAgents(ctx context.Context, req *AgentRequest) (AgentGroup, error)
}

// AgentRequest says what agents to start.
type AgentRequest struct {
	RunID   string // LabelRun of what is created
	TrialID string
	Step    string // the load or warm step's name
	Count   int
	// Binary is the benchflow binary on this machine (local processes,
	// Nomad raw_exec); Image the container image holding it (k8s).
	Binary string
	Image  string
	// Env is added to every agent's environment.
	Env map[string]string
	// Idle is the agents' --idle: how long each waits without its
	// controller before it exits.
	Idle string
	// LogDir is the folder (created by the engine) where each agent's
	// output is kept, one file per agent named after AgentName.
	LogDir string
	Logf   func(format string, args ...any)
	// Token is the secret every request to the agents must carry (one
	// per launch). It must reach each agent privately, as its
	// AgentTokenEnv environment variable or in a file only its owner
	// reads named by AgentTokenFileEnv, and never appear on a command
	// line, in a log, in a job or pod specification or in the results.
	Token string
	// Targets are the target URLs the agents may load, handed to each as
	// AgentTargetsEnv (AgentTargets); they may hold credentials: keep
	// them as private as Token.
	Targets []string
}

// How a provider hands an agent what it must not take from the network
// (docs/distributed.md, "Authentication"). None of it is ever a
// command-line argument.
const (
	// AgentTokenEnv holds the token itself (Kubernetes: from a Secret;
	// Nomad: from a variable, through a template).
	AgentTokenEnv = "BENCHFLOW_AGENT_TOKEN"
	// AgentTokenFileEnv names a file holding the token, that only its
	// owner may read (local agents).
	AgentTokenFileEnv = "BENCHFLOW_AGENT_TOKEN_FILE"
	// AgentTargetsEnv holds the target URLs the agent may load,
	// separated by newlines or spaces.
	AgentTargetsEnv = "BENCHFLOW_AGENT_TARGETS"
)

// AgentTargets is AgentTargetsEnv's value for targets, one a line.
func AgentTargets(targets []string) string { return strings.Join(targets, "\n") }

// AgentGroup is a set of running agents.
type AgentGroup interface {
	// URLs are the agents' base URLs reachable from this process, in
	// index order.
	URLs() []string
	// Teardown stops every agent and removes what LaunchAgents created,
	// after copying each agent's output into LogDir. It is called exactly
	// once, with a fresh context, also after Ctrl-C.
	Teardown(ctx context.Context) error
}

// AgentName is the name of the agent at index (0-based) of a step:
// "agent-wrk-1" for the first, as agents are numbered from 1 in what users
// see. It names log files and is the service name in labels and process
// markers.
func AgentName(step string, index int) string {
	return "agent-" + step + "-" + strconv.Itoa(index+1)
}
