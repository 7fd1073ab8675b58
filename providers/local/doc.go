// Package local is the "local" provider: it runs a service's command as a
// child process of benchflow on this host, the "bare metal" baseline of a
// study.
//
//	provider "local" "host" {
//	  stop_timeout = "5s"   # SIGTERM, then SIGKILL after this long
//	  env_inherit  = true   # start from benchflow's environment
//	  work_dir     = ""     # cwd; default the service's folder
//	}
//
// Entry points: the package registers Type, the type "local", in init (a
// blank import is enough); Config.Validate reports a bad stop_timeout or
// work_dir at its attribute; New builds a provider directly; Provision starts the
// process and returns a deployment that implements providers.Liveness
// (Alive), providers.ProcessReporter (Processes) and Teardown. GC finds
// processes left by a crashed run through the BENCHFLOW_RUN variable in
// their environment.
//
// Each service runs in its own process group (Setpgid) with Pdeathsig
// SIGKILL; Teardown signals the whole group, so workers die with their
// master. Output goes to LogDir/<service>.stdout.log and .stderr.log.
//
// Sibling packages own the rest: the engine (engine/run) renders the
// service's files into its folder, allocates its ports and runs the health
// check; engine/collect samples the pids Processes returns; engine/serve is
// the built-in target (`benchflow serve`) a local service may run.
package local
