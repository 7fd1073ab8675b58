// Package collect samples processes and the system while a load runs: the
// `collect` step of a pipeline.
//
// Entry points:
//
//   - Start begins sampling at Config.Interval and returns a *Sampler; the
//     first pass only records baselines.
//   - (*Sampler).Stop takes a last sample and returns the rows, ready for
//     results.TrialRecord (Processes, System, Network).
//   - With Config.Machine, (*Sampler).Explain returns the CPU budget, the
//     quiet check and the processes' means; Judge turns them into a
//     verdict. Whose a process is is decided by relation to the run
//     (relation.go): reported by a provider, in its containers, lineage,
//     the helpers of its containers (Config.Containers), the trial's
//     provider types' infrastructure (Config.InfraNames) — never by name.
//   - Summary averages process rows per name ("nginx 96%, docker-proxy
//     120%") for the report and the progress line; FormatSummary prints it.
//
// Everything comes from /proc: per-process CPU from utime/stime deltas in
// /proc/PID/stat (100 = one core), RSS from /proc/PID/statm, threads from
// stat, context switches from /proc/PID/task/*/status; the system CPU split
// from the first line of /proc/stat; interface counters from /proc/net/dev
// (of benchflow's network namespace).
//
// Sibling packages: engine/tune applies settings before the load,
// engine/load drives the load this package observes, engine/results writes
// the rows to processes.parquet, system.parquet and network.parquet, and
// engine/run (the executor) maps pipeline.CollectConfig to Config and asks
// the deployments for their processes (providers.ProcessReporter) and
// containers (providers.ContainerReporter, RelationOf).
package collect
