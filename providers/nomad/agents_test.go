package nomad

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	napi "github.com/hashicorp/nomad/api"

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
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
	defer target.Close()
	token, _ := agent.NewToken()
	g, err := p.LaunchAgents(context.Background(), &providers.AgentRequest{
		RunID: testRunID, TrialID: "t0001", Step: "wrk", Count: 2, Binary: bin, Idle: "20s", LogDir: logs, Logf: t.Logf,
		Token: token, Targets: []string{target.URL + "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The token and targets are in the job's variable, read by a
	// template: the job itself holds neither, and its check is TCP.
	jobID := "benchflow-agent-wrk-" + strings.ToLower(testRunID)
	if v, ok := st.Nomad.Variable("", "nomad/jobs/"+jobID); !ok || v.Items["token"] != token || v.Items["targets"] != target.URL+"/" {
		t.Errorf("variable nomad/jobs/%s: %+v, %v", jobID, v, ok)
	}
	if job, ok := st.Nomad.Job("", jobID); ok {
		spec, _ := json.Marshal(job)
		if strings.Contains(string(spec), token) || strings.Contains(string(spec), target.URL) {
			t.Errorf("the job holds the token or the target: %s", spec)
		}
		tk := job.TaskGroups[0].Tasks[0]
		if len(tk.Templates) != 1 || tk.Templates[0].Envvars == nil || !*tk.Templates[0].Envvars ||
			!strings.Contains(*tk.Templates[0].EmbeddedTmpl, `nomadVar "nomad/jobs/`+jobID+`"`) {
			t.Errorf("task templates %+v: want one env template reading the job's variable", tk.Templates)
		}
		if cs := job.TaskGroups[0].Services[0].Checks; len(cs) != 1 || cs[0].Type != "tcp" {
			t.Errorf("checks %+v, want one tcp check", cs)
		}
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
	// The client is this machine: the agents' processes are the
	// loader's, for collect steps.
	if pr, ok := g.(providers.ProcessReporter); !ok {
		t.Error("the agents' group reports no processes")
	} else if ps, err := pr.Processes(context.Background()); err != nil || len(ps) != 2 ||
		ps[0].Role != "loader" || ps[1].Role != "loader" || ps[0].Name != filepath.Base(bin) || ps[0].PID == ps[1].PID {
		t.Errorf("agents' processes %+v, %v: want the two agents, role loader", ps, err)
	}
	out, err := agent.Run(context.Background(), agent.Config{Agents: g.URLs(), Logf: t.Logf, Token: token,
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
	if _, ok := st.Nomad.Variable("", "nomad/jobs/"+jobID); ok {
		t.Error("the agents' variable is still there after teardown")
	}
	// The logs are named like every provider's agent logs,
	// agent-<step>-<n> with n from 1 (providers.AgentName), and nothing
	// else is in the folder.
	entries, err := os.ReadDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{
		"agent-wrk-1.events.log", "agent-wrk-1.stderr.log", "agent-wrk-1.stdout.log",
		"agent-wrk-2.events.log", "agent-wrk-2.stderr.log", "agent-wrk-2.stdout.log",
	}
	if !slices.Equal(names, want) {
		t.Errorf("agent logs %q, want %q", names, want)
	}
	// Agent n's log holds the address of the n-th URL (allocation index
	// n-1).
	for i, u := range g.URLs() {
		f := filepath.Join(logs, providers.AgentName("wrk", i)+".stdout.log")
		b, _ := os.ReadFile(f)
		if want := "agent listening on " + strings.TrimPrefix(u, "http://"); !strings.Contains(string(b), want) {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	// The agents outlived the controller's stop (--linger) and ended when
	// the job was stopped: a task ending on its own fails its allocation.
	lingered := 0
	for i := range 2 {
		b, _ := os.ReadFile(filepath.Join(logs, providers.AgentName("wrk", i)+".stderr.log"))
		if strings.Contains(string(b), "waiting to be stopped (--linger)") && strings.Contains(string(b), "exiting: interrupted") {
			lingered++
		}
	}
	if lingered != 2 {
		t.Errorf("%d agents lingered after the controller's stop and ended on the job's stop, want 2", lingered)
	}
}

// TestLaunchAgentsRefusesNoTokenOrTarget: an agent whose token is empty
// exits 1 at start ("no token"), as does one without a target ("no
// target"), so a request without a token (or with blanks only) or without
// targets is refused before the provider sends Nomad anything: no
// variable, no job.
func TestLaunchAgentsRefusesNoTokenOrTarget(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "unexpected request "+r.Method+" "+r.URL.Path, http.StatusTeapot)
	}))
	defer srv.Close()
	p := newProvider(t, &Config{Address: srv.URL, ConsulAddress: srv.URL, Driver: "raw_exec", ReadyTimeout: "5s"})
	for _, token := range []string{"", " \t\n"} {
		_, err := p.LaunchAgents(context.Background(), &providers.AgentRequest{
			RunID: testRunID, TrialID: "t0001", Step: "wrk", Count: 2, Binary: "/usr/local/bin/benchflow",
			LogDir: t.TempDir(), Logf: t.Logf, Token: token, Targets: []string{"http://127.0.0.1:1/"},
		})
		if err == nil || !strings.Contains(err.Error(), "no token") || !strings.Contains(err.Error(), providers.AgentTokenEnv) {
			t.Errorf("token %q: error %v, want one saying there is no token", token, err)
		}
	}
	// Nor without a target: the agents exit 1 with "no target".
	for _, targets := range [][]string{nil, {" "}} {
		token, _ := agent.NewToken()
		_, err := p.LaunchAgents(context.Background(), &providers.AgentRequest{
			RunID: testRunID, TrialID: "t0001", Step: "wrk", Count: 2, Binary: "/usr/local/bin/benchflow",
			LogDir: t.TempDir(), Logf: t.Logf, Token: token, Targets: targets,
		})
		if err == nil || !strings.Contains(err.Error(), "no target") || !strings.Contains(err.Error(), providers.AgentTargetsEnv) {
			t.Errorf("targets %q: error %v, want one saying there is no target", targets, err)
		}
	}
	if n := calls.Load(); n > 0 {
		t.Errorf("%d requests reached Nomad or Consul, want none", n)
	}
}

// TestGCAgentVariableWithoutJob: a benchflow killed after LaunchAgents
// wrote the agents' variable and before it registered their job leaves the
// variable alone (no job points to it). The kill is a proxy in front of
// the fake that refuses the job's registration and the variable's delete,
// so the real LaunchAgents writes the variable and leaves it. gc finds it
// by benchflow's agent prefix: a dead run's goes, a live run's stays (and
// is reported), and a variable under the prefix that benchflow did not
// label, or outside it, is never touched; gc --run removes the live run's.
func TestGCAgentVariableWithoutJob(t *testing.T) {
	st := newStack(t)
	target, _ := url.Parse(st.Nomad.URL())
	rp := httputil.NewSingleHostReverseProxy(target)
	killed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path == "/v1/jobs" && r.Method != http.MethodGet) || (strings.HasPrefix(r.URL.Path, "/v1/var/") && r.Method == http.MethodDelete) {
			http.Error(w, "the benchflow process was killed", http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer killed.Close()
	launch := func(runID string) string {
		t.Helper()
		p := newProvider(t, &Config{Address: killed.URL, ConsulAddress: st.Consul.URL(), Driver: "raw_exec", ReadyTimeout: "5s"})
		_, err := p.LaunchAgents(context.Background(), &providers.AgentRequest{
			RunID: runID, TrialID: "t0001", Step: "wrk", Count: 2, Binary: "/usr/local/bin/benchflow",
			LogDir: t.TempDir(), Logf: t.Logf, Token: "secret", Targets: []string{"http://127.0.0.1:1/"},
		})
		if err == nil {
			t.Fatal("LaunchAgents succeeded through a Nomad that refuses jobs")
		}
		path := "nomad/jobs/benchflow-agent-wrk-" + strings.ToLower(runID)
		if _, ok := st.Nomad.Variable("", path); !ok {
			t.Fatalf("no variable %s after the kill: %v", path, err)
		}
		return path
	}
	dead := deadOwner(t)
	addOwnerLabels = func(m map[string]string) { maps.Copy(m, dead) }
	deadVar := launch(testRunID)
	addOwnerLabels = providers.AddOwnerLabels
	liveRun := "20261130T050000Z-live"
	liveVar := launch(liveRun)
	// Not benchflow's: one under the prefix without the labels, one
	// elsewhere with them.
	nc, err := newProvider(t, &Config{Address: st.Nomad.URL()}).nomadClient()
	if err != nil {
		t.Fatal(err)
	}
	foreign := map[string]napi.VariableItems{
		"nomad/jobs/benchflow-agent-by-hand": {"token": "x"},
		"nomad/jobs/other":                   maps.Collect(maps.All(dead)),
	}
	foreign["nomad/jobs/other"][providers.LabelManaged] = "true"
	for path, items := range foreign {
		if _, _, err := nc.Variables().Create(&napi.Variable{Path: path, Items: items}, nil); err != nil {
			t.Fatal(err)
		}
	}

	cfg := &Config{Address: st.Nomad.URL(), ConsulAddress: st.Consul.URL()}
	var kept []string
	removed, err := GC(context.Background(), &providers.GCRequest{Configs: []any{cfg}, Logf: func(f string, a ...any) { kept = append(kept, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"nomad variable " + deadVar + " (run " + testRunID + ", no job)"}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	if _, ok := st.Nomad.Variable("", deadVar); ok {
		t.Errorf("gc left the dead run's variable %s", deadVar)
	}
	if _, ok := st.Nomad.Variable("", liveVar); !ok {
		t.Errorf("gc removed the live run's variable %s", liveVar)
	}
	if len(kept) != 2 || !strings.Contains(kept[0], "kept nomad variable nomad/jobs/benchflow-agent-by-hand") ||
		!strings.Contains(kept[1], "kept nomad variable "+liveVar) || !strings.Contains(kept[1], "is still running") {
		t.Errorf("kept = %q", kept)
	}
	// With the live run's id, its variable goes; nothing else does.
	removed, err = GC(context.Background(), &providers.GCRequest{RunID: liveRun, Configs: []any{cfg}})
	if err != nil || len(removed) != 1 || !strings.HasPrefix(removed[0], "nomad variable "+liveVar) {
		t.Errorf("GC(--run %s) = %q, %v; want its variable removed", liveRun, removed, err)
	}
	for path := range foreign {
		if _, ok := st.Nomad.Variable("", path); !ok {
			t.Errorf("gc removed %s, which is not an agents' variable of benchflow", path)
		}
	}
}
