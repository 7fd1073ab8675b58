// Package tune applies the settings of a pipeline's `tune` step to the host
// and the service processes, verifies them, and undoes them at teardown.
//
// Entry points:
//
//   - Apply applies a Settings (sysctls, rlimits, CPU affinity of the
//     service and of the load generator, nice) in a fixed order, reads every
//     value back to verify it, and returns an *Undo.
//   - (*Undo).Restore puts every old value back in reverse order; it is
//     idempotent, so the executor may call it from both its teardown path
//     and a signal handler.
//   - ParseCPUList and ParseRlimits turn the pipeline's strings
//     ("0,2-3", {"nofile" = "65535"}) into Settings fields.
//
// Settings that need privileges fail with the setting and the reason, or
// become warnings when Settings.Optional is set. Container providers map
// the same settings to their own mechanisms (Docker: sysctls, ulimits,
// cpuset) in package providers/docker; this package only touches the host
// and host pids.
//
// Sibling packages: engine/collect samples processes during a load,
// engine/envinfo records the machine a run ran on, engine/run (the executor)
// maps pipeline.TuneConfig to Settings and calls Apply.
package tune
