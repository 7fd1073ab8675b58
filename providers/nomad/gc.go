package nomad

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/nomad/apisix"
)

// addOwnerLabels puts the owner labels on what the provider creates (a
// variable so tests can create what a crashed run leaves).
var addOwnerLabels = providers.AddOwnerLabels

// GC removes what crashed runs left behind: Nomad jobs whose meta carries
// LabelManaged (with their own variables), agents' variables whose job was
// never registered and whose items carry LabelManaged, and APISIX routes
// and upstreams labelled so, whose owner
// (the benchflow process named by the owner labels every job and object
// carries) is gone — or, with req.RunID, every object of that run. A job of
// a run still in progress is kept and reported through req.Keep. Jobs are
// purged and their allocations waited for (bounded), as in Teardown.
//
// It reaches the Nomad agents and APISIX admin APIs of the pipeline's
// provider blocks (req.Configs), else those of the NOMAD_*, APISIX_*
// variables.
func GC(ctx context.Context, req *providers.GCRequest) ([]string, error) {
	configs := providers.ConfigsOf[Config](req.Configs)
	if len(configs) == 0 {
		configs = []*Config{{}}
	}
	var removed []string
	var errs []error
	unavailable := 0
	seenNomad, seenAdmin := map[string]bool{}, map[string]bool{}
	for _, c := range configs {
		// Resolve as for a gateway, so the APISIX addresses and key are
		// read too; gc needs no gateway URL.
		cc := *c
		cc.Gateway = true
		s, err := resolve(&cc)
		if err != nil {
			errs = append(errs, fmt.Errorf("collecting nomad leftovers: %w", err))
			continue
		}
		p := &Provider{s: s, pollInterval: defaultPoll, stopTimeout: stopTimeout}
		if key := s.Address + "|" + s.Namespace + "|" + s.Region; !seenNomad[key] {
			seenNomad[key] = true
			r, err := p.gcJobs(ctx, req)
			removed = append(removed, r...)
			if errors.Is(err, providers.ErrUnavailable) {
				unavailable++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		if s.APISIXAdmin != "" && !seenAdmin[s.APISIXAdmin] {
			seenAdmin[s.APISIXAdmin] = true
			r, err := gcAPISIX(ctx, s, req)
			removed = append(removed, r...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// gcJobs purges the managed jobs gc may remove from one Nomad agent.
func (p *Provider) gcJobs(ctx context.Context, req *providers.GCRequest) ([]string, error) {
	nc, err := p.nomadClient()
	if err != nil {
		return nil, err
	}
	stubs, _, err := nc.Jobs().ListOptions(&napi.JobListOptions{Fields: &napi.JobListFields{Meta: true}}, (&napi.QueryOptions{}).WithContext(ctx))
	if err != nil {
		if isUnreachable(err) {
			return nil, fmt.Errorf("listing nomad jobs at %s: %w: %v", p.s.Address, providers.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("listing nomad jobs at %s: %w", p.s.Address, err)
	}
	sort.Slice(stubs, func(i, j int) bool { return stubs[i].ID < stubs[j].ID })
	var removed []string
	var errs []error
	jobs := map[string]bool{} // namespace/id of every job listed
	for _, j := range stubs {
		jobs[j.Namespace+"/"+j.ID] = true
	}
	for _, j := range stubs {
		if j.Meta[providers.LabelManaged] != "true" || (req.RunID != "" && j.Meta[providers.LabelRun] != req.RunID) {
			continue
		}
		what := fmt.Sprintf("nomad job %s (run %s)", j.ID, j.Meta[providers.LabelRun])
		if ok, why := providers.GCDecision(j.Meta, req.RunID); !ok {
			req.Keep(what, why)
			continue
		}
		if _, _, err := nc.Jobs().Deregister(j.ID, true, (&napi.WriteOptions{Namespace: j.Namespace}).WithContext(ctx)); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("deregistering job %q: %w", j.ID, err))
			continue
		}
		d := &Deployment{p: p, nomad: nc, jobID: j.ID, logf: func(string, ...any) {}}
		if _, err := d.waitStopped(ctx); err != nil {
			errs = append(errs, err)
		}
		removed = append(removed, what)
		// The job's own variable: an agents job's token (agents.go).
		path := varPrefix + j.ID
		wo := (&napi.WriteOptions{Namespace: j.Namespace}).WithContext(ctx)
		if v, _, err := nc.Variables().Peek(path, (&napi.QueryOptions{Namespace: j.Namespace}).WithContext(ctx)); err == nil && v != nil {
			if _, err := nc.Variables().Delete(path, wo); err != nil {
				errs = append(errs, fmt.Errorf("deleting variable %s: %w", path, err))
			} else {
				removed = append(removed, "nomad variable "+path)
			}
		}
	}
	r, err := p.gcAgentVars(ctx, nc, req, jobs)
	removed = append(removed, r...)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("collecting nomad leftovers at %s: %w", p.s.Address, err)
	}
	return removed, nil
}

// gcAgentVars deletes the agents' variables (agents.go) that no job owns:
// LaunchAgents writes one before it registers the job, so a benchflow
// killed in between leaves a variable that the job pass never sees. They
// are listed by benchflow's agent prefix; a variable whose job exists
// (jobs: namespace/id) is the job pass's business, whoever's the job is.
// The others are benchflow's only when their items carry LabelManaged,
// and get the jobs' rule through the owner items beside it: a run in
// progress (between writing the variable and registering its job) keeps
// its variable. A variable under the prefix without those items (written
// by hand, or by a benchflow that did not label them) is kept and
// reported: nothing tells whose it is.
func (p *Provider) gcAgentVars(ctx context.Context, nc *napi.Client, req *providers.GCRequest, jobs map[string]bool) ([]string, error) {
	metas, _, err := nc.Variables().PrefixList(agentVarPrefix, (&napi.QueryOptions{Namespace: p.s.Namespace}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing nomad variables %s*: %w", agentVarPrefix, err)
	}
	sort.Slice(metas, func(i, j int) bool {
		return metas[i].Namespace+"/"+metas[i].Path < metas[j].Namespace+"/"+metas[j].Path
	})
	var removed []string
	var errs []error
	for _, m := range metas {
		if !strings.HasPrefix(m.Path, agentVarPrefix) || jobs[m.Namespace+"/"+strings.TrimPrefix(m.Path, varPrefix)] {
			continue
		}
		v, _, err := nc.Variables().Peek(m.Path, (&napi.QueryOptions{Namespace: m.Namespace}).WithContext(ctx))
		if err != nil {
			errs = append(errs, fmt.Errorf("reading variable %s: %w", m.Path, err))
			continue
		}
		if v == nil {
			continue // deleted since the listing
		}
		what := "nomad variable " + m.Path
		if v.Items[providers.LabelManaged] != "true" {
			if req.RunID == "" {
				req.Keep(what, "it has no job and no "+providers.LabelManaged+" item: nothing tells it is benchflow's (delete it with `nomad var purge "+m.Path+"` if it is)")
			}
			continue
		}
		if req.RunID != "" && v.Items[providers.LabelRun] != req.RunID {
			continue
		}
		what += " (run " + v.Items[providers.LabelRun] + ", no job)"
		if ok, why := providers.GCDecision(v.Items, req.RunID); !ok {
			req.Keep(what, why)
			continue
		}
		if _, err := nc.Variables().Delete(m.Path, (&napi.WriteOptions{Namespace: m.Namespace}).WithContext(ctx)); err != nil {
			errs = append(errs, fmt.Errorf("deleting variable %s: %w", m.Path, err))
			continue
		}
		removed = append(removed, what)
	}
	return removed, errors.Join(errs...)
}

// gcAPISIX deletes the managed routes, then upstreams, gc may remove.
func gcAPISIX(ctx context.Context, s *settings, req *providers.GCRequest) ([]string, error) {
	ac, err := apisix.New(s.APISIXAdmin, s.adminKey, nil)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, kind := range []string{apisix.KindRoutes, apisix.KindUpstreams} {
		items, err := ac.List(ctx, kind)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, it := range items {
			labels := it.Labels()
			if labels[providers.LabelManaged] != "true" || (req.RunID != "" && labels[providers.LabelRun] != req.RunID) {
				continue
			}
			what := "apisix " + strings.TrimSuffix(kind, "s") + " " + it.ID()
			if ok, why := providers.GCDecision(labels, req.RunID); !ok {
				req.Keep(what, why)
				continue
			}
			err := ac.Delete(ctx, kind, it.ID())
			if errors.Is(err, apisix.ErrInUse) {
				// A route gc kept (or APISIX's lagging route cache)
				// still uses it: leave it for a later gc.
				req.Keep(what, err.Error())
				continue
			}
			if err != nil && !errors.Is(err, apisix.ErrNotFound) {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, what)
		}
	}
	return removed, errors.Join(errs...)
}

func isUnreachable(err error) bool {
	var ue *url.Error
	var oe *net.OpError
	return errors.As(err, &oe) || (errors.As(err, &ue) && !errors.Is(err, context.Canceled))
}
