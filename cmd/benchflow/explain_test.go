package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers/docker/dockertest"
)

// applyExplained writes a pipeline to file, applies it with the real
// binary and returns the run and the trials row of its "wrk" step.
func applyExplained(t *testing.T, file, src string) (*results.Run, *results.TrialRow) {
	t.Helper()
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(filepath.Dir(file), "results")
	if b, err := exec.Command(bin, "apply", file, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	run, err := results.ReadRun(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range run.Trials {
		if run.Trials[i].Step == "wrk" && !run.Trials[i].Discarded {
			return run, &run.Trials[i]
		}
	}
	return run, nil
}

// TestDockerExplains runs a container trial whose nginx serves a file from
// the container's root filesystem (the image's default configuration, no
// open_file_cache): the manifest names the engine's storage driver, the
// trial has a CPU budget and a verdict, the container's processes (those
// whose cgroup is the service's container, as processes.parquet says) are
// the service's and the service's are the container's, and on a
// fuse-overlayfs engine fuse-overlayfs (which then serves every open) is
// in processes.parquet as infrastructure.
//
// The container's processes are told by their container, not by their
// name: another nginx on the machine (not the test's) is another process
// of the same name, rightly counted as other.
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
	// The names of the processes on the machine before and after the
	// run: none of them is the trial's container's (it exists only
	// during the run).
	outside := procNames()
	run, row := applyExplained(t, file, src)
	maps.Copy(outside, procNames())
	dockertest.NoLeftovers(t, cli, run.Manifest.RunID)
	driver, _ := run.Manifest.Environment["docker_storage_driver"].(string)
	if driver == "" {
		env, _ := json.Marshal(run.Manifest.Environment)
		t.Fatalf("manifest environment has no docker_storage_driver: %s", env)
	}
	if row == nil || row.Status != results.StatusOK || row.CPUTotalPct <= 0 || row.Verdict == "" {
		t.Fatalf("trials row %+v", row)
	}
	var containerID string
	for _, s := range run.Manifest.Trials[0].Services {
		containerID = s.Attrs["container_id"]
	}
	if len(containerID) < 12 {
		t.Fatalf("the service's container_id attribute is %q, want the container's id", containerID)
	}
	container := "docker:" + containerID[:12]
	inside := map[string]bool{} // the names of the container's processes
	var fuse bool
	for _, p := range run.Processes {
		if p.TrialID != row.TrialID {
			continue // a busy attempt re-run ran its own container
		}
		switch {
		case p.Container == container:
			inside[p.Process] = true
			if p.Role != "service" {
				t.Errorf("a process of the service's container counted as %q, not as the service: %+v", p.Role, p)
			}
		case p.Role == "service":
			t.Errorf("a process outside the service's container %s counted as the service: %+v", container, p)
		default:
			outside[p.Process] = true
		}
		if p.Process == "fuse-overlayfs" {
			if p.Role != "infra" {
				t.Errorf("fuse-overlayfs row with role %q", p.Role)
			}
			fuse = true
		}
	}
	if !inside["nginx"] {
		t.Errorf("no nginx row in container %s (its rows name %v)", container, slices.Sorted(maps.Keys(inside)))
	}
	// The quiet check before the load never counts the trial's own
	// container (its nginx just served the health checks). It names what
	// it counted by process name only: a name that a process outside the
	// container also bears (seen before, during or after the run) tells
	// nothing, and is not checked.
	for name := range inside {
		if outside[name] {
			t.Logf("not checking the quiet check for %q: a process outside the container bears that name too", name)
			continue
		}
		if strings.Contains(row.QuietTop, name) {
			t.Errorf("quiet check counted the container's %s as outside the run: %.1f%% (%s)", name, row.QuietPct, row.QuietTop)
		}
	}
	if driver == "fuse-overlayfs" && !fuse {
		t.Error("the storage driver is fuse-overlayfs but processes.parquet has no fuse-overlayfs row")
	}
	t.Logf("storage driver %s; verdict %s (%s); budget service %.0f%% infra %.0f%% loader %.0f%% idle %.0f%% of %.0f%%",
		driver, row.Verdict, row.VerdictEvidence, row.CPUServicePct, row.CPUInfraPct, row.CPULoaderPct, row.CPUIdlePct, row.CPUTotalPct)
}

// procNames is the set of the names (comm) of the processes running now.
func procNames() map[string]bool {
	names := map[string]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil {
			names[strings.TrimSpace(string(b))] = true
		}
	}
	return names
}

// TestBurnerAccounted runs a real nginx (local provider) under load while
// a CPU burner that the pipeline does not name runs next to it: the burner
// is in processes.parquet with role other, its CPU is in the trial's
// budget (cpu_other_pct), which adds up to cpu_total_pct, and the quiet
// check before the load saw CPU outside the run.
func TestBurnerAccounted(t *testing.T) {
	nginx := "/usr/sbin/nginx"
	if _, err := os.Stat(nginx); err != nil {
		t.Skip("needs Debian's nginx (/usr/sbin/nginx)")
	}
	burner := exec.Command("sh", "-c", "while :; do :; done")
	if err := burner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { burner.Process.Kill(); burner.Wait() })
	bpid := burner.Process.Pid

	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := `
pipeline "burner" {}
provider "local" "host" {}
service "nginx" {
  provider = "host"
  command  = ["` + nginx + `", "-p", self.dir, "-c", "${self.dir}/nginx.conf", "-g", "daemon off;"]
  file "nginx.conf" {
    content = <<-EOT
      worker_processes 1;
      pid ${self.dir}/nginx.pid;
      error_log stderr warn;
      events { worker_connections 256; }
      http {
        access_log off;
        client_body_temp_path ${self.dir}/body;
        proxy_temp_path ${self.dir}/proxy;
        fastcgi_temp_path ${self.dir}/fastcgi;
        uwsgi_temp_path ${self.dir}/uwsgi;
        scgi_temp_path ${self.dir}/scgi;
        server {
          listen 127.0.0.1:${self.port.http};
          location / { return 200 "hello\n"; }
        }
      }
    EOT
  }
  port "http" {}
  health { http = "/" }
}
step "load" "wrk" {
  target      = "${service.nginx.url}/"
  connections = 8
  threads     = 1
  duration    = "3s"
  requests    = 1000000
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
	// The burner's mean over the load, as the rows give it (pct × interval).
	ts := map[float64]bool{}
	var burnSum float64
	rows := 0
	for _, p := range run.Processes {
		ts[p.TS] = true
		if int(p.PID) == bpid {
			rows++
			burnSum += p.CPUPct
			if p.Role != "other" || p.Process != "sh" {
				t.Errorf("burner row %+v, want process sh with role other", p)
			}
		}
	}
	if rows == 0 || burnSum <= 0 {
		t.Fatalf("burner pid %d not in processes.parquet (%d rows of %d processes rows)", bpid, rows, len(run.Processes))
	}
	// A row's cpu_pct is over the interval ending at t_s (the first
	// starts at 0): weighted by the intervals, the burner's mean over the
	// load is its CPU time over the load, part of what "other" got.
	times := make([]float64, 0, len(ts))
	for v := range ts {
		times = append(times, v)
	}
	sort.Float64s(times)
	dt := map[float64]float64{}
	prev := 0.0
	for _, v := range times {
		dt[v], prev = v-prev, v
	}
	burnMean := 0.0
	for _, p := range run.Processes {
		if int(p.PID) == bpid {
			burnMean += p.CPUPct * dt[p.TS] / prev
		}
	}
	if row.CPUOtherPct+1e-6 < burnMean {
		t.Errorf("cpu_other_pct %.3f < the burner's mean %.3f", row.CPUOtherPct, burnMean)
	}
	sum := row.CPULoaderPct + row.CPUServicePct + row.CPUInfraPct + row.CPUKernelPct + row.CPUOtherPct +
		row.CPUIdlePct + row.CPUStealPct + row.CPUUnattributedPct
	if d := sum - row.CPUTotalPct; d > 1e-6 || d < -1e-6 {
		t.Errorf("budget parts add up to %.3f, cpu_total_pct %.3f", sum, row.CPUTotalPct)
	}
	if row.CPUServicePct <= 0 || row.CPULoaderPct <= 0 {
		t.Errorf("service %.1f, loader %.1f", row.CPUServicePct, row.CPULoaderPct)
	}
	if row.QuietWindowS <= 0 || row.QuietPct <= 0 || row.Verdict == "" {
		t.Errorf("quiet check %.2f s %.1f%% (%s), verdict %q", row.QuietWindowS, row.QuietPct, row.QuietTop, row.Verdict)
	}
	t.Logf("burner %.1f%% (%d rows); budget other %.1f%% of %.0f%%; quiet %.1f%% (%s) busy=%v; verdict %s (%s)",
		burnMean, rows, row.CPUOtherPct, row.CPUTotalPct, row.QuietPct, row.QuietTop, row.BusyStart, row.Verdict, row.VerdictEvidence)
}
