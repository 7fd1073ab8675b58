package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
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
// benchflow only with its pid, and the report gives no Docker advice.
func TestLocalRunBesideNeighbours(t *testing.T) {
	dir := t.TempDir()
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
		dockertest.Images(t, "nginx")
		cport := dockertest.FreePort(t)
		out, err := exec.Command("docker", "run", "-d", "--rm", "--label", "dev.benchflow.test=neighbour",
			"-p", fmt.Sprintf("127.0.0.1:%d:80", cport), dockertest.Nginx, "nginx", "-g", "daemon off;").Output()
		if err != nil {
			t.Fatalf("starting the neighbour's container: %v", err)
		}
		container = strings.TrimSpace(string(out))
		t.Cleanup(func() { exec.Command("docker", "rm", "-f", container).Run() })
		curl := fmt.Sprintf("http://127.0.0.1:%d/", cport)
		waitHTTP(curl)
		cl := start(bin, "load", "-c", "2", "-t", "1", "-d", "120s", curl)
		neighbours[cl.Process.Pid] = "benchflow"
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
	// Another's benchflow is named by its pid wherever it is listed.
	bare := regexp.MustCompile(`(^|[ ,:])benchflow [0-9]`)
	for what, text := range map[string]string{"verdict_evidence": row.VerdictEvidence, "quiet_top": row.QuietTop} {
		if bare.MatchString(text) {
			t.Errorf("%s names a benchflow without its pid: %q", what, text)
		}
	}
	// No Docker advice for a run that deploys no container.
	out, err := exec.Command(bin, "report", filepath.Join(dir, "results", "latest")).CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	for _, w := range []string{"userland proxy", "fuse-overlayfs", "docker-proxy"} {
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
