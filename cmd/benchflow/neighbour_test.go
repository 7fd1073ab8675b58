package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers/docker/dockertest"
)

// TestLocalRunBesideNeighbours: a local-only run (benchflow serve under
// the local provider) on a machine where another "run" is busy — a
// second benchflow process loading another benchflow serve and, where a
// Docker engine answers, a container of Debian's nginx published through
// docker-proxy and loaded too — is charged for none of it: its
// infrastructure share is zero (no docker-proxy, dockerd or
// fuse-overlayfs of the neighbour's counts as its own), the neighbours'
// rows are other, the verdict and the quiet check name another's
// benchflow by program name only (no pid, no command line), and the report
// gives no Docker advice.
func TestLocalRunBesideNeighbours(t *testing.T) {
	dir := t.TempDir()
	start, waitHTTP := starter(t)
	// The neighbour: its server and its loader, bounded in time; neither
	// is a child of the run's benchflow.
	port := dockertest.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	srv := start(bin, "serve", "--addr", "127.0.0.1:"+strconv.Itoa(port))
	waitHTTP(url)
	loader := start(bin, "load", "-c", "2", "-t", "1", "-d", "120s", url)
	neighbours := map[int]string{srv.Process.Pid: "benchflow", loader.Process.Pid: "benchflow"}

	// A container of another run, loaded through its published port.
	container := ""
	if dockerAnswers() {
		var pid int
		container, _, pid = startNeighbourContainer(t, start, waitHTTP)
		neighbours[pid] = "benchflow"
	} else {
		t.Log("no Docker engine: the neighbour runs no container")
	}

	file := filepath.Join(dir, "p.hcl")
	src := `
pipeline "beside-neighbours" {}
provider "local" "host" {}
service "web" {
  provider = "host"
  command  = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health { http = "/" }
}
step "load" "wrk" {
  target      = "${service.web.url}/"
  connections = 2
  threads     = 1
  duration    = "3s"
  requests    = 200000
}
step "collect" "cpu" {
  during    = step.load.wrk
  threshold = 0
}
`
	run, row := applyExplained(t, file, src)
	if row == nil || row.CPUTotalPct <= 0 {
		t.Fatalf("no budget in the trials row: %+v", row)
	}
	t.Logf("budget: service %.1f%%, infra %.1f%%, loader %.1f%%, other %.1f%% of %.0f%%; verdict %s (%s); quiet %s",
		row.CPUServicePct, row.CPUInfraPct, row.CPULoaderPct, row.CPUOtherPct, row.CPUTotalPct, row.Verdict, row.VerdictEvidence, row.QuietTop)
	// A local-only run has no infrastructure: whatever the neighbours'
	// docker-proxy, dockerd or fuse-overlayfs used is theirs.
	if row.CPUInfraPct > 0.5 {
		var infra []string
		for _, p := range run.Processes {
			if p.Role == "infra" {
				infra = append(infra, fmt.Sprintf("%s pid %d %.1f%%", p.Process, p.PID, p.CPUPct))
			}
		}
		t.Errorf("cpu_infra_pct %.1f%% in a local-only run, want ~0; infra rows: %v", row.CPUInfraPct, infra)
	}
	seen := map[int]bool{}
	helpers := 0
	for _, p := range run.Processes {
		if _, ok := neighbours[int(p.PID)]; ok {
			seen[int(p.PID)] = true
			if p.Role != "other" {
				t.Errorf("the neighbour's %s pid %d has role %q, want other", p.Process, p.PID, p.Role)
			}
		}
		switch p.Process {
		case "docker-proxy", "dockerd", "containerd", "fuse-overlayfs", "containerd-shim":
			helpers++
			if p.Role != "other" {
				t.Errorf("%s pid %d has role %q in a run without containers, want other", p.Process, p.PID, p.Role)
			}
		}
		if p.Role == "service" && int(p.PID) == srv.Process.Pid {
			t.Errorf("the neighbour's server counted as the run's service")
		}
	}
	for pid := range neighbours {
		if !seen[pid] {
			t.Errorf("the neighbour's benchflow pid %d is not in processes.parquet (threshold 0)", pid)
		}
	}
	if container != "" && helpers == 0 {
		t.Errorf("no row of the neighbour container's docker-proxy, fuse-overlayfs or engine: the test proves nothing of them")
	}
	// Another's processes are named by program name and CPU share only:
	// never by pid or command line (theirs may hold a token).
	for what, text := range map[string]string{"verdict_evidence": row.VerdictEvidence, "quiet_top": row.QuietTop, "discarded_why": row.DiscardedWhy} {
		for _, leak := range []string{"(pid", "serve --addr", "load -c", "127.0.0.1:"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s holds another's pid or command line (%q): %q", what, leak, text)
			}
		}
	}
	// No Docker advice for a run that deploys no container (the
	// neighbours' processes may be named, by program name, where the machine was
	// busy: that is evidence, not advice).
	out, err := exec.Command(bin, "report", filepath.Join(dir, "results", "latest")).CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, w := range []string{"userland proxy", "serve from a volume", "Docker's storage driver"} {
		if strings.Contains(string(out), w) {
			t.Errorf("the report of a local-only run mentions %q:\n%s", w, out)
		}
	}
}

// dockerAnswers reports whether a Docker engine and its CLI are here.
func dockerAnswers() bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").Run() == nil
}

// starter returns a function that starts a command for the test's
// duration and one that waits until a URL answers.
func starter(t *testing.T) (func(string, ...string) *exec.Cmd, func(string)) {
	start := func(name string, args ...string) *exec.Cmd {
		t.Helper()
		c := exec.Command(name, args...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	waitHTTP := func(url string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get(url)
			if err == nil {
				resp.Body.Close()
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never answered: %v", url, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return start, waitHTTP
}

// startNeighbourContainer runs Debian's nginx in a container that no run
// of the test's benchflow created, published on a loopback port and
// loaded by a benchflow process for the test's duration: it returns the
// container's id, its host port and the loader's pid.
func startNeighbourContainer(t *testing.T, start func(string, ...string) *exec.Cmd, waitHTTP func(string)) (string, int, int) {
	t.Helper()
	dockertest.Images(t, "nginx")
	cport := dockertest.FreePort(t)
	out, err := exec.Command("docker", "run", "-d", "--rm", "--label", "dev.benchflow.test=neighbour",
		"-p", fmt.Sprintf("127.0.0.1:%d:80", cport), dockertest.Nginx, "nginx", "-g", "daemon off;").Output()
	if err != nil {
		t.Fatalf("starting the neighbour's container: %v", err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
	url := fmt.Sprintf("http://127.0.0.1:%d/", cport)
	waitHTTP(url)
	cl := start(bin, "load", "-c", "2", "-t", "1", "-d", "120s", url)
	return id, cport, cl.Process.Pid
}

// TestDockerRunBesideNeighbour: a docker trial beside a loaded container
// of another run: each engine helper is charged by relation — the
// trial's docker-proxy (its published port) and fuse-overlayfs (its root
// filesystem) are its infrastructure, the neighbour's, of the same names,
// are other.
func TestDockerRunBesideNeighbour(t *testing.T) {
	dockertest.Client(t) // skips without an engine
	start, waitHTTP := starter(t)
	id, cport, lpid := startNeighbourContainer(t, start, waitHTTP)
	upper, err := exec.Command("docker", "inspect", "--format", "{{.GraphDriver.Data.UpperDir}}", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	theirFS := strings.TrimSpace(string(upper))
	theirs := map[int]string{lpid: "their loader"}
	for _, pid := range servePIDs(fmt.Sprintf("-host-port %d ", cport)) {
		theirs[pid] = "their docker-proxy"
	}
	if theirFS != "" && theirFS != "<no value>" {
		for _, pid := range servePIDs(theirFS) {
			theirs[pid] = "their fuse-overlayfs"
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := `
pipeline "docker-beside-neighbour" {}
provider "docker" "nat" { pull = "never" }
service "nginx" {
  provider = "nat"
  image    = "benchflow/nginx:local"
  port "http" { container = 80 }
  health { http = "/" }
}
step "load" "wrk" {
  target      = "${service.nginx.url}/"
  connections = 2
  threads     = 1
  duration    = "3s"
  requests    = 200000
}
step "collect" "cpu" {
  during    = step.load.wrk
  threshold = 0
}
`
	run, row := applyExplained(t, file, src)
	if row == nil || row.CPUTotalPct <= 0 {
		t.Fatalf("no budget in the trials row: %+v", row)
	}
	t.Logf("budget: service %.1f%%, infra %.1f%%, loader %.1f%%, other %.1f%% of %.0f%%; verdict %s (%s)",
		row.CPUServicePct, row.CPUInfraPct, row.CPULoaderPct, row.CPUOtherPct, row.CPUTotalPct, row.Verdict, row.VerdictEvidence)
	ourProxy := false
	for _, p := range run.Processes {
		if what, ok := theirs[int(p.PID)]; ok {
			if p.Role != "other" {
				t.Errorf("%s (pid %d, %s) has role %q, want other", what, p.PID, p.Process, p.Role)
			}
			continue
		}
		if p.Process == "docker-proxy" && p.Role == "infra" && p.CPUPct > 0 {
			ourProxy = true
		}
	}
	if len(theirs) < 2 {
		t.Errorf("found no docker-proxy of the neighbour's port %d: the test proves nothing of it", cport)
	}
	if !ourProxy {
		t.Errorf("no docker-proxy row with role infra and CPU: the trial's own proxy was not charged to it")
	}
	if row.CPUInfraPct <= 0 {
		t.Errorf("cpu_infra_pct %.1f%% for a trial behind docker-proxy", row.CPUInfraPct)
	}
}
