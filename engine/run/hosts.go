package run

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/providers"
)

// hostSampling is a collect step sampling the other machines of a trial:
// its services' hosts and the hosts of the load's agents (collect.HostSampler).
type hostSampling struct {
	runs     []collect.HostRun
	services map[string]bool // hosts that run services
	loaders  map[string]bool // hosts that run agents
	// localServices says some service runs on this machine.
	localServices bool
}

// startHostSamplers starts, for collect config cfg, a sampler on every
// other machine the trial's services run on and, with an agents block
// (a), on the hosts of its provider. A host that cannot be sampled is a
// note, not a failure: the load runs, that host has no rows.
func (tr *trialRun) startHostSamplers(ctx context.Context, cfg collect.Config, a *steps.AgentsConfig) *hostSampling {
	hs := &hostSampling{services: map[string]bool{}, loaders: map[string]bool{}}
	type sampler struct {
		s    collect.HostSampler
		host string
	}
	var todo []sampler
	seen := map[string]bool{}
	add := func(s collect.HostSampler, set map[string]bool) {
		for _, h := range s.SampledHosts() {
			set[h] = true
			if !seen[h] {
				seen[h] = true
				todo = append(todo, sampler{s, h})
			}
		}
	}
	tr.mu.Lock()
	for _, name := range tr.svcOrder {
		if l := tr.services[name]; l != nil && l.dep != nil {
			if s, ok := l.dep.(collect.HostSampler); ok {
				add(s, hs.services)
			} else {
				hs.localServices = true
			}
		}
	}
	tr.mu.Unlock()
	if a != nil {
		if sp, d := tr.te.AgentsProvider(a); !d.HasErrors() && sp.Err == nil {
			if s, ok := sp.Provider.(collect.HostSampler); ok {
				add(s, hs.loaders)
			}
		}
	}
	if len(todo) == 0 {
		return hs
	}
	// The run's processes of this machine, for a host sharing its kernel.
	local := collect.LocalHost()
	foreign := []providers.Process{{PID: os.Getpid(), Name: collect.LoaderName, Role: collect.RoleLoader, Host: local}}
	for _, p := range tr.serviceProcs(ctx, nil) {
		if p.Host == "" {
			p.Host = local
			foreign = append(foreign, p)
		}
	}
	runID := tr.r.w.Manifest().RunID
	// At once on every host: each takes its quiet check before it answers.
	runs := make([]collect.HostRun, len(todo))
	var wg sync.WaitGroup
	for i, t := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := t.s.SampleHost(ctx, t.host, cfg, runID, foreign)
			if err != nil {
				tr.r.rep.Logf("trial %s: %s: not sampled: %v", tr.trial.ID, t.host, err)
				return
			}
			runs[i] = r
		}()
	}
	wg.Wait()
	for _, r := range runs {
		if r != nil {
			hs.runs = append(hs.runs, r)
		}
	}
	return hs
}

// stop ends the host samplers and returns their results.
func (hs *hostSampling) stop(ctx context.Context, logf func(string, ...any)) []*collect.HostResult {
	var out []*collect.HostResult
	for _, r := range hs.runs {
		res, err := r.Stop(ctx)
		if err != nil {
			logf("%v", err)
			continue
		}
		out = append(out, res)
	}
	return out
}

// explainHosts judges a load sampled on several machines: each by the
// verdict rules on its own budget, the step's verdict naming the limit
// (collect.JudgeHosts). step already holds this machine's budget and
// verdict (explainStep); a busy start on another host flags the step as
// one here does.
func explainHosts(step *results.StepRecord, local *collect.Explanation, hosts []*collect.HostResult, hs *hostSampling, info collect.LoadInfo) {
	if len(hosts) == 0 {
		return
	}
	var ev []collect.HostEvidence
	if local != nil && local.Budget != nil {
		ev = append(ev, collect.HostEvidence{Host: collect.LocalHost(), Local: true, Loader: !hs.hasLoaders(), Services: hs.localServices,
			Evidence: collect.Evidence{Budget: *local.Budget, Procs: local.Procs, Load: info, Quiet: local.Quiet}})
	}
	for _, h := range hosts {
		ex := h.Explanation
		if ex == nil || ex.Budget == nil {
			continue
		}
		// The loader's CPUs are this machine's; on a host, agents may use
		// all of its CPUs.
		hinfo := info
		hinfo.LoaderCPUs = 0
		ev = append(ev, collect.HostEvidence{Host: h.Host, Services: hs.services[h.Host], Loader: hs.loaders[h.Host],
			Evidence: collect.Evidence{Budget: *ex.Budget, Procs: ex.Procs, Load: hinfo, Quiet: ex.Quiet}})
		if q := ex.Quiet; q != nil && q.Busy && (step.Quiet == nil || !step.Quiet.Busy) {
			qq := *q
			qq.Top = strings.TrimSpace(fmt.Sprintf("on %s: %s", h.Host, q.Top))
			step.Quiet = &qq
		}
	}
	if len(ev) < 2 && (len(ev) == 0 || ev[0].Local) {
		return
	}
	v, limit, _ := collect.JudgeHosts(ev)
	step.Verdict, step.VerdictEvidence, step.VerdictHost = v.Kind, v.Evidence, limit
}

func (hs *hostSampling) hasLoaders() bool { return len(hs.loaders) > 0 }
