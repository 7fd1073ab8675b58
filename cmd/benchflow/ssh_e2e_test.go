package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers/ssh/sshtest"
)

// twoHosts is a pipeline with nginx on an ssh host and the load from this
// machine. The matrix values carry shell metacharacters into the command
// and the environment on the host.
const twoHosts = `
pipeline "two-hosts" {
  repetitions = 1
}
variable "address" { type = string }
variable "identity" { type = string }
variable "known_hosts" { type = string }
variable "duration" {
  type    = string
  default = "1s"
}
variable "requests" {
  type    = number
  default = 200000
}
variable "idle" {
  type    = string
  default = "60s"
}
matrix {
  tag = ["plain", "a'b; touch CANARY $(touch CANARY) ` + "`touch CANARY`" + `"]
}
provider "ssh" "server" {
  address       = var.address
  user          = "root"
  identity_file = var.identity
  known_hosts   = var.known_hosts
  idle_timeout  = var.idle
}
service "nginx" {
  provider = "server"
  command  = ["/usr/sbin/nginx", "-p", self.dir, "-c", "${self.dir}/nginx.conf", "-g", "daemon off;", "-e", "${self.dir}/error.log"]
  env      = { TAG = matrix.tag }
  # Runs on the host: sshd's SSH_CONNECTION names its address.
  version_command = ["/bin/sh", "-c", "echo on $SSH_CONNECTION"]
  file "nginx.conf" {
    content = <<-EOT
      worker_processes 1;
      pid ${self.dir}/nginx.pid;
      error_log ${self.dir}/error.log;
      events { worker_connections 256; }
      http {
        access_log off;
        client_body_temp_path ${self.dir}/body;
        proxy_temp_path ${self.dir}/proxy;
        fastcgi_temp_path ${self.dir}/fastcgi;
        uwsgi_temp_path ${self.dir}/uwsgi;
        scgi_temp_path ${self.dir}/scgi;
        server {
          listen ${var.address}:${self.port.http};
          root ${self.dir};
          location / { try_files /hello =404; }
        }
      }
    EOT
  }
  file "hello" {
    content = "hello\n"
  }
  port "http" {}
  health {
    http = "/"
  }
}
step "check" "hello" {
  url           = "${service.nginx.url}/"
  body_contains = "hello"
}
step "load" "main" {
  target      = "${service.nginx.url}/"
  connections = 4
  threads     = 1
  duration    = var.duration
  requests    = var.requests
}
# This machine's CPU and the host's, sampled there by the helper.
step "collect" "cpu" {
  during   = step.load.main
  loader   = true
  interval = "500ms"
}
`

// sshPipeline writes the pipeline for host h and returns its path and the
// canary file a shell would create.
func sshPipeline(t *testing.T, h *sshtest.Host, oneCell bool) (string, string) {
	t.Helper()
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary")
	p := filepath.Join(dir, "two-hosts.hcl")
	src := strings.ReplaceAll(twoHosts, "CANARY", canary)
	if oneCell {
		src = strings.Replace(src, `tag = ["plain", `, `tag = ["plain"] # `, 1)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sshtest.ForgetBinary(t, bin)
	return p, canary
}

func hostVars(h *sshtest.Host) []string {
	return []string{"--var", "address=" + h.Addr, "--var", "identity=" + h.IdentityFile, "--var", "known_hosts=" + h.KnownHosts}
}

// sshApply is `benchflow apply p --out OUT args…` with host h's
// variables and a state folder of its own (state, or a new one when ""),
// not started; OUT is a new folder.
func sshApply(t *testing.T, h *sshtest.Host, p, state string, args ...string) (cmd *exec.Cmd, out string) {
	t.Helper()
	if state == "" {
		state = t.TempDir()
	}
	out = t.TempDir()
	args = append(append([]string{"apply", p, "--out", out}, args...), hostVars(h)...)
	cmd = exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "BENCHFLOW_STATE_DIR="+state)
	return cmd, out
}

// startApply starts cmd with its output into buf; done receives its exit.
// If the test ends first, it is killed and waited for.
func startApply(t *testing.T, cmd *exec.Cmd) (buf *bytes.Buffer, done chan error) {
	t.Helper()
	buf = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	return buf, done
}

// waitComm waits up to 60 s for a process named comm on host h.
func waitComm(t *testing.T, h *sshtest.Host, comm string) bool {
	for range 600 {
		if hasComm(t, h, comm) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// runFoldersOf lists the run folders on the host (this machine's /tmp:
// the hosts share its files) that record run id.
func runFoldersOf(t *testing.T, runID string) []string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchflow-run-*"))
	var out []string
	for _, m := range ms {
		b, err := os.ReadFile(filepath.Join(m, ".benchflow-owner"))
		var rec map[string]string
		if err == nil && json.Unmarshal(b, &rec) == nil && rec["run"] == runID {
			out = append(out, m)
		}
	}
	return out
}

// TestSSHTwoHosts runs nginx on an SSH host (a network namespace with its
// own sshd) and loads it from this machine across the link: every trial ok,
// results written, the host recorded in the manifest, and nothing left on
// the host afterwards — no process, no folder — nor any shell run of a
// matrix value.
func TestSSHTwoHosts(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p, canary := sshPipeline(t, h, false)
	state := t.TempDir()
	cmd, out := sshApply(t, h, p, state)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	t.Logf("apply:\n%s", b)
	latest := filepath.Join(out, "latest")
	m := readManifest(t, latest)
	if m.Status != "ok" || len(m.Trials) != 2 {
		t.Fatalf("manifest status %q with %d trials, want ok with 2\n%s", m.Status, len(m.Trials), b)
	}
	db, _ := sql.Open("duckdb", "")
	defer db.Close()
	var rows, bad int
	var minReq int64
	q := fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE status <> 'ok'), min(requests) FROM read_parquet('%s') WHERE step = 'main'`, filepath.Join(latest, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&rows, &bad, &minReq); err != nil {
		t.Fatal(err)
	}
	if rows < 2 || bad != 0 || minReq <= 0 { // a busy machine reruns a trial: more rows
		t.Errorf("load rows: %d (%d not ok), min requests %d: want one or more per trial, every one ok with requests", rows, bad, minReq)
	}
	var versions string
	q = fmt.Sprintf(`SELECT any_value(service_versions) FROM read_parquet('%s')`, filepath.Join(latest, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&versions); err != nil || !strings.Contains(versions, " "+h.Addr+" 22") {
		t.Errorf("service_versions %q (%v): version_command did not run on the host", versions, err)
	}
	man, _ := os.ReadFile(filepath.Join(latest, "manifest.json"))
	// The path's two ends are the veth pair sshtest made: driver veth,
	// MTU 1500, no speed.
	for _, want := range []string{`"ssh_host": "root@` + h.Addr + `:22"`, `"host_kernel"`, `"url": "http://` + h.Addr + `:`, `"rtt_us"`,
		`"host_sysctl.net.core.somaxconn"`, `"host_nic_driver": "veth"`, `"host_nic_mtu": "1500"`, `"local_nic_driver": "veth"`} {
		if !bytes.Contains(man, []byte(want)) {
			t.Errorf("manifest.json lacks %s", want)
		}
	}
	h.WaitEmpty(t)
	if left := runFoldersOf(t, m.RunID); len(left) > 0 {
		t.Errorf("run folders left on the host: %v", left)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("a matrix value ran in a shell on the host")
	}
	// The host is recorded for gc, which finds nothing left.
	recs, _ := filepath.Glob(filepath.Join(state, "ssh-hosts", "*.json"))
	if len(recs) != 1 {
		t.Errorf("state folder records %d ssh hosts, want 1", len(recs))
	}
	gc := exec.Command(bin, "gc", "--provider", "ssh")
	gc.Env = cmd.Env
	if b, err := gc.CombinedOutput(); err != nil || !bytes.Contains(b, []byte("0 leftover(s) removed")) {
		t.Errorf("gc after a clean run: %v\n%s", err, b)
	}
	// A clean host needs no record any more.
	if recs, _ := filepath.Glob(filepath.Join(state, "ssh-hosts", "*.json")); len(recs) != 0 {
		t.Errorf("gc kept the record of a clean host: %v", recs)
	}
}

// TestSSHHostAccounting: a collect step samples the server host as it
// samples this machine. processes.parquet and system.parquet carry rows
// of both, told apart by host (the host's address; this machine's
// hostname), nginx's rows are the server host's, the loader's this
// machine's, and the verdict names the machines, the limit among them;
// nothing is left on the host.
func TestSSHHostAccounting(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p, _ := sshPipeline(t, h, true)
	out := t.TempDir()
	cmd := exec.Command(bin, append([]string{"apply", p, "--out", out, "--var", "duration=2s", "--var", "requests=5000000"}, hostVars(h)...)...)
	cmd.Env = append(os.Environ(), "BENCHFLOW_STATE_DIR="+t.TempDir())
	b, err := cmd.CombinedOutput()
	t.Logf("apply:\n%s", b)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	latest := filepath.Join(out, "latest")
	local, _ := os.Hostname()
	db, _ := sql.Open("duckdb", "")
	defer db.Close()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(fmt.Sprintf(q, args...)).Scan(&n); err != nil {
			t.Fatalf("%s: %v", fmt.Sprintf(q, args...), err)
		}
		return n
	}
	procs, system := filepath.Join(latest, "processes.parquet"), filepath.Join(latest, "system.parquet")
	if n := count(`SELECT count(*) FROM '%s' WHERE host = '%s' AND role = 'service' AND process = 'nginx'`, procs, h.Addr); n == 0 {
		t.Errorf("no nginx rows of the server host %s", h.Addr)
	}
	if n := count(`SELECT count(*) FROM '%s' WHERE host = '%s' AND role = 'loader'`, procs, local); n == 0 {
		t.Errorf("no loader rows of this machine (%s)", local)
	}
	if n := count(`SELECT count(*) FROM '%s' WHERE role = 'service' AND host <> '%s'`, procs, h.Addr); n != 0 {
		t.Errorf("%d service rows of another host than the server's", n)
	}
	if n := count(`SELECT count(*) FROM '%s' WHERE role = 'loader' AND host <> '%s'`, procs, local); n != 0 {
		t.Errorf("%d loader rows of another host than this machine", n)
	}
	if n := count(`SELECT count(DISTINCT host) FROM '%s' WHERE host IN ('%s', '%s')`, system, h.Addr, local); n != 2 {
		t.Errorf("system.parquet has rows of %d of the two hosts", n)
	}
	var verdict, evidence, limit string
	q := fmt.Sprintf(`SELECT verdict, verdict_evidence, verdict_host FROM '%s' WHERE step = 'main' LIMIT 1`, filepath.Join(latest, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&verdict, &evidence, &limit); err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict: %s (%s), limit %s", verdict, evidence, limit)
	if !strings.Contains(evidence, "server host "+h.Addr) || !strings.Contains(evidence, "client host (this machine)") {
		t.Errorf("verdict evidence %q does not name both machines", evidence)
	}
	if limit != h.Addr && limit != local {
		t.Errorf("verdict_host %q is neither machine", limit)
	}
	if verdict == "server-bound" && limit != h.Addr {
		t.Errorf("server-bound, naming %q rather than the server host", limit)
	}
	if verdict == "loader-bound" && limit != local {
		t.Errorf("loader-bound, naming %q rather than this machine", limit)
	}
	h.WaitEmpty(t)
}

// TestSSHLinkCut cuts the link to the host in the middle of a load: the
// trial fails with the reason, nothing is counted ok, and the helper on the
// host, hearing nothing from benchflow, stops nginx and removes the folder.
func TestSSHLinkCut(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p, _ := sshPipeline(t, h, true)
	cmd, out := sshApply(t, h, p, "", "--var", "duration=30s", "--var", "requests=50000000", "--var", "idle=15s")
	buf, done := startApply(t, cmd)
	// Wait for the load to reach nginx: its health check passed and the
	// load step began.
	if !waitComm(t, h, "nginx") {
		t.Fatalf("the load never started:\n%s", buf.String())
	}
	time.Sleep(4 * time.Second) // into the 30 s load
	h.LinkDown(t)
	up := false
	defer func() {
		if !up {
			h.LinkUp(t)
		}
	}()
	err := <-done
	t.Logf("apply: %v\n%s", err, buf.String())
	if err == nil {
		t.Error("apply succeeded across a cut link")
	}
	m := readManifest(t, filepath.Join(out, "latest"))
	if m.Status == "ok" || len(m.Trials) != 1 || m.Trials[0].Status == "ok" || !strings.Contains(m.Trials[0].Error, "lost the connection to the host") {
		t.Errorf("manifest: status %s, trials %+v: want a failed trial with its reason", m.Status, m.Trials)
	}
	db, _ := sql.Open("duckdb", "")
	defer db.Close()
	var ok int
	q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE status = 'ok') FROM read_parquet('%s')`, filepath.Join(out, "latest", "trials.parquet"))
	if err := db.QueryRow(q).Scan(&ok); err == nil && ok != 0 {
		t.Errorf("trials.parquet counts %d rows ok in a trial whose host was cut off", ok)
	}
	h.WaitGone(t, "sshd:")
	h.LinkUp(t)
	up = true
	h.WaitEmpty(t)
	if left := runFoldersOf(t, m.RunID); len(left) > 0 {
		t.Errorf("run folders left on the host: %v", left)
	}
}

// hasComm reports whether a process named comm runs on the host.
func hasComm(t *testing.T, h *sshtest.Host, comm string) bool {
	for _, p := range h.Pids(t) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if strings.TrimSpace(string(b)) == comm {
			return true
		}
	}
	return false
}

// TestSSHInterrupted stops apply in the middle of a load on an SSH host,
// with Ctrl-C (SIGINT: benchflow tears down) and with SIGKILL (benchflow
// cannot: its connection closes, and the helper on the host stops what it
// started): either way nothing is left on the host.
func TestSSHInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			h := sshtest.Start(t, 1)[0]
			p, _ := sshPipeline(t, h, true)
			cmd, out := sshApply(t, h, p, "", "--var", "duration=60s", "--var", "requests=50000000")
			buf, done := startApply(t, cmd)
			if !waitComm(t, h, "nginx") {
				t.Fatalf("nginx never started on the host:\n%s", buf.String())
			}
			time.Sleep(2 * time.Second) // into the load
			cmd.Process.Signal(sig)
			err := <-done
			t.Logf("apply: %v\n%s", err, buf.String())
			if err == nil {
				t.Error("an interrupted apply exited 0")
			}
			h.WaitEmpty(t)
			if ms, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchflow-run-*")); len(ms) > 0 {
				var runID string
				if m, err := os.ReadFile(filepath.Join(out, "latest", "manifest.json")); err == nil {
					var mm manifest
					json.Unmarshal(m, &mm)
					runID = mm.RunID
				}
				if left := runFoldersOf(t, runID); runID != "" && len(left) > 0 {
					t.Errorf("run folders left on the host: %v", left)
				}
			}
		})
	}
}

// sshAgents serves nginx on this machine, on the address of the link to
// the SSH host, and runs the load from two agents on that host.
const sshAgents = `
pipeline "ssh-agents" {
  repetitions = 1
}
variable "address" { type = string }
variable "gateway" { type = string }
variable "identity" { type = string }
variable "known_hosts" { type = string }
provider "local" "here" {}
provider "ssh" "clients" {
  addresses     = [var.address]
  user          = "root"
  identity_file = var.identity
  known_hosts   = var.known_hosts
}
service "nginx" {
  provider = "here"
  command  = ["/usr/sbin/nginx", "-p", self.dir, "-c", "${self.dir}/nginx.conf", "-g", "daemon off;", "-e", "stderr"]
  file "nginx.conf" {
    content = <<-EOT
      worker_processes 1;
      pid ${self.dir}/nginx.pid;
      error_log stderr;
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
          listen ${var.gateway}:${self.port.http};
          root ${self.dir};
          location / { try_files /hello =404; }
        }
      }
    EOT
  }
  file "hello" {
    content = "hello\n"
  }
  port "http" {}
  health {
    http = "/"
  }
}
step "load" "main" {
  target      = "http://${var.gateway}:${service.nginx.port}/"
  connections = 4
  duration    = "2s"
  requests    = 100000
  agents {
    provider = "clients"
    count    = 2
  }
}
step "collect" "cpu" {
  during   = step.load.main
  interval = "500ms"
}
`

// TestSSHAgents runs the load from agents on an SSH host: the copy of
// benchflow there serves as the agents, the results merge both, and
// nothing is left on the host.
func TestSSHAgents(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	sshtest.ForgetBinary(t, bin)
	dir := t.TempDir()
	p := filepath.Join(dir, "agents.hcl")
	os.WriteFile(p, []byte(sshAgents), 0o644)
	cmd, out := sshApply(t, h, p, "", "--var", "gateway="+h.Gateway)
	b, err := cmd.CombinedOutput()
	t.Logf("apply:\n%s", b)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	latest := filepath.Join(out, "latest")
	m := readManifest(t, latest)
	if m.Status != "ok" {
		t.Fatalf("manifest status %q, want ok", m.Status)
	}
	db, _ := sql.Open("duckdb", "")
	defer db.Close()
	var rows, bad int
	var minReq int64
	q := fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE status <> 'ok'), min(requests) FROM read_parquet('%s') WHERE step = 'main'`, filepath.Join(latest, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&rows, &bad, &minReq); err != nil {
		t.Fatal(err)
	}
	if rows < 1 || bad != 0 || minReq <= 0 {
		t.Errorf("load rows: %d (%d not ok), min requests %d", rows, bad, minReq)
	}
	logs, _ := filepath.Glob(filepath.Join(latest, "logs", "*", "agent-main-*.stderr.log"))
	if len(logs) < 2 {
		t.Errorf("the agents' output was not copied back: %v", logs)
	}
	// The collect step sampled the client host too: the agents are its
	// loader, nginx this machine's service.
	local, _ := os.Hostname()
	procs := filepath.Join(latest, "processes.parquet")
	var agentRows, nginxRows, misplaced int
	q = fmt.Sprintf(`SELECT count(*) FILTER (WHERE host = '%[2]s' AND role = 'loader' AND process = 'benchflow'),
		count(*) FILTER (WHERE host = '%[3]s' AND role = 'service' AND process = 'nginx'),
		count(*) FILTER (WHERE (role = 'service' AND host <> '%[3]s') OR (process = 'benchflow' AND role = 'loader' AND host <> '%[2]s'))
		FROM '%[1]s'`, procs, h.Addr, local)
	if err := db.QueryRow(q).Scan(&agentRows, &nginxRows, &misplaced); err != nil {
		t.Fatal(err)
	}
	if agentRows == 0 || nginxRows == 0 || misplaced != 0 {
		t.Errorf("processes.parquet: %d agent rows of the client host, %d nginx rows of this machine, %d rows under the wrong host", agentRows, nginxRows, misplaced)
	}
	var evidence string
	q = fmt.Sprintf(`SELECT verdict_evidence FROM '%s' WHERE step = 'main' LIMIT 1`, filepath.Join(latest, "trials.parquet"))
	if err := db.QueryRow(q).Scan(&evidence); err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict evidence: %s", evidence)
	if !strings.Contains(evidence, "client host "+h.Addr) || !strings.Contains(evidence, "server host (this machine)") {
		t.Errorf("verdict evidence %q does not name both machines", evidence)
	}
	h.WaitEmpty(t)
	if left := runFoldersOf(t, m.RunID); len(left) > 0 {
		t.Errorf("run folders left on the host: %v", left)
	}
}
