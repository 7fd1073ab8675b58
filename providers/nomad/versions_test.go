package nomad

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/providers"
)

// TestPlatformVersions: a gateway deployment on the fakes reports the
// version of each piece of the stack, asked of that piece; a direct one
// (no gateway) reports Nomad's and Consul's only.
func TestPlatformVersions(t *testing.T) {
	st := newStack(t)
	st.Nomad.Version = "1.7.0-beta.1"
	st.Consul.Version = "1.16.4"
	st.APISIX.Version = "3.9.1"
	st.Etcd.Version = "3.4.23"
	c := gatewayConfig(st)
	c.EtcdAddress = st.Etcd.URL()
	dep, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	vr, ok := dep.(providers.VersionReporter)
	if !ok {
		t.Fatalf("%T is not a providers.VersionReporter", dep)
	}
	want := map[string]string{
		"nomad_server": "1.7.0-beta.1", "nomad_client": "1.7.0-beta.1", "consul": "1.16.4",
		"apisix": "3.9.1", "etcd": "3.4.23", "etcd_cluster": "3.4.0",
	}
	if d := cmp.Diff(want, vr.PlatformVersions(context.Background())); d != "" {
		t.Errorf("versions (-want +got):\n%s", d)
	}

	// Without the gateway: neither APISIX nor etcd is asked, even with
	// APISIX_ETCD set.
	t.Setenv("APISIX_ETCD", st.Etcd.URL())
	c = gatewayConfig(st)
	c.Gateway = false
	dep2, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	defer dep2.Teardown(context.Background())
	want = map[string]string{"nomad_server": "1.7.0-beta.1", "nomad_client": "1.7.0-beta.1", "consul": "1.16.4"}
	if d := cmp.Diff(want, dep2.(providers.VersionReporter).PlatformVersions(context.Background())); d != "" {
		t.Errorf("versions without gateway (-want +got):\n%s", d)
	}
}

// TestPlatformVersionsPartial: pieces that are down, answer without a
// version, or never answer are left out; the rest is still reported, and
// a piece that hangs costs at most the call's bound.
func TestPlatformVersionsPartial(t *testing.T) {
	st := newStack(t)
	st.APISIX.ServerTokensOff = true // "Server: APISIX", no version
	// An etcd that accepts the connection and never answers.
	var hung atomic.Int64
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hung.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	c := gatewayConfig(st)
	c.EtcdAddress = slow.URL
	dep, err := newProvider(t, c).Provision(context.Background(), request(t))
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	d := dep.(*Deployment)
	st.Consul.Token = "now-required" // Consul answers 403 from here on

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	got := d.PlatformVersions(ctx)
	want := map[string]string{"nomad_server": "1.6.5", "nomad_client": "1.6.5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	if hung.Load() == 0 {
		t.Error("the hanging etcd was never asked")
	}

	// Nothing answers at all: no versions, no error, no panic.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	c = gatewayConfig(st)
	c.Address, c.ConsulAddress = dead, dead
	p := newProvider(t, c)
	nc, _ := p.nomadClient()
	gone := &Deployment{p: p, nomad: nc, allocs: []allocAddr{{node: "3d7f3ab5"}}}
	if got := gone.PlatformVersions(context.Background()); got != nil {
		t.Errorf("versions from nothing = %v, want nil", got)
	}
}

// TestNomadConfigVersion pins how the agent's Version block is printed.
func TestNomadConfigVersion(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{map[string]any{"Version": "1.6.5", "VersionPrerelease": "", "VersionMetadata": ""}, "1.6.5"},
		{map[string]any{"Version": "1.7.0", "VersionPrerelease": "beta.1"}, "1.7.0-beta.1"},
		{map[string]any{"Version": "1.6.5", "VersionMetadata": "ent"}, "1.6.5+ent"},
		{map[string]any{"VersionPrerelease": "dev"}, ""},
		{"1.6.5", ""},
		{nil, ""},
	} {
		if got := nomadConfigVersion(tc.in); got != tc.want {
			t.Errorf("nomadConfigVersion(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := strings.Join(distinct([]string{"1.7.0", "", "1.6.5", "1.7.0"}), ", "); got != "1.6.5, 1.7.0" {
		t.Errorf("distinct = %q", got)
	}
}

func TestEtcdAddressValidated(t *testing.T) {
	t.Setenv("APISIX_ETCD", "")
	_, err := New(&providers.NewRequest{Name: "n", Config: &Config{EtcdAddress: "127.0.0.1:2379"}})
	if err == nil || !strings.Contains(err.Error(), `etcd_address: "127.0.0.1:2379" is not http(s)://host:port`) {
		t.Errorf("error = %v", err)
	}
	// From the environment, with the gateway on.
	t.Setenv("APISIX_ETCD", "etcd:2379")
	_, err = New(&providers.NewRequest{Name: "n", Config: &Config{Gateway: true, APISIXAdmin: "http://127.0.0.1:9180", GatewayURL: "http://127.0.0.1:9080"}})
	if err == nil || !strings.Contains(err.Error(), `etcd_address: "etcd:2379"`) || !strings.Contains(err.Error(), "APISIX_ETCD") {
		t.Errorf("error = %v", err)
	}
}

func TestGatewayPIDFileValidated(t *testing.T) {
	t.Setenv("APISIX_ETCD", "")
	t.Setenv("APISIX_PID_FILE", "")
	gw := Config{Gateway: true, APISIXAdmin: "http://127.0.0.1:9180", GatewayURL: "http://127.0.0.1:9080"}
	c := gw
	c.GatewayPIDFile = "logs/nginx.pid"
	_, err := New(&providers.NewRequest{Name: "n", Config: &c})
	if err == nil || !strings.Contains(err.Error(), `gateway_pid_file: "logs/nginx.pid" is not an absolute path`) {
		t.Errorf("relative gateway_pid_file: error = %v", err)
	}
	// From the environment, with the gateway on; and an absolute path is taken.
	t.Setenv("APISIX_PID_FILE", "nginx.pid")
	c = gw
	if _, err = New(&providers.NewRequest{Name: "n", Config: &c}); err == nil || !strings.Contains(err.Error(), "APISIX_PID_FILE") {
		t.Errorf("relative APISIX_PID_FILE: error = %v", err)
	}
	t.Setenv("APISIX_PID_FILE", "/srv/apisix/logs/nginx.pid")
	p, err := New(&providers.NewRequest{Name: "n", Config: &c})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*Provider).s.GatewayPIDFile; got != "/srv/apisix/logs/nginx.pid" {
		t.Errorf("gateway_pid_file from APISIX_PID_FILE = %q", got)
	}
}

// TestReadyTimeoutGrammar: ready_timeout reads durations as every step
// does (units.ParseDuration): a bare number is seconds; unset is 2 minutes.
func TestReadyTimeoutGrammar(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 2 * time.Minute, "90": 90 * time.Second, "1m30s": 90 * time.Second} {
		s, err := resolve(&Config{Driver: "raw_exec", ReadyTimeout: in})
		if err != nil || s.ready != want {
			t.Errorf("ready_timeout %q: %v, %v; want %v", in, s, err, want)
		}
	}
}
