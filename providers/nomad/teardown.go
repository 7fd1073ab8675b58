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

	"github.com/benchflow/benchflow/providers/nomad/apisix"
	"github.com/benchflow/benchflow/providers/nomad/consul"
)

// Bounds of the teardown waits.
const (
	// stopTimeout bounds the wait for every allocation of the job to be
	// terminal after the deregistration (Nomad's kill_timeout is 5s by
	// default; a client that is down never reports).
	stopTimeout = 40 * time.Second
	// drainTimeout bounds the wait for Consul, or Nomad's service
	// registrations, to forget the service's instances (Nomad removes
	// them before it kills the tasks).
	drainTimeout = 15 * time.Second
	// inUseTimeout bounds the retries of an upstream DELETE that APISIX
	// refuses because its route cache still holds the deleted route.
	inUseTimeout = 5 * time.Second
	// forcedTimeout bounds the deletions of a forced teardown (its
	// context already ended: a second Ctrl-C), which waits for nothing.
	forcedTimeout = 10 * time.Second
)

// Teardown deletes the route and the upstream, purges the job, waits
// (bounded) until every allocation of the job is terminal, copies their
// logs to the trial's logs folder and waits (bounded) until Consul (or,
// with service_provider "nomad", Nomad) lists no instance of the service, so the next trial starts on a quiet machine
// with no stale instances. Every step runs even when an earlier one
// failed; the errors are joined. What is already gone is not an error,
// and Teardown may be called twice.
//
// When ctx has already ended (the engine's forced exit), the route, the
// upstream and the job are still deleted, within forcedTimeout, but
// nothing is waited for.
func (d *Deployment) Teardown(ctx context.Context) error {
	var errs []error
	// dctx carries the deletions: even a forced teardown must not leave
	// the job registered.
	dctx := ctx
	forced := ctx.Err() != nil
	if forced {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), forcedTimeout)
		defer cancel()
	}
	if d.admin != nil {
		if d.route {
			if err := d.admin.Delete(dctx, apisix.KindRoutes, d.objectID); err != nil && !errors.Is(err, apisix.ErrNotFound) {
				errs = append(errs, err)
			}
		}
		if d.upstream {
			var err error
			if forced {
				err = d.admin.DeleteForce(dctx, apisix.KindUpstreams, d.objectID)
			} else {
				err = d.deleteUpstream(ctx)
			}
			if err != nil && !errors.Is(err, apisix.ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	nomadUp := !forced
	if d.registered {
		if _, _, err := d.nomad.Jobs().Deregister(d.jobID, true, (&napi.WriteOptions{}).WithContext(dctx)); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("deregistering job %q: %w", d.jobID, err))
			nomadUp = nomadUp && isHTTPError(err)
		} else {
			d.logf("nomad: job %s deregistered and purged", d.jobID)
		}
		if nomadUp {
			allocs, err := d.waitStopped(ctx)
			if err != nil {
				errs = append(errs, err)
			}
			d.saveLogs(ctx, allocs)
		}
	}
	// The next trial registers the same service name: wait until Nomad
	// has removed this one's instances from Consul (or, with
	// service_provider "nomad", from its own registrations), so neither
	// the next waits nor APISIX discovery see stale nodes.
	switch {
	case !d.registered || forced:
	case d.consul != nil:
		wctx, cancel := context.WithTimeout(ctx, drainTimeout)
		n, err := consul.WaitGone(wctx, d.consul, d.service, 5*time.Second)
		cancel()
		if err != nil {
			if n >= 0 {
				d.logf("consul: %d instances of %s still registered %s after teardown: %v", n, d.service, drainTimeout, err)
			} else {
				d.logf("consul: could not check that %s left Consul: %v", d.service, err)
			}
		}
	case nomadUp:
		wctx, cancel := context.WithTimeout(ctx, drainTimeout)
		n, err := d.waitUnregistered(wctx)
		cancel()
		if err != nil {
			if n >= 0 {
				d.logf("nomad: %d registrations of service %s still listed %s after teardown: %v", n, d.service, drainTimeout, err)
			} else {
				d.logf("nomad: could not check that service %s left Nomad: %v", d.service, err)
			}
		}
	}
	// Each error names its object (job, route, upstream); the engine adds
	// "tearing down service <name>".
	return errors.Join(errs...)
}

// deleteUpstream deletes the upstream. APISIX checks "is a route still
// using it" against its worker's route cache, which learns of the route
// DELETE a moment later through its config watch: a DELETE right after
// the route's answers 400 "can not delete this upstream, route [x] is
// still using it now". So retry (bounded by inUseTimeout); if the cache
// still lags, delete with ?force=true, which skips that check — the route
// itself is gone.
func (d *Deployment) deleteUpstream(ctx context.Context) error {
	wait := d.p.pollInterval
	deadline := time.Now().Add(inUseTimeout)
	for {
		err := d.admin.Delete(ctx, apisix.KindUpstreams, d.objectID)
		if !errors.Is(err, apisix.ErrInUse) || !d.route {
			return err
		}
		if time.Now().After(deadline) {
			d.logf("apisix: upstream %s still reported in use after %s: deleting it with force=true", d.objectID, inUseTimeout)
			return d.admin.DeleteForce(ctx, apisix.KindUpstreams, d.objectID)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// waitStopped waits until every allocation of this trial is terminal
// (complete, failed or lost), with blocking queries, for at most
// stopTimeout, and returns them. After a purge Nomad lists under the job's
// id every allocation it has not garbage-collected yet, those of the
// earlier trials that registered the same job id included (terminal
// since their own teardown): only those created after this trial's
// registration (ours) are waited for, counted and returned.
func (d *Deployment) waitStopped(ctx context.Context) ([]*napi.AllocationListStub, error) {
	wctx, cancel := context.WithTimeout(ctx, d.p.stopTimeout)
	defer cancel()
	var index uint64
	var live []string
	for {
		stubs, meta, err := d.nomad.Jobs().Allocations(d.jobID, true, (&napi.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second}).WithContext(wctx))
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				sort.Strings(live)
				return stubs, fmt.Errorf("allocations of job %q still not stopped after %s: %s; the next trial would share the machine with them (check the Nomad client: nomad alloc status <id>)",
					d.jobID, d.p.stopTimeout, strings.Join(live, ", "))
			}
			return nil, fmt.Errorf("waiting for the allocations of job %q to stop: %w", d.jobID, err)
		}
		stubs = slices.DeleteFunc(stubs, func(a *napi.AllocationListStub) bool { return !d.ours(a) })
		live = live[:0]
		for _, a := range stubs {
			switch a.ClientStatus {
			case napi.AllocClientStatusComplete, napi.AllocClientStatusFailed, napi.AllocClientStatusLost:
			default:
				live = append(live, fmt.Sprintf("%s desired=%s client=%s", short(a.ID), a.DesiredStatus, a.ClientStatus))
			}
		}
		if len(live) == 0 {
			switch len(stubs) {
			case 0:
			case 1:
				d.logf("nomad: 1 allocation of %s stopped", d.jobID)
			default:
				d.logf("nomad: %d allocations of %s stopped", len(stubs), d.jobID)
			}
			return stubs, nil
		}
		index = nextIndex(index, meta.LastIndex)
		if err := d.p.pace(wctx, index); err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for the allocations of job %q to stop: %w", d.jobID, err)
		}
	}
}

// ours reports whether an allocation of the job belongs to this trial:
// created after its registration. An earlier trial's allocations (same job
// id, purged at its teardown) were created before. Without a registration
// index (the registration never answered) every allocation counts.
func (d *Deployment) ours(a *napi.AllocationListStub) bool {
	return a.CreateIndex >= d.regIndex
}
