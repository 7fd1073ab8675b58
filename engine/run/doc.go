// Package run executes a plan: for each trial (in the plan's order) it
// provisions the services with their providers, waits for health, runs the
// step DAG (independent steps concurrently; collect steps sample during the
// load they name), records the trial with engine/results, and tears down in
// reverse order on success, failure and cancellation (with a fresh context).
//
// Entry points: New returns a Runner for a plan; its Apply runs the whole
// run and its Kill is a forced exit after a second Ctrl-C (every active
// deployment of that run torn down at once); Apply(ctx, plan, opts) is
// New(…).Apply(ctx). Apply is open (gc, then create the run folder or
// resume it, re-planning with the recorded seed), runTrials (the trial
// loop, adaptive rounds, finishing the run) and, per trial, runTrial
// (execute, then teardown). LoadOptions gives a load step's settings as
// engine/load options; Reporter receives progress events (the command's
// terminal console, cmd/benchflow/console.go, implements it).
//
// A service is evaluated by engine/plan (TrialEval.PrepareService); run
// does what touches the machine: the service folder, WriteFiles, the copy
// of the rendered files kept in logs/<trial>/files/, Provision, health and
// teardown. Render (render.go) prints a trial's prepared services; GC
// (gc.go) removes what killed runs left, reaching the backends through
// the pipeline's provider configs (ProviderConfigs).
//
// Each step runs through its kind's executor (executors.go: one per step
// kind of engine/steps, which only declares them), which calls into the
// trial through stepTrial (steps.go). A load or
// warm step with an agents block runs on agents (agents.go): the
// provider's AgentLauncher starts them and engine/agent synchronises, runs
// and merges them. The pieces it calls: engine/plan (evaluation),
// providers (deployment), engine/tune, engine/collect, engine/load,
// engine/agent, engine/results, engine/envinfo.
package run
