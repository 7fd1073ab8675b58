package nomad

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers/nomad/consul"
)

// With service_provider "nomad" the job's service registers in Nomad's own
// service discovery (GET /v1/service/:name), Nomad's clients run its
// checks, and the deployment (health_check = "checks") turns healthy once
// they pass. This file waits for those registrations and explains failing
// checks; nothing here talks to Consul.

// waitRegistered waits, with blocking queries, until Nomad lists want
// registrations of the service that carry the trial's tag and belong to
// the job, and returns them as instances sorted by address. Registrations
// of an earlier trial (same name, another tag) do not count.
func (d *Deployment) waitRegistered(ctx context.Context, tag string, want int) ([]consul.Instance, error) {
	var index uint64
	var seen []*napi.ServiceRegistration
	timedOut := func() error {
		return fmt.Errorf("waiting for %d registrations of service %q tagged %s in Nomad (seen: %s): %w; "+
			"Nomad registers a service of service_provider = \"nomad\" once its allocation runs: `nomad service info %s` shows what it holds",
			want, d.service, tag, describeRegistrations(seen, d.jobID, tag), ctx.Err(), d.service)
	}
	for {
		regs, meta, err := d.getRegistrations(ctx, index)
		if err != nil {
			if ctx.Err() != nil {
				return nil, timedOut()
			}
			return nil, err
		}
		seen = regs
		var mine []*napi.ServiceRegistration
		for _, r := range regs {
			if r.JobID == d.jobID && slices.Contains(r.Tags, tag) {
				mine = append(mine, r)
			}
		}
		if len(mine) >= want {
			d.logf("nomad: %d registrations of service %s", len(mine), d.service)
			return registrationInstances(mine), nil
		}
		index = nextIndex(index, meta)
		if err := d.p.pace(ctx, index); err != nil || ctx.Err() != nil {
			return nil, timedOut()
		}
	}
}

// getRegistrations reads the service's registrations, blocking while the
// index is current. A service Nomad does not know is no registration.
func (d *Deployment) getRegistrations(ctx context.Context, index uint64) ([]*napi.ServiceRegistration, uint64, error) {
	regs, meta, err := d.nomad.Services().Get(d.service, (&napi.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second}).WithContext(ctx))
	switch {
	case err == nil && meta != nil:
		return regs, meta.LastIndex, nil
	case err == nil || isNotFound(err):
		return regs, 0, nil
	default:
		return nil, 0, fmt.Errorf("reading the registrations of service %q from Nomad at %s: %w", d.service, d.p.s.Address, err)
	}
}

// waitUnregistered waits, with blocking queries, until Nomad lists no
// registration of the service, and returns how many remain when ctx ends
// first (-1 when Nomad never answered).
func (d *Deployment) waitUnregistered(ctx context.Context) (int, error) {
	var index uint64
	left := -1
	for {
		regs, last, err := d.getRegistrations(ctx, index)
		if err != nil && ctx.Err() == nil {
			return left, err
		}
		if err == nil {
			left = len(regs)
			if left == 0 {
				return 0, nil
			}
			index = nextIndex(index, last)
			err = d.p.pace(ctx, index)
		}
		if err != nil || ctx.Err() != nil {
			return left, fmt.Errorf("waiting for service %q to leave Nomad (%d registrations left): %w", d.service, left, ctx.Err())
		}
	}
}

// registrationInstances turns registrations into the instances the
// gateway code takes (the same shape Consul's passing instances have).
func registrationInstances(regs []*napi.ServiceRegistration) []consul.Instance {
	out := make([]consul.Instance, 0, len(regs))
	for _, r := range regs {
		out = append(out, consul.Instance{ID: r.ID, Node: r.NodeID, Host: r.Address, Port: r.Port})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr() < out[j].Addr() })
	return out
}

// describeRegistrations summarises what Nomad listed under the service
// name: this trial's registrations by address and allocation, and how many
// belong to another trial or job.
func describeRegistrations(regs []*napi.ServiceRegistration, jobID, tag string) string {
	if len(regs) == 0 {
		return "no registration"
	}
	var mine []string
	other := 0
	for _, r := range regs {
		if r.JobID == jobID && slices.Contains(r.Tags, tag) {
			mine = append(mine, fmt.Sprintf("%s:%d of allocation %s", r.Address, r.Port, short(r.AllocID)))
		} else {
			other++
		}
	}
	sort.Strings(mine)
	parts := []string{fmt.Sprintf("%d of this trial", len(mine))}
	if len(mine) > 0 {
		parts[0] += " (" + strings.Join(mine, ", ") + ")"
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d of another trial or job", other))
	}
	return strings.Join(parts, ", ")
}

// failingChecks explains, with service_provider "nomad", why the
// deployment is not healthy: the checks Nomad's clients report for the
// job's running allocations (GET /v1/client/allocation/:id/checks) that do
// not pass, as "; check "benchflow-http" of allocation 1a2b3c4d: failure
// (HTTP 500: task is unhealthy)". It returns "" with Consul, when every
// check passes, or when the provisioning was cancelled.
func (d *Deployment) failingChecks(ctx context.Context) string {
	if d.p.s.useConsul() || errors.Is(ctx.Err(), context.Canceled) {
		return ""
	}
	// ctx may have reached ready_timeout: the explanation gets its own
	// short deadline.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	stubs, _, err := d.nomad.Jobs().Allocations(d.jobID, false, (&napi.QueryOptions{}).WithContext(cctx))
	if err != nil {
		return ""
	}
	var out []string
	for _, a := range stubs {
		if a.DesiredStatus != "run" || a.ClientStatus != napi.AllocClientStatusRunning {
			continue
		}
		checks, err := d.nomad.Allocations().Checks(a.ID, (&napi.QueryOptions{}).WithContext(cctx))
		if err != nil {
			out = append(out, fmt.Sprintf("the checks of allocation %s could not be read: %v", short(a.ID), err))
			continue
		}
		for _, c := range checks {
			switch c.Status {
			case "success":
			case "pending", "":
				out = append(out, fmt.Sprintf("check %q of allocation %s has not run yet", c.Check, short(a.ID)))
			default:
				why := firstLine(c.Output)
				if c.StatusCode != 0 {
					why = fmt.Sprintf("HTTP %d: %s", c.StatusCode, why)
				}
				out = append(out, fmt.Sprintf("check %q of allocation %s: %s (%s)", c.Check, short(a.ID), c.Status, why))
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	sort.Strings(out)
	return "; " + strings.Join(out, "; ")
}

// firstLine is the first non-empty line of s, at most 200 bytes.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return "no output"
}
