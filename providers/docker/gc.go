package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/benchflow/benchflow/providers"
)

// GC removes every container, network and volume labelled
// dev.benchflow.managed=true (and dev.benchflow.run=req.RunID when that is
// not empty) from each engine the pipeline's docker providers use (their
// host attribute; the environment's engine without a pipeline). It returns
// one line per removed object, and an error wrapping
// providers.ErrUnavailable when no engine can be reached.
//
// Without a run id, objects whose owner (providers.LabelHost, LabelPID,
// LabelStart) is a process still running, or one on another host, are kept
// (providers.GCDecision): they belong to a run in progress, not to a
// crashed one.
func GC(ctx context.Context, req *providers.GCRequest) ([]string, error) {
	hosts := map[string]bool{}
	for _, cfg := range providers.ConfigsOf[Config](req.Configs) {
		hosts[cfg.Host] = true
	}
	if len(hosts) == 0 {
		hosts[""] = true
	}
	var removed []string
	var errs []error
	unreachable := 0
	for h := range hosts {
		cli, err := newClient(h)
		if err == nil {
			var r []string
			r, err = gc(ctx, cli, req)
			removed = append(removed, r...)
			cli.Close()
		}
		if errors.Is(err, providers.ErrUnavailable) {
			unreachable++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if unreachable < len(hosts) {
		// When some engine answered, an unreachable other one is reported
		// as an error rather than skipped.
		for i, err := range errs {
			errs[i] = errors.New(err.Error())
		}
	}
	return removed, errors.Join(errs...)
}

// ManagedFilter selects what benchflow labelled, for one run when runID is
// not empty.
func ManagedFilter(runID string) filters.Args {
	f := filters.NewArgs(filters.Arg("label", providers.LabelManaged+"=true"))
	if runID != "" {
		f.Add("label", providers.LabelRun+"="+runID)
	}
	return f
}

func gc(ctx context.Context, cli *client.Client, req *providers.GCRequest) ([]string, error) {
	return gcFiltered(ctx, cli, ManagedFilter(req.RunID), req)
}

// gcFiltered removes what f selects that providers.GCDecision lets go.
func gcFiltered(ctx context.Context, cli *client.Client, f filters.Args, req *providers.GCRequest) ([]string, error) {
	var removed []string
	var errs []error
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", unavailable(err))
	}
	for _, c := range cs {
		name := strings.TrimPrefix(strings.Join(c.Names, ","), "/")
		if ok, why := providers.GCDecision(c.Labels, req.RunID); !ok {
			req.Keep("docker container "+name, why)
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", name, err))
			continue
		}
		removed = append(removed, fmt.Sprintf("docker container %s (%.12s, run %s)", name, c.ID, c.Labels[providers.LabelRun]))
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("listing networks: %w", unavailable(err)))...)
	}
	for _, n := range ns {
		if ok, why := providers.GCDecision(n.Labels, req.RunID); !ok {
			req.Keep("docker network "+n.Name, why)
			continue
		}
		if err := cli.NetworkRemove(ctx, n.ID); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("removing network %s: %w", n.Name, err))
			continue
		}
		removed = append(removed, fmt.Sprintf("docker network %s (%.12s, run %s)", n.Name, n.ID, n.Labels[providers.LabelRun]))
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("listing volumes: %w", unavailable(err)))...)
	}
	for _, v := range vs.Volumes {
		if ok, why := providers.GCDecision(v.Labels, req.RunID); !ok {
			req.Keep("docker volume "+v.Name, why)
			continue
		}
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("removing volume %s: %w", v.Name, err))
			continue
		}
		removed = append(removed, fmt.Sprintf("docker volume %s (run %s)", v.Name, v.Labels[providers.LabelRun]))
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("collecting docker leftovers: %w", err)
	}
	return removed, nil
}

// Owner labels, kept under their old names for the docker package's
// callers.
const (
	LabelHost = providers.LabelHost
	LabelPID  = providers.LabelPID
)
