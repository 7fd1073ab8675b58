package docker

import (
	"context"
	"testing"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/docker/dockertest"
)

// benchDeployment provisions one nginx container for a benchmark.
func benchDeployment(b *testing.B) *Deployment {
	b.Helper()
	cli := dockertest.Client(b)
	dockertest.Images(b, "nginx")
	runID := dockertest.RunID(b)
	p, err := New(&providers.NewRequest{Name: "bench", Config: &Config{}})
	if err != nil {
		b.Fatal(err)
	}
	dep, err := p.Provision(context.Background(), &providers.ProvisionRequest{
		RunID: runID, TrialID: "b", Service: providers.ServiceSpec{
			Name: "nginx", Image: dockertest.Nginx,
			Ports: []providers.Port{{Name: "http", Container: 80, Host: dockertest.FreePort(b)}},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		dep.Teardown(context.Background())
		dockertest.NoLeftovers(b, cli, runID)
	})
	return dep.(*Deployment)
}

// What one collect sample costs: the cgroup read plus cached infra pids
// (what Processes does on a local engine) ...
func BenchmarkProcesses(b *testing.B) {
	d := benchDeployment(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Processes(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// ... against asking the engine (`docker top`, ps inside dockerd).
func BenchmarkProcessesTop(b *testing.B) {
	d := benchDeployment(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.topProcesses(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A full provision + teardown of one container on a published port.
func BenchmarkProvisionTeardown(b *testing.B) {
	cli := dockertest.Client(b)
	dockertest.Images(b, "nginx")
	runID := dockertest.RunID(b)
	p, err := New(&providers.NewRequest{Name: "bench", Config: &Config{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		dep, err := p.Provision(ctx, &providers.ProvisionRequest{
			RunID: runID, TrialID: "b", Service: providers.ServiceSpec{
				Name: "nginx", Image: dockertest.Nginx,
				Ports: []providers.Port{{Name: "http", Container: 80, Host: dockertest.FreePort(b)}},
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := dep.Teardown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	dockertest.NoLeftovers(b, cli, runID)
}
