// Package run executes a plan: for each trial (in the plan's order) it
// provisions the services with their providers, waits for health, runs the
// step DAG (independent steps concurrently; collect steps sample during the
// load they name), records the trial with engine/results, and tears down in
// reverse order on success, failure and cancellation (with a fresh context).
//
// Entry points: Apply (a whole run), Kill (a forced exit after a second
// Ctrl-C: every active deployment is torn down at once), LoadOptions (a
// load step's settings as engine/load options) and Console (progress on a
// terminal or in logs). Each step runs through its kind's Run
// (engine/steps), which calls back into the trial (steps.Trial, implemented
// by stepTrial in steps.go). The pieces it calls: engine/plan (evaluation),
// providers (deployment), engine/tune, engine/collect, engine/load,
// engine/results, engine/envinfo.
package run
