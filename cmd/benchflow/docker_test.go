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
