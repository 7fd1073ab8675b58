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
// dev.benchflow.managed=true (and dev.benchflow.run=runID when runID is not
// empty) from the engine the environment names. It returns one line per
// removed object, and an error wrapping providers.ErrUnavailable when no
// engine can be reached.
func GC(ctx context.Context, runID string) ([]string, error) {
	cli, err := newClient("")
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	return gc(ctx, cli, runID)
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

func gc(ctx context.Context, cli *client.Client, runID string) ([]string, error) {
	f := ManagedFilter(runID)
	var removed []string
	var errs []error
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", unavailable(err))
	}
	for _, c := range cs {
		name := strings.TrimPrefix(strings.Join(c.Names, ","), "/")
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
