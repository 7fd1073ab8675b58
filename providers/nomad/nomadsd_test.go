package nomad

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/nomad/fake"
)

// These tests run the provider with service_provider = "nomad" against a
// Nomad fake that has no Consul at all: Nomad's own service discovery
// replaces it.

// newBareStack starts a Nomad and an APISIX fake without Consul, and points
// CONSUL_HTTP_ADDR at a closed port.
func newBareStack(t *testing.T) *fake.Stack {
	t.Helper()
	st := fake.NewStackWithoutConsul(testKey)
	t.Cleanup(st.Close)
	for _, v := range []string{"NOMAD_TOKEN", "CONSUL_HTTP_TOKEN", "NOMAD_REGION", "NOMAD_NAMESPACE", "APISIX_ADMIN_KEY"} {
		t.Setenv(v, "")
	}
	t.Setenv("CONSUL_HTTP_ADDR", closedAddr(t))
	t.Setenv(testKeyEnv, testKey)
	return st
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// tripwire is a listener that counts the connections made to it: a Consul
// address that must never be dialled.
type tripwire struct {
	ln    net.Listener
	dials atomic.Int64
}

func newTripwire(t *testing.T) *tripwire {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tw := &tripwire{ln: ln}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tw.dials.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return tw
}

func (tw *tripwire) addr() string { return tw.ln.Addr().String() }

// check fails the test when anything connected to the tripwire.
func (tw *tripwire) check(t *testing.T) {
	t.Helper()
	if n := tw.dials.Load(); n > 0 {
		t.Errorf("the Consul address %s was dialled %d times with service_provider = \"nomad\"", tw.addr(), n)
	}
}

// bareConfig is a config for the Consul-less fakes, gateway on, whose
// Consul settings point at the tripwire.
func bareConfig(st *fake.Stack, tw *tripwire) *Config {
	return &Config{
		Address:         st.Nomad.URL(),
		ServiceProvider: "nomad",
		ConsulAddress:   tw.addr(),
		Driver:          "raw_exec",
		Count:           2,
		Gateway:         true,
		APISIXAdmin:     st.APISIX.AdminURL(),
		APISIXKeyEnv:    testKeyEnv,
		GatewayURL:      st.APISIX.GatewayURL(),
		ReadyTimeout:    "20s",
	}
}

// TestWithoutConsul provisions two allocations whose service registers in
// Nomad, behind an APISIX route whose nodes come from Nomad's
// registrations; requests reach both, teardown leaves no job, allocation,
// registration, route or upstream, and no Consul is ever dialled.
func TestWithoutConsul(t *testing.T) {
	st := newBareStack(t)
	tw := newTripwire(t)
	p := newProvider(t, bareConfig(st, tw))
	if p.s.Discovery != "nodes" {
		t.Errorf("discovery defaults to %q with service_provider nomad, want nodes", p.s.Discovery)
	}
	ctx := context.Background()
	dep, err := p.Provision(ctx, request(t))
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	ep := dep.Endpoint()
	job := "benchflow-web-20261130t044500z-3f9c"
	for k, want := range map[string]string{"job": job, "service": job, "consul_service": "", "gateway_url": st.APISIX.GatewayURL()} {
		if ep.Attrs[k] != want {
			t.Errorf("Attrs[%q] = %q, want %q", k, ep.Attrs[k], want)
		}
	}
	var keys []string
	for k := range ep.Attrs {
		keys = append(keys, k)
	}
	if d := cmp.Diff(Attrs, sorted(keys)); d != "" {
		t.Errorf("declared attrs vs endpoint attrs (-declared +endpoint):\n%s", d)
	}

	// The job's service is Nomad's, with the check kept.
	stored, ok := st.Nomad.Job("", job)
	if !ok {
		t.Fatalf("job %s not registered", job)
	}
	svc := stored.TaskGroups[0].Services[0]
	if svc.Provider != "nomad" || len(svc.Checks) != 1 || svc.Checks[0].Type != "http" || svc.Checks[0].Path != "/" {
		t.Errorf("service = %+v, want provider nomad with the http check", svc)
	}
	var constraints []string
	for _, c := range stored.TaskGroups[0].Constraints {
		constraints = append(constraints, c.LTarget+" "+c.Operand+" "+c.RTarget)
	}
	if d := cmp.Diff([]string{"${attr.nomad.service_discovery} = true", "${attr.nomad.version} semver >= 1.4.0"}, constraints); d != "" {
		t.Errorf("constraints Nomad added (-want +got):\n%s", d)
	}

	// Nomad holds one registration per allocation, at its address.
	regs, _, err := dep.(*Deployment).nomad.Services().Get(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, r := range regs {
		if !slices.Contains(r.Tags, "benchflow-trial-t0001") || r.JobID != job {
			t.Errorf("registration %+v lacks the trial tag or the job", r)
		}
		addrs = append(addrs, net.JoinHostPort(r.Address, strconv.Itoa(r.Port)))
	}
	if d := cmp.Diff(st.Nomad.RunningAllocs(), sorted(addrs)); d != "" {
		t.Errorf("registrations vs running allocations (-allocs +registrations):\n%s", d)
	}
	up, _ := st.APISIX.Object("upstreams", apisixID(job))
	if _, has := up["service_name"]; has || up["nodes"] == nil {
		t.Errorf("upstream = %v, want explicit nodes", up)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	if seen := boundedLoad(t, hc, ep.Attrs["gateway_url"]+"/", 4, 25); len(seen) != 2 {
		t.Errorf("gateway spread 100 requests over %d backends, want 2: %v", len(seen), seen)
	}

	if err := dep.Teardown(ctx); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	assertEmpty(t, st)
	if err := dep.Teardown(ctx); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
	tw.check(t)
}

// TestWithoutConsulTeardownWaitsForRegistrations: allocations that do not
// stop in time still have their registrations removed by the client a
// while later; Teardown waits (bounded) until Nomad lists none, so the
// next trial's wait sees no stale instance.
func TestWithoutConsulTeardownWaitsForRegistrations(t *testing.T) {
	st := newBareStack(t)
	st.Nomad.StopDelay = 3 * time.Second
	st.Nomad.ServiceSyncDelay = 700 * time.Millisecond
	tw := newTripwire(t)
	c := bareConfig(st, tw)
	c.Gateway = false
	p := newProvider(t, c)
	p.stopTimeout = 300 * time.Millisecond
	dep, err := p.Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	if regs := st.Nomad.ServiceRegistrations(); len(regs) != 2 {
		t.Fatalf("registrations after Provision: %v, want 2", regs)
	}
	err = dep.Teardown(context.Background())
	if err == nil || !strings.Contains(err.Error(), "still not stopped after 300ms") {
		t.Errorf("Teardown error = %v, want the allocations' stop timeout", err)
	}
	if regs := st.Nomad.ServiceRegistrations(); len(regs) > 0 {
		t.Errorf("registrations still listed when Teardown returned: %v", regs)
	}
	tw.check(t)
}

// TestWithoutConsulFailingCheck: a Nomad check that fails keeps the
// deployment unhealthy; the error quotes the check's result (status code
// and output, as Nomad's client reports them), and nothing is left.
func TestWithoutConsulFailingCheck(t *testing.T) {
	for _, failFast := range []bool{false, true} {
		name := map[bool]string{false: "deadline", true: "deployment fails"}[failFast]
		t.Run(name, func(t *testing.T) {
			st := newBareStack(t)
			st.Nomad.TaskStatus = http.StatusInternalServerError
			st.Nomad.UnhealthyFails = failFast
			tw := newTripwire(t)
			c := bareConfig(st, tw)
			c.ReadyTimeout = "3s"
			_, err := newProvider(t, c).Provision(context.Background(), request(t))
			if err == nil {
				t.Fatal("Provision succeeded with a failing check")
			}
			t.Log(err)
			want := []string{`check "benchflow-http" of allocation `, "failure (HTTP 500: task is unhealthy)"}
			if failFast {
				want = append(want, "failed: Failed due to unhealthy allocations")
			} else {
				want = append(want, "waiting for the deployment to be healthy", "0/2 allocations healthy", "(ready_timeout 3s)")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !failFast && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error does not wrap DeadlineExceeded: %v", err)
			}
			assertEmpty(t, st)
			tw.check(t)
		})
	}
}

// TestWithoutConsulRegistrationsMissing: when the deployment is healthy
// but Nomad never lists the registrations, the error says how many were
// wanted, what Nomad listed and how to look.
func TestWithoutConsulRegistrationsMissing(t *testing.T) {
	st := newBareStack(t)
	st.Nomad.ServiceSyncDelay = time.Minute // the client's RPC never lands in time
	tw := newTripwire(t)
	c := bareConfig(st, tw)
	c.Gateway, c.ReadyTimeout = false, "2s"
	_, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded without registrations")
	}
	for _, w := range []string{`waiting for 2 registrations of service "benchflow-web-20261130t044500z-3f9c" tagged benchflow-trial-t0001 in Nomad (seen: no registration)`,
		"nomad service info benchflow-web-20261130t044500z-3f9c", "(ready_timeout 2s)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	assertEmpty(t, st)
	tw.check(t)
}

// TestConsulServiceOnNomadWithoutConsul: the default service_provider
// against a Nomad whose clients have no Consul cannot be placed (Nomad's
// Consul constraint filters every node); the error says to use
// service_provider = "nomad".
func TestConsulServiceOnNomadWithoutConsul(t *testing.T) {
	st := newBareStack(t)
	c := bareConfig(st, newTripwire(t))
	c.ServiceProvider, c.Gateway, c.ConsulAddress = "", false, ""
	_, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err == nil {
		t.Fatal("Provision succeeded with a Consul service and no Consul")
	}
	t.Log(err)
	for _, w := range []string{"cannot be placed", "${attr.consul.version} semver >= 1.7.0 on 1 node(s)", `set service_provider = "nomad"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	assertEmpty(t, st)
}

// TestRenderNomadService: the rendered job's service is Nomad's, and its
// check sets only fields Nomad's own checks accept.
func TestRenderNomadService(t *testing.T) {
	p := newProvider(t, &Config{Address: "http://" + closedAddr(t), ServiceProvider: "nomad", Driver: "raw_exec"})
	req := request(t)
	req.Service.Health = providers.Health{TCP: true}
	job, err := buildJob(p.jobSpec(req))
	if err != nil {
		t.Fatal(err)
	}
	svc := job.TaskGroups[0].Services[0]
	if svc.Provider != "nomad" || len(svc.Checks) != 1 {
		t.Fatalf("service = %+v", svc)
	}
	want := svc.Checks[0]
	if want.Type != "tcp" || want.Interval < time.Second || want.Timeout < time.Second {
		t.Errorf("check = %+v: Nomad wants type http or tcp, interval and timeout of at least 1s", want)
	}
	// Consul-only fields Nomad refuses on its own checks.
	if want.Expose || want.SuccessBeforePassing != 0 || want.FailuresBeforeCritical != 0 || want.FailuresBeforeWarning != 0 ||
		want.TLSServerName != "" || want.TLSSkipVerify || want.AddressMode == "driver" || want.OnUpdate == "ignore_warnings" {
		t.Errorf("check sets a Consul-only field: %+v", want)
	}
	out, err := p.Render(req)
	if err != nil || !strings.Contains(string(out), `"Provider": "nomad"`) {
		t.Errorf("Render: %v\n%s", err, out)
	}
}

// TestValidateServiceProvider: Validate reports each problem as a
// *providers.ConfigError naming its attribute, with a suggestion, reading
// no environment and no file.
func TestValidateServiceProvider(t *testing.T) {
	cases := []struct {
		name  string
		c     Config
		attrs []string
		want  string
	}{
		{"typo", Config{ServiceProvider: "nomda"}, []string{"service_provider"}, `"nomda" is not "consul" or "nomad". Did you mean "nomad"?`},
		{"consul discovery", Config{ServiceProvider: "nomad", Discovery: "consul"}, []string{"discovery"}, `set discovery = "nodes"`},
		{"several", Config{ServiceProvider: "x", Driver: "lxc"}, []string{"driver", "service_provider"}, `"lxc" is not`},
		{"nodes", Config{ServiceProvider: "nomad", Gateway: true, Discovery: "nodes"}, nil, ""},
		{"discovery left out", Config{ServiceProvider: "nomad", Gateway: true}, nil, ""},
		// Consul's token settings are not used without Consul.
		{"consul token unused", Config{ServiceProvider: "nomad", ConsulTokenEnv: "X", ConsulTokenFile: "/x"}, nil, ""},
		{"token file not read", Config{TokenFile: "/nonexistent/benchflow-token"}, nil, ""},
	}
	t.Setenv("APISIX_CONTROL", "not a url")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			attrs, other := providers.ConfigErrors(err)
			if len(other) > 0 {
				t.Errorf("errors without an attribute: %v", other)
			}
			var got []string
			for _, a := range attrs {
				got = append(got, a.Attr)
			}
			slices.Sort(got)
			if d := cmp.Diff(tc.attrs, got); d != "" {
				t.Errorf("attributes (-want +got):\n%s\nerror: %v", d, err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLaunchAgentsWithoutConsul runs two real agents as a raw_exec job
// whose service registers in Nomad: the job carries Nomad's service with
// a TCP check, the agents answer with the token and refuse without it,
// teardown leaves nothing and no Consul is dialled.
func TestLaunchAgentsWithoutConsul(t *testing.T) {
	bin := os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		t.Skip("needs the benchflow binary: set BENCHFLOW_BIN (make test does)")
	}
	st := newBareStack(t)
	st.Nomad.RunRawExec = true
	tw := newTripwire(t)
	p := newProvider(t, &Config{Address: st.Nomad.URL(), ServiceProvider: "nomad", ConsulAddress: tw.addr(), Driver: "docker", ReadyTimeout: "30s"})
	const token = "0123456789abcdef0123456789abcdef"
	g, err := p.LaunchAgents(context.Background(), &providers.AgentRequest{
		RunID: testRunID, TrialID: "t0001", Step: "wrk", Count: 2, Binary: bin, Idle: "20s", LogDir: t.TempDir(), Logf: t.Logf,
		Token: token, Targets: []string{"http://127.0.0.1:1/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	job := "benchflow-agent-wrk-" + strings.ToLower(testRunID)
	stored, ok := st.Nomad.Job("", job)
	if !ok {
		t.Errorf("no job %s; jobs %v", job, st.Nomad.Jobs())
	} else if svc := stored.TaskGroups[0].Services[0]; svc.Provider != "nomad" || len(svc.Checks) != 1 || svc.Checks[0].Type != "tcp" {
		t.Errorf("agents' service = %+v, want provider nomad with a tcp check", svc)
	}
	if regs := st.Nomad.ServiceRegistrations(); len(regs) != 2 {
		t.Errorf("registrations of the agents: %v, want 2", regs)
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	for _, u := range g.URLs() {
		if code, body := get(t, hc, u+"/v1/hello"); code != http.StatusUnauthorized {
			t.Errorf("agent %s without the token: %d %s, want 401", u, code, body)
		}
		req, _ := http.NewRequest("GET", u+"/v1/hello", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("agent %s with the token: %d", u, resp.StatusCode)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, st)
	tw.check(t)
}
