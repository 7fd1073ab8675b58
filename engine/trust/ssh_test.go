package trust

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/sandbox"
	"github.com/benchflow/benchflow/engine/sandbox/grant"
	"github.com/benchflow/benchflow/providers"
	_ "github.com/benchflow/benchflow/providers/ssh"
)

func inspectSource(t *testing.T, src string) *Plan {
	t.Helper()
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := plan.Build(p, plan.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return Inspect(pl)
}

// TestSSHNeedsItsGrant: a service on an ssh provider runs on another
// machine, logged in to with the reader's keys: the plan asks for the ssh
// grant (not host-network), naming the service and the host, and lists
// every host with every command run there (the agents' hosts too), and
// the local files the provider reads.
func TestSSHNeedsItsGrant(t *testing.T) {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(kh, nil, 0o600)
	src := `pipeline "p" {}
provider "ssh" "server" {
  address     = "10.0.0.2"
  user        = "deploy"
  known_hosts = "` + kh + `"
}
provider "ssh" "loaders" {
  addresses   = ["10.0.0.3", "10.0.0.4"]
  user        = "deploy"
  port        = 2222
  known_hosts = "` + kh + `"
}
service "web" {
  provider        = "server"
  command         = ["/usr/sbin/nginx", "-g", "daemon off;"]
  version_command = ["/usr/sbin/nginx", "-v"]
  port "http" { host = 8080 }
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 10
  agents {
    provider = "loaders"
    count    = 2
  }
}
`
	tp := inspectSource(t, src)
	m := tp.Missing(nil)
	if len(m) != 1 || m[0].Grant != "ssh" {
		t.Fatalf("needs %+v, want ssh alone", tp.Needs)
	}
	why := strings.Join(m[0].Why, "; ")
	for _, w := range []string{"service web runs on provider server (ssh), on deploy@10.0.0.2:22", "runs its agents on provider loaders (ssh), on deploy@10.0.0.3:2222, deploy@10.0.0.4:2222"} {
		if !strings.Contains(why, w) {
			t.Errorf("the need lacks %q: %s", w, why)
		}
	}
	if len(tp.Missing([]sandbox.Grant{"ssh"})) != 0 {
		t.Errorf("--allow ssh does not satisfy %+v", tp.Needs)
	}
	var hosts []string
	for _, h := range tp.Hosts {
		hosts = append(hosts, h.Host)
	}
	if want := []string{"deploy@10.0.0.2:22", "deploy@10.0.0.3:2222", "deploy@10.0.0.4:2222"}; !slices.Equal(hosts, want) {
		t.Fatalf("hosts %v, want %v", hosts, want)
	}
	web := strings.Join(tp.Hosts[0].Commands, "\n")
	for _, w := range []string{"uname -sm", "benchflow remote-helper", "/usr/sbin/nginx -g 'daemon off;'", "/usr/sbin/nginx -v"} {
		if !strings.Contains(web, w) {
			t.Errorf("the commands on %s lack %q:\n%s", tp.Hosts[0].Host, w, web)
		}
	}
	if a := strings.Join(tp.Hosts[2].Commands, "\n"); !strings.Contains(a, "benchflow agent --listen 0.0.0.0:0 --index 1") {
		t.Errorf("the commands on %s lack agent 1:\n%s", tp.Hosts[2].Host, a)
	}
	if !slices.Contains(tp.Reads, kh) {
		t.Errorf("reads %v, want %s", tp.Reads, kh)
	}
	var b strings.Builder
	tp.WriteText(&b)
	for _, w := range []string{"remote hosts", "deploy@10.0.0.2:22  (provider server)", "--allow ssh", "reads here: " + kh} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("the text plan lacks %q:\n%s", w, b.String())
		}
	}
}

// toyConfig is the config of the toy provider type of
// TestProviderDeclaresItsGrant.
type toyConfig struct {
	Where string `hcl:"where,optional"`
}

func (*toyConfig) Validate() error { return nil }

// toyProvider provisions nothing: the plan never provisions.
type toyProvider struct{}

func (toyProvider) Provision(context.Context, *providers.ProvisionRequest) (providers.Deployment, error) {
	return nil, context.Canceled
}

// TestProviderDeclaresItsGrant: a provider type registered here, in a
// test, declares a grant; the plan needs it for its services, the sandbox
// knows it (--allow parses it, its confinement line shows it, its network
// is the host's) and nothing in engine/sandbox or engine/trust names it.
func TestProviderDeclaresItsGrant(t *testing.T) {
	if _, ok := providers.Lookup("toy"); !ok {
		providers.Register(providers.TypeOf(providers.Spec[toyConfig]{
			Name: "toy",
			New:  func(string, *toyConfig) (providers.Provider, error) { return toyProvider{}, nil },
			Grant: &grant.Spec{
				Name:        "toy-socket",
				Meaning:     "the toy daemon's socket",
				HostNetwork: true,
				Describe:    func(func(string) string) string { return "toy-socket (granted): the toy daemon is reachable" },
			},
			Remote: func(c *toyConfig) *providers.Remote {
				return &providers.Remote{Services: "toy@" + c.Where, Commands: []string{"toyd --serve"}}
			},
		}))
	}
	tp := inspectSource(t, `pipeline "p" {}
provider "toy" "t" { where = "lab" }
service "web" {
  provider = "t"
  command  = ["server"]
  port "http" {}
}
`)
	if len(tp.Needs) != 1 || tp.Needs[0].Grant != "toy-socket" || !strings.Contains(tp.Needs[0].Why[0], "service web runs on provider t (toy), on toy@lab") {
		t.Fatalf("needs %+v, want toy-socket for service web", tp.Needs)
	}
	if len(tp.Hosts) != 1 || !slices.Equal(tp.Hosts[0].Commands, []string{"toyd --serve", "server"}) {
		t.Errorf("hosts %+v", tp.Hosts)
	}
	if g, err := sandbox.ParseGrant("toy-socket"); err != nil || g != "toy-socket" {
		t.Errorf("ParseGrant: %q, %v", g, err)
	}
	if GrantMeaning("toy-socket") != "the toy daemon's socket" {
		t.Errorf("meaning %q", GrantMeaning("toy-socket"))
	}
	d := strings.Join(sandbox.Spec{Grants: []sandbox.Grant{"toy-socket"}}.Describe(), "\n")
	for _, w := range []string{"toy-socket (granted): the toy daemon is reachable", "network: the host's (implied by toy-socket)"} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe lacks %q:\n%s", w, d)
		}
	}
}
