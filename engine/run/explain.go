package run

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// collectConfig maps a collect step to the sampler's config. quiet says
// whether this sampler takes the quiet check (the first one with machine
// accounting of a load does).
func (tr *trialRun) collectConfig(name string, cc *pipeline.CollectConfig, quiet bool) collect.Config {
	interval := time.Second
	if cc.Interval != "" {
		interval, _ = plan.ParseDuration(cc.Interval)
	}
	services := cc.Services
	c := collect.Config{
		Step: name, Interval: interval, Names: cc.Processes, Loader: cc.Loader,
		System:  cc.System == nil || *cc.System,
		Host:    collect.LocalHost(),
		Network: cc.Network == nil || *cc.Network,
		Procs:   func(ctx context.Context) []providers.Process { return tr.serviceProcs(ctx, services) },
		Machine: cc.Machine == nil || *cc.Machine,
	}
	if !c.Machine {
		return c
	}
	if cc.Threshold != nil {
		c.Threshold = *cc.Threshold
		if c.Threshold == 0 {
			c.Threshold = 1e-9 // keep every process that used any CPU
		}
	}
	c.InfraNames, c.Containers = tr.relation()
	if quiet {
		c.Quiet = collect.DefaultQuiet
		if cc.QuietCheck != "" {
			c.Quiet, _ = plan.ParseDuration(cc.QuietCheck)
		}
		c.RunProcs = func(ctx context.Context) []providers.Process { return tr.serviceProcs(ctx, nil) }
	}
	return c
}

// relation is what ties machine processes to the trial beyond those the
// deployments report: the infrastructure names of the provider types its
// deployed services ran on (providers.Type.Infra; another type's
// infrastructure is another's), and the containers the deployments
// started (providers.ContainerReporter), whose docker-proxy, shim and
// fuse-overlayfs are the trial's.
func (tr *trialRun) relation() (infra []string, containers []providers.Container) {
	tr.mu.Lock()
	var deps []providers.Deployment
	seen := map[string]bool{}
	for _, name := range tr.svcOrder {
		l := tr.services[name]
		if l == nil || l.dep == nil {
			continue
		}
		deps = append(deps, l.dep)
		if t, ok := providers.Lookup(l.typ); ok && !seen[l.typ] {
			seen[l.typ] = true
			infra = append(infra, t.Infra...)
		}
	}
	tr.mu.Unlock()
	return infra, collect.RelationOf(deps)
}

// explainStep records a load's CPU budget, quiet check and verdict, and
// returns what the verdict knew of the load.
func explainStep(step *results.StepRecord, ex *collect.Explanation, res *measure.Record) collect.LoadInfo {
	if ex == nil {
		return collect.LoadInfo{}
	}
	step.Quiet = ex.Quiet
	if ex.Budget == nil {
		return collect.LoadInfo{}
	}
	step.CPU = ex.Budget
	info := collect.LoadInfo{LoaderCPUs: loaderCPUs()}
	if res != nil {
		info.TargetRate, info.RPS, info.RateWarning = res.TargetRate, res.RPS(), res.Warning
		if res.TargetRate > 0 && res.Latency != nil && res.Uncorrected != nil && res.Latency.TotalCount() > 0 {
			info.LagP99US = float64(res.Latency.ValueAtQuantile(99) - res.Uncorrected.ValueAtQuantile(99))
		}
	}
	v := collect.Judge(collect.Evidence{Budget: *ex.Budget, Procs: ex.Procs, Load: info, Quiet: ex.Quiet})
	step.Verdict, step.VerdictEvidence = v.Kind, v.Evidence
	return info
}

// loaderCPUs is how many CPUs this process (the load generator) may run
// on: GOMAXPROCS within its affinity mask.
func loaderCPUs() int {
	n := runtime.GOMAXPROCS(0)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil && set.Count() > 0 && set.Count() < n {
		n = set.Count()
	}
	return n
}

// logExplanation prints a busy start and the verdict with --verbose (the
// trial's line says it was kept flagged; the run loop says when it runs
// again).
func (tr *trialRun) logExplanation(step *results.StepRecord) {
	if q := step.Quiet; q != nil && q.Busy {
		tr.r.rep.Logf("trial %s: busy start: processes outside the run used %.0f%% of a core in the %.1f s before %s (busiest: %s); the trial is flagged (busy_start) and its verdict is noisy",
			tr.trial.ID, q.OtherPct, q.WindowS, step.Name, q.Top)
	}
	if step.Verdict != "" {
		tr.r.rep.Logf("trial %s: %s: %s", tr.trial.ID, step.Name, collect.Verdict{Kind: step.Verdict, Evidence: step.VerdictEvidence})
	}
}

// platformVersions asks a deployment for its platform's versions
// (providers.VersionReporter), within 5 s; nil when it reports none.
func platformVersions(dep providers.Deployment) map[string]string {
	vr, ok := dep.(providers.VersionReporter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return vr.PlatformVersions(ctx)
}
