package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/sandbox"
	_ "github.com/benchflow/benchflow/providers/ssh"
)

// TestSSHNeedsNetwork: a service on an ssh provider runs on another
// machine, which the sandbox's own loopback cannot reach: the plan asks
// for host-network, naming the service.
func TestSSHNeedsNetwork(t *testing.T) {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(kh, nil, 0o600)
	src := `pipeline "p" {}
provider "ssh" "server" {
  address     = "10.0.0.2"
  known_hosts = "` + kh + `"
}
service "web" {
  provider = "server"
  command  = ["/usr/sbin/nginx", "-g", "daemon off;"]
  port "http" { host = 8080 }
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 10
}
`
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := plan.Build(p, plan.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tp := Inspect(pl)
	m := tp.Missing(nil)
	if len(m) != 1 || m[0].Grant != sandbox.GrantHostNetwork {
		t.Fatalf("needs %+v, want host-network", tp.Needs)
	}
	if !strings.Contains(strings.Join(m[0].Why, "; "), "service web runs on provider server (ssh)") {
		t.Errorf("the need does not name the service: %+v", m[0])
	}
}
