package nomad_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/engine/results/resultstest"
	"github.com/benchflow/benchflow/providers"
)

// TestAccNomadAgents runs pipelines/nomad-agents.hcl against a real Nomad
// (NOMAD_ADDR; Consul only if CONSUL_HTTP_ADDR is set, else the agents
// job uses Nomad's own service discovery): two agents as allocations of
// one raw_exec job load `benchflow serve` on this machine; the merged
// requests equal the agents' sum, the merged percentiles equal those of
// the union of the agents' buckets in latency.parquet (DuckDB), both
// allocations' logs are kept, and no job or live allocation of the run is
// left in Nomad.
func TestAccNomadAgents(t *testing.T) {
	if os.Getenv("BENCHFLOW_ACC") != "1" {
		t.Skip("acceptance test: set BENCHFLOW_ACC=1 and NOMAD_ADDR (a Nomad agent with raw_exec enabled)")
	}
	if os.Getenv("NOMAD_ADDR") == "" {
		t.Skip("acceptance test: NOMAD_ADDR is not set")
	}
	nc := nomadAPI(t)
	if _, err := nc.Agent().Self(); err != nil {
		t.Fatalf("Nomad at %s does not answer: %v", os.Getenv("NOMAD_ADDR"), err)
	}
	bin := benchflowBin(t)
	out, err := os.MkdirTemp("", "benchflow-acc-nomad-agents-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("results kept in %s", out)
			return
		}
		os.RemoveAll(out)
	})
	sp := "nomad"
	if os.Getenv("CONSUL_HTTP_ADDR") != "" {
		sp = "consul"
	}
	args := []string{"apply", "../../pipelines/nomad-agents.hcl", "--out", out, "--var", "duration=3s", "--var", "service_provider=" + sp}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	t.Logf("benchflow %v:\n%s", args, buf.String())
	if err != nil {
		t.Fatalf("benchflow apply: %v", err)
	}
	runDir, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatalf("no results/latest: %v", err)
	}
	m := resultstest.CheckAgentMerge(t, runDir, "wrk", 2)
	for _, a := range m.Agents {
		if a.Requests == 0 || a.PID == 0 {
			t.Errorf("agent %d: %d requests, pid %d", a.Agent, a.Requests, a.PID)
		}
		t.Logf("agent %d: host %s pid %d, %d requests, clock offset %.6fs ± %.6fs, late %.6fs", a.Agent, a.Host, a.PID, a.Requests, a.ClockOffsetS, a.BoundS, a.LateS)
	}
	// The allocations' stdout (with each agent's "listening on" line) was
	// kept as agent-wrk-1.stdout.log and agent-wrk-2.stdout.log, the names
	// every provider gives agent logs.
	logs, _ := filepath.Glob(filepath.Join(runDir, "logs", "*", "agent-wrk*"))
	found := 0
	for _, f := range logs {
		switch filepath.Base(f) {
		case "agent-wrk-1.stdout.log", "agent-wrk-2.stdout.log":
			if b, _ := os.ReadFile(f); strings.Contains(string(b), "listening on") {
				found++
			}
		case "agent-wrk-1.stderr.log", "agent-wrk-2.stderr.log", "agent-wrk-1.events.log", "agent-wrk-2.events.log":
		default:
			t.Errorf("agent log %s: not named agent-wrk-<n>.{stdout,stderr,events}.log", f)
		}
	}
	if found != 2 {
		t.Errorf("%d kept agent logs agent-wrk-<n>.stdout.log with their address (%v), want 2", found, logs)
	}
	// The agents' allocations ended "complete" (stopped with the job), not
	// "failed": a Nomad service task that ends on its own fails, so the
	// agents outlive the controller's stop (--linger).
	jobID := "benchflow-agent-wrk-" + strings.ToLower(filepath.Base(runDir))
	allocs, _, err := nc.Allocations().List(&napi.QueryOptions{Prefix: ""})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, a := range allocs {
		if a.JobID != jobID {
			continue
		}
		seen++
		if a.ClientStatus != "complete" {
			t.Errorf("agent allocation %s ended %q (desired %s), want complete", a.ID[:8], a.ClientStatus, a.DesiredStatus)
		}
	}
	t.Logf("%d allocations of %s, all complete unless reported above", seen, jobID)
	// Nothing of the run is left: no job with its run meta still alive.
	jobs, _, err := nc.Jobs().List(&napi.QueryOptions{Prefix: "benchflow-agent-wrk-"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		full, _, err := nc.Jobs().Info(j.ID, nil)
		if err != nil {
			continue // purged meanwhile
		}
		if full.Meta[providers.LabelRun] == filepath.Base(runDir) {
			t.Errorf("job %s of the run is left (status %s)", j.ID, j.Status)
		}
		if live := liveAllocs(t, j.ID); len(live) > 0 && full.Meta[providers.LabelRun] == filepath.Base(runDir) {
			t.Errorf("job %s has live allocations: %v", j.ID, live)
		}
	}
	if sp == "nomad" {
		svcs, _, err := nc.Services().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range svcs {
			for _, s := range ns.Services {
				if strings.HasPrefix(s.ServiceName, "benchflow-agent-wrk-") && strings.Contains(s.ServiceName, strings.ToLower(filepath.Base(runDir))) {
					t.Errorf("Nomad still lists service %s of the run", s.ServiceName)
				}
			}
		}
	}
}
