package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers/docker/dockertest"
)

// TestDockerInterrupt sends SIGINT to apply while a Docker trial is under
// load and then finds no container, network or volume of the run.
func TestDockerInterrupt(t *testing.T) {
	cli := dockertest.Client(t) // skips without an engine
	dockertest.Images(t, "nginx")
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := `
pipeline "docker-sigint" {}
provider "docker" "nat" { pull = "never" }
service "nginx" {
  provider = "nat"
  image    = "benchflow/nginx:local"
  port "http" { container = 80 }
  health { http = "/" }
}
step "load" "long" {
  target      = "${service.nginx.url}/"
  connections = 4
  threads     = 1
  duration    = "60s"
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	cmd := exec.Command(bin, "apply", file, "--out", out, "--verbose")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	loading := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "load.long started") {
				once = true
				close(loading)
			}
		}
	}()
	select {
	case <-loading:
	case <-time.After(90 * time.Second):
		t.Fatal("the load never started")
	}
	time.Sleep(time.Second)
	m := readManifest(t, filepath.Join(out, "latest"))
	ctx := context.Background()
	if left, _ := dockertest.Leftovers(ctx, cli, m.RunID); len(left) == 0 {
		t.Fatal("no container of the run found during the load; the test would prove nothing")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !errorsAs(werr, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130", werr)
	}
	dockertest.NoLeftovers(t, cli, m.RunID)
	m = readManifest(t, filepath.Join(out, "latest"))
	if m.Status != "interrupted" || m.Trials[0].Status != "interrupted" {
		t.Errorf("manifest: run %s, trial %s; want interrupted", m.Status, m.Trials[0].Status)
	}
}

// TestReproduceDockerGranted: a docker bundle reproduces in the sandbox
// with --allow docker as it runs unconfined: the container mounts the
// service's rendered file from a host path (not the sandbox's private
// /tmp, which the Docker engine cannot see) and serves it.
func TestReproduceDockerGranted(t *testing.T) {
	dockertest.Client(t) // skips without an engine
	dockertest.Images(t, "nginx")
	b := publishStudy(t, `
pipeline "docker-granted" {}
provider "docker" "nat" { pull = "never" }
service "nginx" {
  provider = "nat"
  image    = "benchflow/nginx:local"
  file "index.html" {
    content = "granted\n"
    mount   = "/usr/share/nginx/html/index.html"
  }
  port "http" { container = 80 }
  health { http = "/" }
}
step "check" "file" {
  url           = "${service.nginx.url}/"
  body_contains = "granted"
}
step "load" "main" {
  target      = "${service.nginx.url}/"
  connections = 1
  threads     = 1
  requests    = 50
}
`)
	work := t.TempDir()
	out, err := runHome(t, work, t.TempDir(), "reproduce", b, "--allow", "docker", "--yes", "--out", "again", "-q")
	if err != nil {
		t.Fatalf("reproduce --allow docker: %v\n%s", err, out)
	}
	m := readManifest(t, filepath.Join(work, "again", "latest"))
	if m.Status != "ok" {
		t.Errorf("run status %q, want ok:\n%s", m.Status, out)
	}
	if got, want := m.Environment["sandbox"], "bubblewrap; grants: docker; network: host"; got != want {
		t.Errorf("environment.sandbox = %v, want %q", got, want)
	}
	if _, ok := m.Environment["docker_storage_driver"]; !ok {
		t.Errorf("with the docker grant the run records no docker_storage_driver: %v", m.Environment)
	}
	if left, _ := os.ReadDir(filepath.Join(work, "again")); len(left) != 2 {
		t.Errorf("again/ holds %d entries, want the run and latest (the services' folder removed)", len(left))
	}
}
