package trust

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	_ "github.com/benchflow/benchflow/providers/local"
)

// TestPlanShowsPortsAsUnknowns: a service's ports are free ports chosen
// at run time; the plan shows where each goes in the command and
// version_command as ${self.port.NAME}, not as the 0 the plan's
// evaluation uses, and leaves a fixed port and every other argument as
// they are.
func TestPlanShowsPortsAsUnknowns(t *testing.T) {
	src := `pipeline "p" {}
service "web" {
  command         = ["/bin/server", "--addr", "127.0.0.1:${self.port.http}", "--admin=${self.port.admin}", "--fixed", "${self.port.fixed}", "--workers", "0"]
  version_command = ["/bin/server", "--probe", "${self.port.http}"]
  port "http" {}
  port "admin" {}
  port "fixed" { host = 8080 }
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
	if len(tp.Services) == 0 {
		t.Fatal("no service in the plan")
	}
	sv := tp.Services[0]
	want := "/bin/server --addr 127.0.0.1:${self.port.http} --admin=${self.port.admin} --fixed 8080 --workers 0"
	if got := strings.Join(sv.Command, " "); got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if got := strings.Join(sv.VersionCommand, " "); got != "/bin/server --probe ${self.port.http}" {
		t.Errorf("version_command %q", got)
	}
}
