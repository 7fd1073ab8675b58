package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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
//
// Without a runID, objects whose owner (labels dev.benchflow.host and
// dev.benchflow.pid) is a process still running on this machine are kept:
// they belong to a run in progress, not to a crashed one.
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
	return gcFiltered(ctx, cli, ManagedFilter(runID), runID == "")
}

// gcFiltered removes what f selects; with keepLive, objects whose owner
// process still runs are kept.
func gcFiltered(ctx context.Context, cli *client.Client, f filters.Args, keepLive bool) ([]string, error) {
	var removed []string
	var errs []error
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", unavailable(err))
	}
	for _, c := range cs {
		name := strings.TrimPrefix(strings.Join(c.Names, ","), "/")
		if keepLive && ownerAlive(c.Labels) {
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
		if keepLive && ownerAlive(n.Labels) {
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
		if keepLive && ownerAlive(v.Labels) {
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

// Labels naming the process that created an object, so gc without a run id
// can tell a run in progress from a crashed one.
const (
	LabelHost = "dev.benchflow.host" // hostname of the benchflow process
	LabelPID  = "dev.benchflow.pid"  // its pid
)

// ownerLabels adds LabelHost and LabelPID for this process.
func ownerLabels(labels map[string]string) {
	if h, err := os.Hostname(); err == nil {
		labels[LabelHost] = h
	}
	labels[LabelPID] = strconv.Itoa(os.Getpid())
}

// ownerAlive reports whether the labels name a process that still runs on
// this machine (and is not this one's zombie child or a kernel thread).
func ownerAlive(labels map[string]string) bool {
	h, err := os.Hostname()
	if err != nil || labels[LabelHost] == "" || labels[LabelHost] != h {
		return false
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	if err != nil || pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// State is the field after the parenthesised command name.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return false
}
