package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers/docker/dockertest"
)

// TestDockerExplains runs a container trial whose nginx serves a file from
// the container's root filesystem (the image's default configuration, no
// open_file_cache): the manifest names the engine's storage driver, the
// trial has a CPU budget and a verdict, the service's rows name their
// container, and on a fuse-overlayfs engine fuse-overlayfs (which then
// serves every open) is in processes.parquet as infrastructure.
func TestDockerExplains(t *testing.T) {
	cli := dockertest.Client(t) // skips without an engine
	dockertest.Images(t, "nginx")
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := `
pipeline "docker-explains" {}
provider "docker" "nat" { pull = "never" }
service "nginx" {
  provider = "nat"
  image    = "benchflow/nginx:local"
  port "http" { container = 80 }
  health { http = "/" }
}
step "load" "wrk" {
  target      = "${service.nginx.url}/"
  connections = 8
  threads     = 2
  duration    = "3s"
  requests    = 200000
}
step "collect" "cpu" {
  during    = step.load.wrk
  threshold = 0.5
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "apply", file, "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	run, err := results.ReadRun(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	dockertest.NoLeftovers(t, cli, run.Manifest.RunID)
	driver, _ := run.Manifest.Environment["docker_storage_driver"].(string)
	if driver == "" {
		env, _ := json.Marshal(run.Manifest.Environment)
		t.Fatalf("manifest environment has no docker_storage_driver: %s", env)
	}
	var row *results.TrialRow
	for i := range run.Trials {
		if run.Trials[i].Step == "wrk" {
			row = &run.Trials[i]
		}
	}
	if row == nil || row.Status != results.StatusOK || row.CPUTotalPct <= 0 || row.Verdict == "" {
		t.Fatalf("trials row %+v", row)
	}
	var containerID string
	for _, s := range run.Manifest.Trials[0].Services {
		containerID = s.Attrs["container_id"]
	}
	var nginxIn, fuse bool
	for _, p := range run.Processes {
		if p.Process == "nginx" && p.Role == "service" && strings.HasPrefix(p.Container, "docker:") &&
			(containerID == "" || strings.HasPrefix(containerID, strings.TrimPrefix(p.Container, "docker:"))) {
			nginxIn = true
		}
		if p.Process == "fuse-overlayfs" {
			if p.Role != "infra" {
				t.Errorf("fuse-overlayfs row with role %q", p.Role)
			}
			fuse = true
		}
	}
	if !nginxIn {
		t.Errorf("no nginx row in container %q", containerID)
	}
	if driver == "fuse-overlayfs" && !fuse {
		t.Error("the storage driver is fuse-overlayfs but processes.parquet has no fuse-overlayfs row")
	}
	t.Logf("storage driver %s; verdict %s (%s); budget service %.0f%% infra %.0f%% loader %.0f%% idle %.0f%% of %.0f%%",
		driver, row.Verdict, row.VerdictEvidence, row.CPUServicePct, row.CPUInfraPct, row.CPULoaderPct, row.CPUIdlePct, row.CPUTotalPct)
}
