package nomad

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	napi "github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/nomad/apisix"
	"github.com/benchflow/benchflow/providers/nomad/fake"
)

const (
	testKey    = "edd1c9f034335f136f87ad84b625c8f1" // the fake's admin key
	testKeyEnv = "BENCHFLOW_TEST_APISIX_KEY"
	testRunID  = "20261130T044500Z-3f9c"
)

// newStack starts the three fakes and points the usual variables away
// from any real cluster.
func newStack(t *testing.T) *fake.Stack {
	t.Helper()
	st := fake.NewStack(testKey)
	t.Cleanup(st.Close)
	for _, v := range []string{"NOMAD_TOKEN", "CONSUL_HTTP_TOKEN", "NOMAD_REGION", "NOMAD_NAMESPACE", "APISIX_ADMIN_KEY", "APISIX_ETCD"} {
		t.Setenv(v, "")
	}
	t.Setenv(testKeyEnv, testKey)
	return st
}

// gatewayConfig is a config for the fakes with the gateway on.
func gatewayConfig(st *fake.Stack) *Config {
	return &Config{
		Address:       st.Nomad.URL(),
		ConsulAddress: st.Consul.URL(),
		Driver:        "raw_exec",
		Count:         2,
		Gateway:       true,
		APISIXAdmin:   st.APISIX.AdminURL(),
		APISIXKeyEnv:  testKeyEnv,
		GatewayURL:    st.APISIX.GatewayURL(),
		APISIXControl: st.APISIX.ControlURL(),
		ReadyTimeout:  "20s",
	}
}

// request is the service the pipelines use: the built-in server on the
// port the engine picked, with a template that uses the port and self.dir.
func request(t *testing.T) *providers.ProvisionRequest {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("listen 18080;\nroot ${NOMAD_TASK_DIR}/www;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &providers.ProvisionRequest{
		RunID: testRunID, TrialID: "t0001",
		Service: providers.ServiceSpec{
			Name:    "web",
			Command: []string{"/usr/local/bin/benchflow", "serve", "--addr", "0.0.0.0:18080"},
			Env:     map[string]string{"PORT": "18080", "CONF": "${NOMAD_TASK_DIR}/server.conf"},
			Dir:     dir,
			Files:   []providers.File{{Name: "server.conf", HostPath: conf, Mode: 0o600}},
			Ports:   []providers.Port{{Name: "http", Host: 18080}},
			Health:  providers.Health{HTTPPath: "/", Interval: 100 * time.Millisecond},
		},
		Logf: t.Logf,
	}
}

func newProvider(t *testing.T, c *Config) *Provider {
	t.Helper()
	p, err := New(&providers.NewRequest{Name: "gw", Config: c})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p.(*Provider)
}

func get(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// assertEmpty fails when anything is still registered in a fake.
func assertEmpty(t *testing.T, st *fake.Stack) {
	t.Helper()
	if left := st.Empty(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestRegistered(t *testing.T) {
	typ, ok := providers.Lookup("nomad")
	if !ok {
		t.Fatal("nomad provider not registered")
	}
	if _, ok := typ.NewConfig().(*Config); !ok {
		t.Fatalf("NewConfig returns %T", typ.NewConfig())
	}
	if typ.GC == nil {
		t.Error("GC not set")
	}
	// Every attribute a deployment sets is declared, so validation
	// accepts service.<name>.<attr>.
	st := newStack(t)
	dep, err := newProvider(t, gatewayConfig(st)).Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	var keys []string
	for k := range dep.Endpoint().Attrs {
		keys = append(keys, k)
	}
	if d := cmp.Diff(typ.Attrs, sorted(keys)); d != "" {
		t.Errorf("declared attrs vs endpoint attrs (-declared +endpoint):\n%s", d)
	}
}

// TestConfigDecodes decodes a provider block the way the engine does, with
// a matrix value, to pin the gohcl tags.
func TestConfigDecodes(t *testing.T) {
	src := `
address     = "http://127.0.0.1:4646"
driver      = "raw_exec"
count       = matrix.count
cpu         = 200
memory      = 64
datacenters = ["dc1"]
gateway     = matrix.path == "gateway"
route_uri   = "/app/*"
discovery   = "nodes"
service_provider = "nomad"
token_file  = "/run/secrets/nomad"
ready_timeout = "45s"
`
	f, diags := hclsyntax.ParseConfig([]byte(src), "p.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"matrix": cty.ObjectVal(map[string]cty.Value{"count": cty.NumberIntVal(4), "path": cty.StringVal("gateway")}),
	}}
	var c Config
	if diags := gohcl.DecodeBody(f.Body, ctx, &c); diags.HasErrors() {
		t.Fatal(diags)
	}
	want := Config{Address: "http://127.0.0.1:4646", Driver: "raw_exec", Count: 4, CPU: 200, Memory: 64,
		Datacenters: []string{"dc1"}, Gateway: true, RouteURI: "/app/*", Discovery: "nodes", ServiceProvider: "nomad",
		TokenFile: "/run/secrets/nomad", ReadyTimeout: "45s"}
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("decoded config (-want +got):\n%s", d)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Setenv("APISIX_ADMIN", "")
	t.Setenv("APISIX_GATEWAY", "")
	cases := []struct {
		name string
		c    Config
		want string
	}{
		{"driver", Config{Driver: "lxc"}, `driver: "lxc" is not "docker", "exec" or "raw_exec"`},
		{"driver typo", Config{Driver: "raw-exec"}, `Did you mean "raw_exec"?`},
		{"discovery", Config{Discovery: "dns"}, `discovery: "dns" is not "consul" or "nodes"`},
		{"timeout", Config{ReadyTimeout: "soon"}, `ready_timeout: "soon" is not a positive duration`},
		{"zero timeout", Config{ReadyTimeout: "0"}, `ready_timeout: "0" is not a positive duration`},
		{"count", Config{Count: -1}, "count: -1 is negative"},
		{"cpu", Config{CPU: -5}, "cpu: -5 is negative"},
		{"job name", Config{JobName: "my job"}, `job_name: "my job" is not a job id`},
		{"route", Config{RouteURI: "app"}, `route_uri: "app" must start with /`},
		{"both token sources", Config{TokenEnv: "X", TokenFile: "/x"}, "token_file: token_env and token_file are both set: choose one"},
		{"missing token file", Config{TokenFile: "/nonexistent/benchflow-token"}, "token_file: /nonexistent/benchflow-token: no such file or directory"},
		{"token file a device", Config{TokenFile: "/dev/zero"}, "token_file: /dev/zero: not a regular file (a character device)"},
		{"control", Config{Gateway: true, APISIXControl: "127.0.0.1:9090"}, `apisix_control: "127.0.0.1:9090" is not http(s)://host:port`},
		{"service provider", Config{ServiceProvider: "consol"}, `service_provider: "consol" is not "consul" or "nomad". Did you mean "consul"?`},
		{"consul discovery without consul", Config{ServiceProvider: "nomad", Gateway: true, Discovery: "consul"},
			`discovery: "consul" makes APISIX resolve the upstream in Consul, but with service_provider = "nomad" the service registers in Nomad only: set discovery = "nodes"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(&providers.NewRequest{Name: "n", Config: &tc.c})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), `nomad provider "n"`) {
				t.Errorf("error %q does not name the provider", err)
			}
		})
	}
}

// TestGatewayConsulDiscovery is the S3 architecture end to end on the
// fakes: two allocations, APISIX resolving them through Consul, real
// requests through both paths, and nothing left after teardown.
//
// APISIX's caches lag as they do for real: the upstream DELETE right
// after the route's is refused while the worker still holds the route,
// and Consul discovery learns of the instances a while after they pass.
func TestGatewayConsulDiscovery(t *testing.T) {
	st := newStack(t)
	st.APISIX.RouteCacheLag = 300 * time.Millisecond
	st.APISIX.DiscoveryLag = time.Second
	p := newProvider(t, gatewayConfig(st))
	ctx := context.Background()
	dep, err := p.Provision(ctx, request(t))
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	ep := dep.Endpoint()
	job := "benchflow-web-20261130t044500z-3f9c"
	for k, want := range map[string]string{"job": job, "group": "servers", "task": "web",
		"consul_service": job, "gateway_url": st.APISIX.GatewayURL()} {
		if ep.Attrs[k] != want {
			t.Errorf("Attrs[%q] = %q, want %q", k, ep.Attrs[k], want)
		}
	}
	allocs := strings.Split(ep.Attrs["allocations"], ",")
	if d := cmp.Diff(st.Nomad.RunningAllocs(), sorted(allocs)); d != "" {
		t.Errorf("allocations attr vs running allocations (-fake +attr):\n%s", d)
	}
	if got := net.JoinHostPort(ep.Host, fmt.Sprint(ep.Port)); got != allocs[0] {
		t.Errorf("endpoint %s is not the first allocation %s", got, allocs[0])
	}
	if ep.Ports["http"] != ep.Port {
		t.Errorf("Ports[http] = %d, want %d", ep.Ports["http"], ep.Port)
	}
	up, ok := st.APISIX.Object("upstreams", apisixID(job))
	if !ok || up["discovery_type"] != "consul" || up["service_name"] != job {
		t.Errorf("upstream = %v, want discovery_type consul and service_name %s", up, job)
	}
	rt, _ := st.APISIX.Object("routes", apisixID(job))
	if rt["uri"] != "/*" || rt["upstream_id"] != apisixID(job) {
		t.Errorf("route = %v", rt)
	}

	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	if code, body := get(t, hc, ep.URL()+"/"); code != 200 || !strings.Contains(body, "hello from "+job) {
		t.Errorf("direct: %d %q", code, body)
	}
	// A bounded load through the gateway reaches both allocations.
	seen := boundedLoad(t, hc, ep.Attrs["gateway_url"]+"/", 4, 50)
	if len(seen) != 2 {
		t.Errorf("gateway spread 200 requests over %d backends, want 2: %v", len(seen), seen)
	}

	if err := dep.Teardown(ctx); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	assertEmpty(t, st)
	for _, a := range allocs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("allocation %s still accepts connections after teardown", a)
		}
	}
	// Teardown twice is harmless.
	if err := dep.Teardown(ctx); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
}

// TestGatewayControlAPI: without a reachable control API the trial fails
// with what to do (after ready_timeout); "off" skips the check.
func TestGatewayControlAPI(t *testing.T) {
	st := newStack(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	c := gatewayConfig(st)
	c.APISIXControl, c.ReadyTimeout = dead, "3s"
	_, err = newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded without a control API")
	}
	for _, want := range []string{"waiting for APISIX to discover the 2 instances", "reading APISIX's discovery dump", "connection refused", "apisix_control = \"off\""} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	assertEmpty(t, st)

	c.APISIXControl = "off"
	dep, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, st)
}

// TestTeardownWaitsForAllocations: Nomad stops allocations after the
// deregistration answers, and removes their Consul services before it
// kills the tasks. Teardown returns only once every allocation is
// terminal, and copies their logs to the trial's logs folder.
func TestTeardownWaitsForAllocations(t *testing.T) {
	st := newStack(t)
	st.Nomad.StopDelay = time.Second
	c := gatewayConfig(st)
	c.Gateway = false
	req := request(t)
	req.LogDir = filepath.Join(t.TempDir(), "logs")
	dep, err := newProvider(t, c).Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if live := st.Nomad.LiveAllocs(); len(live) > 0 {
		t.Errorf("allocations still live after Teardown: %v", live)
	}
	assertEmpty(t, st)
	// A second trial with one allocation (same job id): Nomad still lists
	// the first trial's two (terminal) allocations under the job id after
	// the purge, but the teardown counts and keeps the logs of its own
	// allocation only.
	req2 := request(t)
	req2.TrialID, req2.LogDir = "t0002", filepath.Join(t.TempDir(), "logs2")
	var mu sync.Mutex
	var lines []string
	req2.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	c.Count = 1
	dep2, err := newProvider(t, c).Provision(context.Background(), req2)
	if err != nil {
		t.Fatal(err)
	}
	if err := dep2.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	stopped := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return !strings.Contains(l, " stopped") })
	mu.Unlock()
	if want := "nomad: 1 allocation of " + dep2.Endpoint().Attrs["job"] + " stopped"; len(stopped) != 1 || stopped[0] != want {
		t.Errorf("second teardown logged %q, want %q", stopped, want)
	}
	if files, _ := filepath.Glob(filepath.Join(req2.LogDir, "*.stdout.log")); len(files) != 1 {
		t.Errorf("second trial's logs: %v, want web.0.web.stdout.log alone", files)
	}
	for _, f := range []string{"web.0.web.stdout.log", "web.1.web.stdout.log", "web.0.web.stderr.log", "web.0.web.events.log"} {
		b, err := os.ReadFile(filepath.Join(req.LogDir, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if strings.HasSuffix(f, ".stdout.log") && !strings.Contains(string(b), "listening on 127.0.0.1:") {
			t.Errorf("%s = %q, want the task's output", f, b)
		}
		if strings.HasSuffix(f, ".events.log") && !strings.Contains(string(b), "Killed: Task successfully killed") {
			t.Errorf("%s = %q, want the task events", f, b)
		}
	}
}

// TestTeardownForced: a teardown whose context already ended (a second
// Ctrl-C) still deletes the route, the upstream and the job, without
// waiting for anything.
func TestTeardownForced(t *testing.T) {
	st := newStack(t)
	dep, err := newProvider(t, gatewayConfig(st)).Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := dep.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	if jobs, routes, ups := st.Nomad.Jobs(), st.APISIX.Routes(), st.APISIX.Upstreams(); len(jobs)+len(routes)+len(ups) > 0 {
		t.Errorf("left after a forced teardown: jobs %v routes %v upstreams %v", jobs, routes, ups)
	}
}

// TestTeardownStopTimeout: allocations that never stop make Teardown fail
// with a clear error after its bound, instead of letting the next trial
// share the machine with them silently.
func TestTeardownStopTimeout(t *testing.T) {
	st := newStack(t)
	st.Nomad.StopDelay = 3 * time.Second
	c := gatewayConfig(st)
	c.Gateway = false
	p := newProvider(t, c)
	p.stopTimeout = 300 * time.Millisecond
	dep, err := p.Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	err = dep.Teardown(context.Background())
	if err == nil {
		t.Fatal("Teardown succeeded while allocations still ran")
	}
	for _, want := range []string{"still not stopped after 300ms", "desired=stop client=running", "the next trial would share the machine"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// boundedLoad sends workers×perWorker GETs and returns how many answers
// each distinct body got; any failure fails the test.
func boundedLoad(t *testing.T, hc *http.Client, url string, workers, perWorker int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				resp, err := hc.Get(url)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("status %d: %s", resp.StatusCode, b)
					return
				}
				mu.Lock()
				seen[string(b)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("load through %s: %v", url, err)
	}
	total := 0
	for _, n := range seen {
		total += n
	}
	if total != workers*perWorker {
		t.Errorf("%d answers, want %d", total, workers*perWorker)
	}
	return seen
}

// TestGatewayNodesDiscovery writes the Consul instances as explicit
// upstream nodes.
func TestGatewayNodesDiscovery(t *testing.T) {
	st := newStack(t)
	c := gatewayConfig(st)
	c.Discovery, c.Count, c.RouteURI = "nodes", 3, "/app/*"
	p := newProvider(t, c)
	req := request(t)
	req.Service.Health.HTTPPath = "/health"
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	defer dep.Teardown(context.Background())
	ep := dep.Endpoint()
	if want := st.APISIX.GatewayURL() + "/app"; ep.Attrs["gateway_url"] != want {
		t.Errorf("gateway_url = %q, want %q", ep.Attrs["gateway_url"], want)
	}
	up, _ := st.APISIX.Object("upstreams", apisixID(ep.Attrs["job"]))
	nodes, _ := up["nodes"].([]any)
	var got []string
	for _, n := range nodes {
		m := n.(map[string]any)
		got = append(got, fmt.Sprintf("%v:%v", m["host"], m["port"]))
	}
	if d := cmp.Diff(st.Nomad.RunningAllocs(), sorted(got)); d != "" {
		t.Errorf("upstream nodes vs allocations (-allocs +nodes):\n%s", d)
	}
	if _, has := up["service_name"]; has {
		t.Errorf("nodes upstream has service_name: %v", up)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	if seen := boundedLoad(t, hc, ep.Attrs["gateway_url"]+"/x", 3, 30); len(seen) != 3 {
		t.Errorf("spread over %d backends, want 3", len(seen))
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, st)
}

// TestJobShape checks the job the fake received: labels, count,
// resources, driver config, templates with ports and self.dir rewritten,
// and the Consul service with its check.
// TestGatewayAddressesRequired: without APISIX addresses Provision fails
// before contacting anything, while Render still works.
func TestGatewayAddressesRequired(t *testing.T) {
	st := newStack(t)
	t.Setenv("APISIX_ADMIN", "")
	t.Setenv("APISIX_GATEWAY", "")
	c := gatewayConfig(st)
	c.APISIXAdmin, c.GatewayURL = "", ""
	p := newProvider(t, c)
	if _, err := p.Render(request(t)); err != nil {
		t.Errorf("Render: %v", err)
	}
	_, err := p.Provision(context.Background(), request(t))
	want := "gateway = true needs apisix_admin (or APISIX_ADMIN), e.g. http://127.0.0.1:9180 and gateway_url (or APISIX_GATEWAY), e.g. http://127.0.0.1:9080"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if len(st.Nomad.Jobs()) != 0 {
		t.Errorf("a job was registered: %v", st.Nomad.Jobs())
	}
}

func TestJobShape(t *testing.T) {
	st := newStack(t)
	c := gatewayConfig(st)
	c.Gateway, c.Count, c.CPU, c.Memory, c.JobName = false, 1, 250, 64, "hello-world"
	c.Datacenters = []string{"dc1"}
	p := newProvider(t, c)
	dep, err := p.Provision(context.Background(), request(t))
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	defer dep.Teardown(context.Background())
	if g := dep.Endpoint().Attrs["gateway_url"]; g != "" {
		t.Errorf("gateway_url = %q without a gateway", g)
	}
	job, ok := st.Nomad.Job("", "hello-world")
	if !ok {
		t.Fatal("job hello-world not registered")
	}
	if job.Meta[providers.LabelManaged] != "true" || job.Meta[providers.LabelRun] != testRunID || job.Meta[providers.LabelService] != "web" {
		t.Errorf("meta = %v", job.Meta)
	}
	if d := cmp.Diff([]string{"dc1"}, job.Datacenters); d != "" {
		t.Errorf("datacenters: %s", d)
	}
	tg := job.TaskGroups[0]
	if *tg.Name != "servers" || *tg.Count != 1 {
		t.Errorf("group %s count %d", *tg.Name, *tg.Count)
	}
	task := tg.Tasks[0]
	if task.Name != "web" || task.Driver != "raw_exec" || *task.Resources.CPU != 250 || *task.Resources.MemoryMB != 64 {
		t.Errorf("task %s driver %s cpu %d mem %d", task.Name, task.Driver, *task.Resources.CPU, *task.Resources.MemoryMB)
	}
	if task.Config["command"] != "/usr/local/bin/benchflow" {
		t.Errorf("command = %v", task.Config["command"])
	}
	if d := cmp.Diff([]any{"serve", "--addr", "0.0.0.0:${NOMAD_PORT_http}"}, task.Config["args"]); d != "" {
		t.Errorf("args (-want +got):\n%s", d)
	}
	if task.Env["PORT"] != "${NOMAD_PORT_http}" || task.Env["CONF"] != "${NOMAD_TASK_DIR}/server.conf" {
		t.Errorf("env = %v", task.Env)
	}
	tmpl := task.Templates[0]
	wantData := "listen {{ env \"NOMAD_PORT_http\" }};\nroot {{ env \"NOMAD_TASK_DIR\" }}/www;\n"
	if *tmpl.EmbeddedTmpl != wantData || *tmpl.DestPath != "local/server.conf" || *tmpl.Perms != "600" {
		t.Errorf("template data %q dest %q perms %q", *tmpl.EmbeddedTmpl, *tmpl.DestPath, *tmpl.Perms)
	}
	svc := tg.Services[0]
	if svc.Name != "hello-world" || svc.PortLabel != "http" || svc.Provider != "consul" || len(svc.Checks) != 1 ||
		svc.Checks[0].Type != "http" || svc.Checks[0].Path != "/" || svc.Checks[0].Interval != time.Second {
		t.Errorf("service = %+v", svc)
	}
	if d := cmp.Diff([]string{"benchflow", "benchflow-run-20261130t044500z-3f9c", "benchflow-trial-t0001"}, svc.Tags); d != "" {
		t.Errorf("service tags (-want +got):\n%s", d)
	}
	if *tg.Update.HealthCheck != "checks" || *tg.Update.MaxParallel != 1 {
		t.Errorf("update = %+v", tg.Update)
	}
}

func TestTemplateEscapesBraces(t *testing.T) {
	s := &settings{Config: Config{Driver: "raw_exec"}}
	sub := newSubstituter(s, &providers.ServiceSpec{Ports: []providers.Port{{Name: "http", Host: 8080}}})
	got := sub.template(`{{ literal }} on 8080, not 18080 or 80801`)
	want := `{{"{{"}} literal {{"}}"}} on {{ env "NOMAD_PORT_http" }}, not 18080 or 80801`
	if got != want {
		t.Errorf("template = %q, want %q", got, want)
	}
}

func TestDockerDriverJob(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	os.WriteFile(conf, []byte("events {}\nhttp { server { listen 80; } }\n"), 0o644)
	p := newProvider(t, &Config{Address: "http://127.0.0.1:1"})
	out, err := p.Render(&providers.ProvisionRequest{RunID: testRunID, Service: providers.ServiceSpec{
		Name: "nginx", Image: "nginx:alpine",
		Files: []providers.File{{Name: "nginx.conf", HostPath: conf, Mount: "/etc/nginx/nginx.conf"}},
		Ports: []providers.Port{{Name: "http", Container: 80, Host: 40123}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"image": "nginx:alpine"`, `"local/nginx.conf:/etc/nginx/nginx.conf"`,
		`"To": 80`, `"Driver": "docker"`, "listen 80;"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rendered job lacks %s:\n%s", want, out)
		}
	}
	if p.ListenPort(providers.Port{Name: "http", Container: 80, Host: 40123}) != 80 {
		t.Error("docker ListenPort is not the container port")
	}
	// No image: a clear error, not a broken job.
	_, err = p.Render(&providers.ProvisionRequest{Service: providers.ServiceSpec{Name: "x"}})
	if err == nil || !strings.Contains(err.Error(), "docker driver needs image") {
		t.Errorf("error = %v", err)
	}
}

func TestBinaryFileRejected(t *testing.T) {
	st := newStack(t)
	c := gatewayConfig(st)
	c.Gateway = false
	req := request(t)
	bin := filepath.Join(req.Service.Dir, "payload.bin")
	os.WriteFile(bin, []byte{0, 1, 2, 0xff}, 0o644)
	req.Service.Files = append(req.Service.Files, providers.File{Name: "payload.bin", HostPath: bin})
	_, err := newProvider(t, c).Provision(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), `file "payload.bin" of service "web" is binary`) {
		t.Fatalf("error = %v", err)
	}
	assertEmpty(t, st)
}

func TestUnplaceableJob(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*fake.Stack, *Config)
		want  string
	}{
		{"missing driver", func(st *fake.Stack, c *Config) { st.Nomad.Drivers = []string{"docker"} }, "missing drivers on 1 node(s)"},
		{"cpu exhausted", func(st *fake.Stack, c *Config) { c.CPU = 3000 }, "cpu on 1 node(s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t)
			c := gatewayConfig(st)
			tc.setup(st, c)
			_, err := newProvider(t, c).Provision(context.Background(), request(t))
			if err == nil {
				t.Fatal("Provision succeeded")
			}
			for _, want := range []string{"cannot be placed", `group "servers"`, tc.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			assertEmpty(t, st)
		})
	}
}

func TestNeverHealthy(t *testing.T) {
	st := newStack(t)
	st.Nomad.TaskStatus = http.StatusInternalServerError
	c := gatewayConfig(st)
	c.ReadyTimeout = "3s"
	_, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded with failing checks")
	}
	for _, want := range []string{"waiting for the deployment to be healthy", "0/2 allocations healthy", "deadline exceeded", "(ready_timeout 3s)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error does not wrap DeadlineExceeded: %v", err)
	}
	assertEmpty(t, st)
}

func TestWrongAdminKey(t *testing.T) {
	st := newStack(t)
	const wrong = "s3cr3t-wrong-admin-key-0123456789"
	t.Setenv(testKeyEnv, wrong)
	var logs strings.Builder
	req := request(t)
	req.Logf = func(f string, a ...any) { fmt.Fprintf(&logs, f+"\n", a...) }
	p := newProvider(t, gatewayConfig(st))
	_, err := p.Provision(context.Background(), req)
	if err == nil {
		t.Fatal("Provision succeeded with a wrong key")
	}
	if !errors.Is(err, apisix.ErrUnauthorized) || !strings.Contains(err.Error(), "failed to check token") {
		t.Errorf("error = %v, want the 401 answer", err)
	}
	for name, text := range map[string]string{"error": err.Error(), "logs": logs.String(),
		"String()": p.String(), "config": fmt.Sprintf("%+v", p.s.Config)} {
		if strings.Contains(text, wrong) {
			t.Errorf("%s contains the admin key: %s", name, text)
		}
	}
	assertEmpty(t, st)
}

func TestRouteAnswers404(t *testing.T) {
	st := newStack(t)
	c := gatewayConfig(st)
	c.RouteURI, c.ReadyTimeout = "/app", "3s" // exact uri: "/app/" does not match; 3s leaves room to reach the gateway stage on a busy machine
	_, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded with a route that never matches")
	}
	for _, want := range []string{"waiting for the gateway to answer " + st.APISIX.GatewayURL() + "/app/", "(last answer HTTP 404: 404 Route Not Found)", "(ready_timeout 3s)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	assertEmpty(t, st)
}

// TestGatewayDiscoveryDown: APISIX started while Consul was down holds no
// instance until its next retry (1, 4, 16, 64, 256 s in 3.9.1). The trial
// fails with what to do about it, and nothing is left behind.
func TestGatewayDiscoveryDown(t *testing.T) {
	st := newStack(t)
	st.APISIX.SetDiscoveryDown(true)
	c := gatewayConfig(st)
	c.ReadyTimeout = "3s"
	_, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded while APISIX's Consul discovery held nothing")
	}
	for _, want := range []string{"holds no instance", "1, 4, 16, 64 then 256 s", "apisix reload", "(ready_timeout 3s)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	assertEmpty(t, st)
}

// TestGatewayStoreDown: with APISIX's etcd down its admin API answers 503
// "has no healthy etcd endpoint available" (APISIX 3.9.1): the trial fails
// with that answer, and the job is purged.
func TestGatewayStoreDown(t *testing.T) {
	st := newStack(t)
	st.APISIX.SetStoreDown(true)
	_, err := newProvider(t, gatewayConfig(st)).Provision(context.Background(), request(t))
	if err == nil || !strings.Contains(err.Error(), "admin API answered 503: has no healthy etcd endpoint available") {
		t.Fatalf("Provision = %v, want the admin API's 503", err)
	}
	assertEmpty(t, st)
}

func TestNomadACL(t *testing.T) {
	st := newStack(t)
	st.Nomad.Token = "7d1c5bd6-nomad-secret"
	st.Consul.Token = "c0f3-consul-secret"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "nomad-token")
	os.WriteFile(tokenFile, []byte(st.Nomad.Token+"\n"), 0o600)
	t.Setenv("BENCHFLOW_TEST_CONSUL_TOKEN", st.Consul.Token)

	c := gatewayConfig(st)
	c.Gateway = false
	c.TokenEnv = "BENCHFLOW_TEST_NOMAD_TOKEN"
	t.Setenv("BENCHFLOW_TEST_NOMAD_TOKEN", "wrong-nomad-token-value")
	c.ConsulTokenEnv = "BENCHFLOW_TEST_CONSUL_TOKEN"
	_, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("error = %v, want 403 Permission denied", err)
	}
	if strings.Contains(err.Error(), "wrong-nomad-token-value") {
		t.Errorf("error contains the token: %v", err)
	}

	c.TokenEnv, c.TokenFile = "", tokenFile
	dep, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err != nil {
		t.Fatalf("Provision with token_file: %v", err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, st)
}

func TestProvisionCancelled(t *testing.T) {
	st := newStack(t)
	st.Nomad.TaskStatus = http.StatusServiceUnavailable
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	_, err := newProvider(t, gatewayConfig(st)).Provision(ctx, request(t))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	assertEmpty(t, st)
}

// deadOwner is the owner of a benchflow process that ended: a child that
// ran and was waited for.
func deadOwner(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	o := providers.SelfOwner()
	o.PID, o.Start = cmd.Process.Pid, 1
	return o.Labels()
}

// TestGC: gc without a run id removes what a crashed run left (its owner
// is gone) and keeps a live run's job, route and upstream, reporting why;
// with a run id it removes exactly that run's objects.
func TestGC(t *testing.T) {
	st := newStack(t)
	cfg := gatewayConfig(st)
	ctx := context.Background()

	// A crashed run: its owner process is gone, and it never tore down.
	dead := deadOwner(t)
	addOwnerLabels = func(m map[string]string) { maps.Copy(m, dead) }
	_, err := newProvider(t, cfg).Provision(ctx, request(t))
	addOwnerLabels = providers.AddOwnerLabels
	if err != nil {
		t.Fatal(err)
	}
	// A run in progress (this process), with its own job name.
	live := request(t)
	live.RunID = "20261130T050000Z-live"
	liveDep, err := newProvider(t, cfg).Provision(ctx, live)
	if err != nil {
		t.Fatal(err)
	}

	// Each job's own variable, as an agents job has (its token): the
	// crashed run's goes with its job, the live run's stays.
	job := "benchflow-web-20261130t044500z-3f9c"
	liveJob := "benchflow-web-20261130t050000z-live"
	nc, err := newProvider(t, cfg).nomadClient()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{job, liveJob} {
		if _, _, err := nc.Variables().Create(&napi.Variable{Path: "nomad/jobs/" + j, Items: napi.VariableItems{"token": "x"}}, nil); err != nil {
			t.Fatal(err)
		}
	}

	var kept []string
	req := &providers.GCRequest{Configs: []any{cfg}, Logf: func(f string, a ...any) { kept = append(kept, fmt.Sprintf(f, a...)) }}
	removed, err := GC(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"nomad job " + job + " (run " + testRunID + ")", "nomad variable nomad/jobs/" + job, "apisix route " + job, "apisix upstream " + job}
	if _, ok := st.Nomad.Variable("", "nomad/jobs/"+job); ok {
		t.Error("gc left the crashed job's variable")
	}
	if _, ok := st.Nomad.Variable("", "nomad/jobs/"+liveJob); !ok {
		t.Error("gc removed the live job's variable")
	}
	if d := cmp.Diff(want, removed); d != "" {
		t.Errorf("removed (-want +got):\n%s", d)
	}
	if !slices.Contains(st.Nomad.Jobs(), liveJob) || len(st.APISIX.Routes()) != 1 {
		t.Fatalf("gc removed the live run's objects: jobs %v routes %v", st.Nomad.Jobs(), st.APISIX.Routes())
	}
	if len(kept) != 3 || !strings.Contains(kept[0], "kept nomad job "+liveJob) || !strings.Contains(kept[0], "is still running") {
		t.Errorf("kept = %q", kept)
	}
	// The crashed run's allocations were stopped before gc returned.
	for _, a := range st.Nomad.LiveAllocs() {
		if !strings.HasPrefix(a, liveJob) {
			t.Errorf("gc left allocation %s running", a)
		}
	}

	// An explicit run id removes that run's objects only, live or not.
	if removed, err := GC(ctx, &providers.GCRequest{RunID: "another-run", Configs: []any{cfg}}); err != nil || len(removed) != 0 {
		t.Errorf("GC(another run) = %v, %v; want nothing removed", removed, err)
	}
	if err := liveDep.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, st)
}

// TestGCFromEnvironment: without configs gc uses NOMAD_ADDR and the
// APISIX_* variables.
func TestGCFromEnvironment(t *testing.T) {
	st := newStack(t)
	dead := deadOwner(t)
	addOwnerLabels = func(m map[string]string) { maps.Copy(m, dead) }
	_, err := newProvider(t, gatewayConfig(st)).Provision(context.Background(), request(t))
	addOwnerLabels = providers.AddOwnerLabels
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOMAD_ADDR", st.Nomad.URL())
	t.Setenv("APISIX_ADMIN", st.APISIX.AdminURL())
	t.Setenv("APISIX_ADMIN_KEY", testKey)
	removed, err := GC(context.Background(), &providers.GCRequest{RunID: testRunID})
	if err != nil || len(removed) != 3 {
		t.Fatalf("GC = %v, %v; want the job, route and upstream", removed, err)
	}
	assertEmpty(t, st)
}

func TestGCUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	t.Setenv("NOMAD_ADDR", "http://"+addr)
	t.Setenv("APISIX_ADMIN", "")
	_, err = GC(context.Background(), &providers.GCRequest{})
	if !errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("error = %v, want ErrUnavailable", err)
	}
}

func TestNomadUnreachable(t *testing.T) {
	st := newStack(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := gatewayConfig(st)
	c.Address = "http://" + addr
	_, err = newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil || !strings.Contains(err.Error(), `registering job "benchflow-web-`) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error = %v", err)
	}
	// A refused connection registered nothing: no cleanup is attempted
	// (it would only add a second "connection refused").
	if strings.Contains(err.Error(), "cleaning up") || strings.Count(err.Error(), "connection refused") != 1 {
		t.Errorf("error = %v, want the registration's error alone", err)
	}
	assertEmpty(t, st)
}

func TestNegativeReplicas(t *testing.T) {
	st := newStack(t)
	req := request(t)
	req.Service.Replicas = -2
	c := gatewayConfig(st)
	c.Count = 0
	_, err := newProvider(t, c).Provision(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "count -2: a job needs at least one allocation") {
		t.Fatalf("error = %v", err)
	}
	assertEmpty(t, st)
}

// TestTaskFailsToStart: Nomad ends a failed task's events with the
// restart policy's "Not Restarting"; the error quotes the driver failure
// before it and says what to do.
func TestTaskFailsToStart(t *testing.T) {
	st := newStack(t)
	st.Nomad.TaskFailure = `failed to launch command with executor: rpc error: code = Unknown desc = exec: "/usr/local/bin/benchflow": permission denied`
	_, err := newProvider(t, gatewayConfig(st)).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded with failing tasks")
	}
	t.Log(err)
	for _, want := range []string{"of job \"benchflow-web-", ` failed: task "web": Driver Failure: failed to launch command`,
		"permission denied", "check that the command exists and is executable on the Nomad client"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "Policy allows no restarts") {
		t.Errorf("error quotes the restart policy instead of the cause: %v", err)
	}
	assertEmpty(t, st)
}

// TestExecOutsideChroot: the exec driver cannot run a binary outside the
// task's chroot; the trial fails before anything is registered.
func TestExecOutsideChroot(t *testing.T) {
	st := newStack(t)
	c := gatewayConfig(st)
	c.Driver = "exec"
	req := request(t)
	req.Service.Command[0] = "/work/wt/bin/benchflow"
	_, err := newProvider(t, c).Provision(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), `command /work/wt/bin/benchflow is outside it: use driver = "raw_exec"`) {
		t.Fatalf("error = %v", err)
	}
	if jobs := st.Nomad.Jobs(); len(jobs) > 0 {
		t.Errorf("a job was registered: %v", jobs)
	}
	// Under /usr the chroot has it.
	req.Service.Command[0] = "/usr/local/bin/benchflow"
	dep, err := newProvider(t, c).Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	dep.Teardown(context.Background())
	assertEmpty(t, st)
}

// TestTaskExits: a task that exits is explained by its exit code and the
// last lines of its stderr, read from the allocation's logs.
func TestTaskExits(t *testing.T) {
	st := newStack(t)
	st.Nomad.TaskExitCode = 3
	st.Nomad.TaskStderr = "starting\nlisten tcp 0.0.0.0:23456: bind: address already in use\nexiting\n"
	_, err := newProvider(t, gatewayConfig(st)).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded with exiting tasks")
	}
	t.Log(err)
	for _, want := range []string{`failed: task "web": Terminated: Exit Code: 3`, "last stderr lines:",
		"bind: address already in use", "the service exited by itself"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "Not Restarting") {
		t.Errorf("error quotes the restart policy instead of the cause: %v", err)
	}
	assertEmpty(t, st)
}

func TestDeploymentFails(t *testing.T) {
	st := newStack(t)
	st.Nomad.TaskStatus = http.StatusBadGateway
	st.Nomad.UnhealthyFails = true
	_, err := newProvider(t, gatewayConfig(st)).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded with a failed deployment")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "failed: Failed due to unhealthy allocations") || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the deployment's failure (not a timeout)", err)
	}
	assertEmpty(t, st)
}
