package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/agent"
	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/providers"
)

// TestLaunchAgentsJob runs two real agents (bin/benchflow) as one raw_exec
// job on the Nomad fake, which runs raw_exec tasks for real: the
// controller reaches them at their allocations' addresses, their merged
// load counts exactly what they counted, and teardown leaves nothing
// registered and keeps their logs.
func TestLaunchAgentsJob(t *testing.T) {
	bin := os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		t.Skip("needs the benchflow binary: set BENCHFLOW_BIN (make test does)")
	}
	st := newStack(t)
	st.Nomad.RunRawExec = true
	// The services' driver is docker; agents run with raw_exec anyway.
	p := newProvider(t, &Config{Address: st.Nomad.URL(), ConsulAddress: st.Consul.URL(), Driver: "docker", ReadyTimeout: "30s"})
	logs := t.TempDir()
	g, err := p.LaunchAgents(context.Background(), &providers.AgentRequest{
		RunID: testRunID, TrialID: "t0001", Step: "wrk", Count: 2, Binary: bin, Idle: "20s", LogDir: logs, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	job, ok := st.Nomad.Job("", "benchflow-agent-wrk-"+strings.ToLower(testRunID))
	if !ok {
		t.Errorf("no job benchflow-agent-wrk-<run id>; jobs %v", st.Nomad.Jobs())
	} else {
		tg := job.TaskGroups[0]
		if *tg.Count != 2 || tg.Tasks[0].Driver != "raw_exec" || job.Meta[providers.LabelManaged] != "true" || job.Meta[providers.LabelService] != "agent-wrk" {
			t.Errorf("job: count %d, driver %s, meta %v", *tg.Count, tg.Tasks[0].Driver, job.Meta)
		}
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
	defer target.Close()
	out, err := agent.Run(context.Background(), agent.Config{Agents: g.URLs(), Logf: t.Logf,
		Options: load.Options{Targets: []load.Target{{URL: target.URL + "/"}}, Connections: 4, Threads: 2, Requests: 1000}})
	if err != nil {
		g.Teardown(context.Background())
		t.Fatal(err)
	}
	var sum int64
	for _, m := range out.Members {
		sum += m.Result.Requests
	}
	if out.Merged.Requests != 1000 || sum != 1000 {
		t.Errorf("merged %d requests, agents %d; want 1000", out.Merged.Requests, sum)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, st)
	found := 0
	files, _ := filepath.Glob(filepath.Join(logs, "agent-wrk.*stdout*"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "agent listening on") {
			found++
		}
	}
	if found != 2 {
		t.Errorf("%d agent logs with their address in %s (%v), want 2", found, logs, files)
	}
	// The agents outlived the controller's stop (--linger) and ended when
	// the job was stopped: a task ending on its own fails its allocation.
	lingered := 0
	errs, _ := filepath.Glob(filepath.Join(logs, "agent-wrk.*stderr*"))
	for _, f := range errs {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "waiting to be stopped (--linger)") && strings.Contains(string(b), "exiting: interrupted") {
			lingered++
		}
	}
	if lingered != 2 {
		t.Errorf("%d agents lingered after the controller's stop and ended on the job's stop (%v), want 2", lingered, errs)
	}
}
