package nomad_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	capi "github.com/hashicorp/consul/api"
	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/engine/agent"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/nomad"
)

// accEnv skips unless acceptance tests are enabled against a real Nomad +
// Consul (APISIX is optional: see withGateway).
func accEnv(t *testing.T) {
	t.Helper()
	if os.Getenv("BENCHFLOW_ACC") != "1" {
		t.Skip("acceptance test: set BENCHFLOW_ACC=1 with NOMAD_ADDR and CONSUL_HTTP_ADDR (and APISIX_ADMIN, APISIX_GATEWAY, APISIX_ADMIN_KEY for the gateway) pointing at a real stack")
	}
	for _, v := range []string{"NOMAD_ADDR", "CONSUL_HTTP_ADDR"} {
		if os.Getenv(v) == "" {
			t.Skipf("acceptance test: %s is not set", v)
		}
	}
}

// withGateway reports whether a real APISIX is configured (APISIX_ADMIN);
// tests run their direct part without it.
func withGateway(t *testing.T) bool {
	t.Helper()
	if os.Getenv("APISIX_ADMIN") == "" {
		t.Log("APISIX_ADMIN is not set: the gateway path is not exercised")
		return false
	}
	if os.Getenv("APISIX_GATEWAY") == "" {
		t.Setenv("APISIX_GATEWAY", "http://127.0.0.1:9080")
	}
	return true
}

// benchflowBin is the binary `make testacc` built, or one built now.
func benchflowBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("BENCHFLOW_BIN"); b != "" {
		return b
	}
	bin := filepath.Join(t.TempDir(), "benchflow")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/benchflow/benchflow/cmd/benchflow")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building benchflow: %v\n%s", err, out)
	}
	return bin
}

func accRunID(t *testing.T) string {
	return "acc" + time.Now().UTC().Format("20060102T150405.000Z") + "-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
}

func nomadAPI(t *testing.T) *napi.Client {
	t.Helper()
	c, err := napi.NewClient(napi.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// liveAllocs lists the allocations of a job that are not terminal.
func liveAllocs(t *testing.T, job string) []string {
	t.Helper()
	stubs, _, err := nomadAPI(t).Jobs().Allocations(job, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range stubs {
		switch a.ClientStatus {
		case "complete", "failed", "lost":
		default:
			out = append(out, fmt.Sprintf("%s desired=%s client=%s", a.ID[:8], a.DesiredStatus, a.ClientStatus))
		}
	}
	return out
}

// clientIsHere reports whether a Nomad client node runs on this machine
// (its unique.hostname is this host's name).
func clientIsHere(t *testing.T) bool {
	t.Helper()
	host, _ := os.Hostname()
	nc := nomadAPI(t)
	nodes, _, err := nc.Nodes().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if node, _, err := nc.Nodes().Info(n.ID, nil); err == nil && node.Attributes["unique.hostname"] == host {
			return true
		}
	}
	return false
}

// accNomadEnv skips unless acceptance tests are enabled against a real
// Nomad; Consul is not needed (service_provider = "nomad").
func accNomadEnv(t *testing.T) {
	t.Helper()
	if os.Getenv("BENCHFLOW_ACC") != "1" || os.Getenv("NOMAD_ADDR") == "" {
		t.Skip("acceptance test: set BENCHFLOW_ACC=1 and NOMAD_ADDR pointing at a real Nomad (no Consul needed)")
	}
}

// TestAccGateway runs pipelines/gateway.hcl with short loads against the
// real stack (the direct path alone without APISIX), then checks every
// trial completed and nothing is left.
func TestAccGateway(t *testing.T) {
	accEnv(t)
	accGateway(t)
}

// TestAccGatewayWithoutConsul is TestAccGateway with
// service_provider=nomad: Nomad alone (plus APISIX, optional).
func TestAccGatewayWithoutConsul(t *testing.T) {
	accNomadEnv(t)
	accGateway(t, "--var", "service_provider=nomad")
}

func accGateway(t *testing.T, extra ...string) {
	gateway := withGateway(t)
	bin := benchflowBin(t)
	out := t.TempDir()
	args := []string{"apply", gatewayPipeline, "--out", out, "--repetitions", "1",
		"--var", "duration=3s", "--var", "warm=1s", "--var", "connections=8", "--verbose"}
	args = append(args, extra...)
	if !gateway {
		args = append(args, "--var", `paths=["direct"]`)
	}
	cmd := exec.Command(bin, args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if strings.Contains(buf.String(), `provider type "nomad"`) || strings.Contains(buf.String(), "Unknown provider type") {
		t.Fatalf("%s does not include the nomad provider (providers/standard must import it):\n%s", bin, buf.String())
	}
	if key := os.Getenv("APISIX_ADMIN_KEY"); key != "" && strings.Contains(buf.String(), key) {
		t.Error("apply output contains the APISIX admin key")
	}
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, buf.String())
	}
	r, err := results.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	loads := 0
	for _, row := range r.Trials {
		if row.Step != "main" || row.Discarded { // a busy attempt re-run (busy_rerun)
			continue
		}
		loads++
		if row.Requests == 0 || row.Status != "ok" {
			t.Errorf("trial %s %v: %d requests, status %s", row.TrialID, row.Params, row.Requests, row.Status)
		}
	}
	if want := map[bool]int{true: 6, false: 3}[gateway]; loads != want {
		t.Errorf("%d measured loads, want %d", loads, want)
	}
	// Every trial's allocation logs reached its logs folder.
	var logs []string
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".web.stdout.log") {
			logs = append(logs, p)
		}
		return nil
	})
	if len(logs) < loads {
		t.Errorf("%d allocation stdout logs under %s, want at least %d", len(logs), out, loads)
	}
	removed, err := nomad.GC(context.Background(), &providers.GCRequest{RunID: r.Manifest.RunID})
	if err != nil || len(removed) > 0 {
		t.Errorf("after the run GC removed %v (%v); want nothing left", removed, err)
	}
}

// TestAccProvision provisions the built-in server with raw_exec (behind
// the gateway when APISIX is configured), sends requests, tears down and
// checks that every allocation stopped, Consul forgot the service and
// the logs reached the logs folder.
func TestAccProvision(t *testing.T) {
	accEnv(t)
	gateway := withGateway(t)
	bin := benchflowBin(t)
	p, err := nomad.New(&providers.NewRequest{Name: "acc", Config: &nomad.Config{
		Driver: "raw_exec", Count: 2, Gateway: gateway, ReadyTimeout: "3m"}})
	if err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(t.TempDir(), "logs")
	req := &providers.ProvisionRequest{RunID: accRunID(t), TrialID: "t1", LogDir: logDir,
		Service: providers.ServiceSpec{
			Name:    "web",
			Command: []string{bin, "serve", "--addr", "0.0.0.0:31999"},
			Ports:   []providers.Port{{Name: "http", Host: 31999}},
			Health:  providers.Health{HTTPPath: "/", Interval: time.Second},
		}, Logf: t.Logf}
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ep := dep.Endpoint()
	urls := []string{}
	for _, a := range strings.Split(ep.Attrs["allocations"], ",") {
		urls = append(urls, "http://"+a+"/")
	}
	if gateway {
		urls = append(urls, ep.Attrs["gateway_url"]+"/")
	}
	for _, u := range urls {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", u, resp.StatusCode)
		}
	}
	// On a client that is this machine, the tasks (benchflow serve) are the
	// service's processes and their executors ("nomad") infrastructure.
	ps, err := dep.(providers.ProcessReporter).Processes(context.Background())
	t.Logf("processes: %+v (%v)", ps, err)
	if clientIsHere(t) {
		svc, infra := 0, 0
		for _, pr := range ps {
			switch {
			case pr.Role == "service" && pr.Name == filepath.Base(bin):
				svc++
			case pr.Role == "infra" && pr.Name == "nomad":
				infra++
			}
		}
		if err != nil || svc != 2 || infra != 2 {
			t.Errorf("processes %+v (%v): want the 2 tasks (service) and their 2 executors (infra)", ps, err)
		}
	} else if len(ps) > 0 {
		t.Errorf("processes %+v of a client on another machine", ps)
	}
	checkAccVersions(t, dep, gateway)
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if live := liveAllocs(t, ep.Attrs["job"]); len(live) > 0 {
		t.Errorf("allocations still live after Teardown: %v", live)
	}
	// A second trial of the same job with one allocation: Nomad still
	// lists the first trial's two under the job id, but the teardown
	// counts its own alone.
	var stopped atomic.Value
	req2 := *req
	req2.TrialID, req2.LogDir = "t2", filepath.Join(t.TempDir(), "logs2")
	req2.Logf = func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		if strings.Contains(line, " stopped") {
			stopped.Store(line)
		}
	}
	p1, err := nomad.New(&providers.NewRequest{Name: "acc", Config: &nomad.Config{Driver: "raw_exec", Count: 1, ReadyTimeout: "3m"}})
	if err != nil {
		t.Fatal(err)
	}
	dep2, err := p1.Provision(context.Background(), &req2)
	if err != nil {
		t.Fatal(err)
	}
	if err := dep2.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := "nomad: 1 allocation of " + ep.Attrs["job"] + " stopped"; stopped.Load() != want {
		t.Errorf("second teardown logged %v, want %q", stopped.Load(), want)
	}
	cc, err := capi.NewClient(capi.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if entries, _, err := cc.Health().Service(ep.Attrs["consul_service"], "", false, nil); err != nil || len(entries) > 0 {
		t.Errorf("Consul still lists %d instances of %s (%v)", len(entries), ep.Attrs["consul_service"], err)
	}
	for _, f := range []string{"web.0.web.stdout.log", "web.0.web.stderr.log", "web.1.web.events.log"} {
		if _, err := os.Stat(filepath.Join(logDir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestAccTaskFailure: a task that exits and a command that does not exist
// fail the provisioning with the event that explains it (not Nomad's
// trailing "Not Restarting"), the exit code with the last stderr lines,
// and leave no job behind.
func TestAccTaskFailure(t *testing.T) {
	accEnv(t)
	cases := []struct {
		name    string
		command []string
		want    []string
	}{
		{"exits", []string{"/bin/sh", "-c", "echo starting; echo 'fatal: cannot open config' >&2; exit 3"},
			[]string{"Terminated: Exit Code: 3", "last stderr lines:", "fatal: cannot open config", "the service exited by itself"}},
		{"missing binary", []string{"/nonexistent/benchflow", "serve"},
			[]string{"Driver Failure:", "/nonexistent/benchflow", "check that the command exists"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := nomad.New(&providers.NewRequest{Name: "acc", Config: &nomad.Config{Driver: "raw_exec", ReadyTimeout: "1m"}})
			if err != nil {
				t.Fatal(err)
			}
			req := &providers.ProvisionRequest{RunID: accRunID(t), TrialID: "t1",
				Service: providers.ServiceSpec{Name: "web", Command: tc.command,
					Ports:  []providers.Port{{Name: "http", Host: 31998}},
					Health: providers.Health{HTTPPath: "/", Interval: time.Second}}, Logf: t.Logf}
			_, err = p.Provision(context.Background(), req)
			if err == nil {
				t.Fatal("Provision succeeded")
			}
			t.Logf("error: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q", w)
				}
			}
			if strings.Contains(err.Error(), "Policy allows no restarts") {
				t.Error("error quotes the restart policy instead of the cause")
			}
			job := "benchflow-web-" + strings.ToLower(req.RunID)
			if jobs, _, _ := nomadAPI(t).Jobs().PrefixList(job); len(jobs) > 0 {
				t.Errorf("job %s left behind", job)
			}
		})
	}
}

// TestAccGCKeepsLiveRun: a `benchflow gc` run while a job is live (its
// owner, this test process, runs) keeps the job.
func TestAccGCKeepsLiveRun(t *testing.T) {
	accEnv(t)
	bin := benchflowBin(t)
	p, err := nomad.New(&providers.NewRequest{Name: "acc", Config: &nomad.Config{Driver: "raw_exec", ReadyTimeout: "2m"}})
	if err != nil {
		t.Fatal(err)
	}
	req := &providers.ProvisionRequest{RunID: accRunID(t), TrialID: "t1",
		Service: providers.ServiceSpec{Name: "web", Command: []string{bin, "serve", "--addr", "0.0.0.0:31997"},
			Ports:  []providers.Port{{Name: "http", Host: 31997}},
			Health: providers.Health{HTTPPath: "/", Interval: time.Second}}, Logf: t.Logf}
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	job := dep.Endpoint().Attrs["job"]
	out, err := exec.Command(bin, "gc", "-v").CombinedOutput()
	t.Logf("benchflow gc -v:\n%s", out)
	if err != nil {
		t.Fatalf("gc: %v", err)
	}
	if !strings.Contains(string(out), "kept nomad job "+job) {
		t.Errorf("gc did not report keeping %s", job)
	}
	j, _, err := nomadAPI(t).Jobs().Info(job, nil)
	if err != nil || j.Stop != nil && *j.Stop {
		t.Fatalf("the live run's job %s did not survive gc: %v", job, err)
	}
	resp, err := http.Get(dep.Endpoint().URL() + "/")
	if err != nil {
		t.Fatalf("the live run's allocation stopped answering after gc: %v", err)
	}
	resp.Body.Close()
}

// TestAccRenderValidates: `benchflow render --provider nomad` is a job
// `nomad job validate` accepts (needs the nomad CLI: NOMAD_BIN or PATH).
func TestAccRenderValidates(t *testing.T) {
	accEnv(t)
	cli := os.Getenv("NOMAD_BIN")
	if cli == "" {
		var err error
		if cli, err = exec.LookPath("nomad"); err != nil {
			t.Skip("no nomad CLI (set NOMAD_BIN)")
		}
	}
	bin := benchflowBin(t)
	out, err := exec.Command(bin, "render", gatewayPipeline, "--provider", "nomad").Output()
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	f := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(cli, "job", "validate", "-json", f).CombinedOutput(); err != nil {
		t.Errorf("nomad job validate -json: %v\n%s", err, b)
	}
}

// TestAccDockerTeardown: with the docker driver, no container of the job
// runs any more when Teardown returns. It needs an image serving HTTP on
// port 80 that the Nomad client's Docker has (BENCHFLOW_ACC_DOCKER_IMAGE,
// e.g. benchflow/nginx:local from `make images`) and the docker CLI talking
// to the same engine.
func TestAccDockerTeardown(t *testing.T) {
	accEnv(t)
	image := os.Getenv("BENCHFLOW_ACC_DOCKER_IMAGE")
	if image == "" {
		t.Skip("set BENCHFLOW_ACC_DOCKER_IMAGE to an image serving HTTP on port 80 (e.g. benchflow/nginx:local)")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI")
	}
	p, err := nomad.New(&providers.NewRequest{Name: "acc", Config: &nomad.Config{Driver: "docker", Count: 2, ReadyTimeout: "2m"}})
	if err != nil {
		t.Fatal(err)
	}
	req := &providers.ProvisionRequest{RunID: accRunID(t), TrialID: "t1",
		Service: providers.ServiceSpec{Name: "web", Image: image, Ports: []providers.Port{{Name: "http", Container: 80}},
			Health: providers.Health{HTTPPath: "/", Interval: time.Second}}, Logf: t.Logf}
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	stubs, _, err := nomadAPI(t).Jobs().Allocations(dep.Endpoint().Attrs["job"], false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Nomad names a task's container <task>-<allocation id>.
	running := func() []string {
		var out []string
		for _, a := range stubs {
			b, _ := exec.Command("docker", "ps", "-q", "--filter", "name=web-"+a.ID).Output()
			if strings.TrimSpace(string(b)) != "" {
				out = append(out, "web-"+a.ID)
			}
		}
		return out
	}
	if got := running(); len(got) != 2 {
		t.Fatalf("%d containers of the job run before teardown, want 2: %v", len(got), got)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := running(); len(got) > 0 {
		t.Errorf("containers still running after Teardown: %v", got)
	}
}

// TestAccWithoutConsul runs against a Nomad without Consul
// (service_provider = "nomad"), with the Consul address pointing at a
// listener that counts connections: two allocations register in Nomad and
// answer, teardown leaves no allocation and no registration; a service
// whose check fails is refused with the check's result; two load agents
// start, answer and are torn down. Consul is never dialled.
func TestAccWithoutConsul(t *testing.T) {
	accNomadEnv(t)
	bin := benchflowBin(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	defer func() {
		ln.Close()
		if n := dials.Load(); n > 0 {
			t.Errorf("the Consul address was dialled %d times", n)
		}
	}()
	t.Setenv("CONSUL_HTTP_ADDR", ln.Addr().String())
	newP := func(t *testing.T, timeout string) providers.Provider {
		t.Helper()
		p, err := nomad.New(&providers.NewRequest{Name: "acc", Config: &nomad.Config{
			Driver: "raw_exec", Count: 2, ServiceProvider: "nomad", ConsulAddress: ln.Addr().String(), ReadyTimeout: timeout}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	serve := func(t *testing.T, port int, args ...string) *providers.ProvisionRequest {
		return &providers.ProvisionRequest{RunID: accRunID(t), TrialID: "t1", LogDir: filepath.Join(t.TempDir(), "logs"),
			Service: providers.ServiceSpec{
				Name:    "web",
				Command: append([]string{bin, "serve", "--addr", fmt.Sprintf("0.0.0.0:%d", port)}, args...),
				Ports:   []providers.Port{{Name: "http", Host: port}},
				Health:  providers.Health{HTTPPath: "/", Interval: time.Second},
			}, Logf: t.Logf}
	}

	t.Run("provision", func(t *testing.T) {
		dep, err := newP(t, "3m").Provision(context.Background(), serve(t, 31996))
		if err != nil {
			t.Fatal(err)
		}
		ep := dep.Endpoint()
		service := ep.Attrs["service"]
		if service == "" || ep.Attrs["consul_service"] != "" {
			t.Errorf("attrs service %q consul_service %q", service, ep.Attrs["consul_service"])
		}
		regs, _, err := nomadAPI(t).Services().Get(service, nil)
		if err != nil || len(regs) != 2 {
			t.Errorf("Nomad lists %d registrations of %s (%v), want 2", len(regs), service, err)
		}
		for _, a := range strings.Split(ep.Attrs["allocations"], ",") {
			resp, err := http.Get("http://" + a + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("GET %s: %d", a, resp.StatusCode)
			}
		}
		if err := dep.Teardown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if live := liveAllocs(t, ep.Attrs["job"]); len(live) > 0 {
			t.Errorf("allocations still live after Teardown: %v", live)
		}
		if regs, _, err := nomadAPI(t).Services().Get(service, nil); err != nil || len(regs) > 0 {
			t.Errorf("Nomad still lists %d registrations of %s after Teardown (%v)", len(regs), service, err)
		}
	})

	t.Run("failing check", func(t *testing.T) {
		_, err := newP(t, "30s").Provision(context.Background(), serve(t, 31995, "--status", "503"))
		if err == nil {
			t.Fatal("Provision succeeded with a failing check")
		}
		t.Logf("error: %v", err)
		for _, w := range []string{`check "benchflow-http" of allocation`, "failure (HTTP 503"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %q", w)
			}
		}
	})

	t.Run("agents", func(t *testing.T) {
		p := newP(t, "2m").(providers.AgentLauncher)
		// A fresh token per run and the targets, as the engine gives its
		// agents (without either they exit 1 at start).
		token, err := agent.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		g, err := p.LaunchAgents(context.Background(), &providers.AgentRequest{RunID: accRunID(t), TrialID: "t1", Step: "wrk",
			Count: 2, Binary: bin, Idle: "60s", LogDir: t.TempDir(), Logf: t.Logf, Token: token,
			Targets: []string{"http://127.0.0.1:31994/"}})
		if err != nil {
			t.Fatal(err)
		}
		// Each agent answers hello with the token and refuses it without.
		for _, u := range g.URLs() {
			for _, auth := range []string{"Bearer " + token, ""} {
				req, _ := http.NewRequest("GET", u+"/v1/hello", nil)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					continue
				}
				resp.Body.Close()
				if want := map[bool]int{true: 200, false: 401}[auth != ""]; resp.StatusCode != want {
					t.Errorf("agent %s, with token %v: %d, want %d", u, auth != "", resp.StatusCode, want)
				}
			}
		}
		if err := g.Teardown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// checkAccVersions: the stack's versions the deployment reports are the
// ones the agents give their own API clients; APISIX's is a version, and
// etcd's is there when APISIX_ETCD is set.
func checkAccVersions(t *testing.T, dep providers.Deployment, gateway bool) {
	t.Helper()
	got := dep.(providers.VersionReporter).PlatformVersions(context.Background())
	t.Logf("versions: %v", got)
	nc, err := napi.NewClient(napi.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	self, err := nc.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	// The agent is a server, a client or both: its version is one of them.
	v, _ := self.Config["Version"].(map[string]any)
	if own := fmt.Sprint(v["Version"]); v == nil || (!strings.HasPrefix(got["nomad_client"], own) && !strings.HasPrefix(got["nomad_server"], own)) {
		t.Errorf("nomad versions %q / %q, the agent says %v", got["nomad_server"], got["nomad_client"], v)
	}
	if got["nomad_server"] == "" || got["nomad_client"] == "" {
		t.Errorf("nomad_server %q, nomad_client %q: want both", got["nomad_server"], got["nomad_client"])
	}
	cc, err := capi.NewClient(capi.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := cc.Agent().Self(); err != nil || got["consul"] == "" || !strings.HasPrefix(got["consul"], fmt.Sprint(cs["Config"]["Version"])) {
		t.Errorf("consul version %q, the agent says %v (%v)", got["consul"], cs["Config"]["Version"], err)
	}
	if gateway && !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(got["apisix"]) {
		t.Errorf("apisix version %q, want x.y.z (its admin API's Server header)", got["apisix"])
	}
	if gateway && os.Getenv("APISIX_ETCD") != "" && (got["etcd"] == "" || got["etcd_cluster"] == "") {
		t.Errorf("etcd %q, etcd_cluster %q with APISIX_ETCD=%s", got["etcd"], got["etcd_cluster"], os.Getenv("APISIX_ETCD"))
	}
}
