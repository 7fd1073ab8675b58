package plan_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/providers"
)

// mounted is a provider that mounts files at /srv/files and listens on
// the container port, as the container providers do.
type mounted struct{}

func (mounted) Provision(context.Context, *providers.ProvisionRequest) (providers.Deployment, error) {
	return nil, errors.New("not for provisioning")
}
func (mounted) ServiceDir(string) string        { return "/srv/files" }
func (mounted) ListenPort(p providers.Port) int { return p.Container }

const preparePipeline = `
pipeline "prepare" {}
variable "token" {
  default   = "s3cr3t-token"
  sensitive = true
}
matrix {
  log = ["on", "off"]
}
service "web" {
  command = ["srv", "--listen", "${self.port.http}", "--dir", self.dir]
  port "http" { container = 80 }
  port "admin" { host = "9090" }
  health { http = "/" }
  file "site.conf" {
    template = file("t.tmpl")
    vars     = { log = matrix.log }
  }
  file "token" {
    content = var.token
    mode    = "0640"
  }
}
step "load" "main" {
  target   = service.web.url
  requests = 1
}
`

// TestPrepareServicePlacements: the one evaluation of a service gives
// self.* from its placement — the plan's placeholders, a provider's
// mount and listen port, the run's folder and allocated port — and the
// same body and files otherwise.
func TestPrepareServicePlacements(t *testing.T) {
	pl := mustBuild(t, preparePipeline, plan.Inputs{})
	te := pl.NewTrialEval(pl.Trials[1], true)
	svc := pl.Pipeline.Services[0]
	cases := []struct {
		name    string
		at      plan.Placement
		command []string
		hosts   []int
		site    string
	}{
		{"plan", plan.Placement{},
			[]string{"srv", "--listen", "80", "--dir", "${self.dir}"}, []int{80, 9090}, "listen 80; log off;\n"},
		{"provider", plan.Placement{Provider: mounted{}},
			[]string{"srv", "--listen", "80", "--dir", "/srv/files"}, []int{80, 9090}, "listen 80; log off;\n"},
		{"run", plan.Placement{Dir: "/tmp/svc", HostPort: func() (int, error) { return 40001, nil }},
			[]string{"srv", "--listen", "40001", "--dir", "/tmp/svc"}, []int{40001, 9090}, "listen 40001; log off;\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps, diags := te.PrepareService(svc, c.at)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if diff := cmp.Diff(c.command, ps.Spec.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			var hosts []int
			for _, p := range ps.Spec.Ports {
				hosts = append(hosts, p.Host)
			}
			if diff := cmp.Diff(c.hosts, hosts); diff != "" {
				t.Errorf("host ports (-want +got):\n%s", diff)
			}
			if ps.Spec.Dir != c.at.Dir || ps.Spec.Files != nil {
				t.Errorf("spec dir %q, files %v: the files are written by the caller", ps.Spec.Dir, ps.Spec.Files)
			}
			if h := ps.Spec.Health; h.HTTPPath != "/" || h.PortName != "http" {
				t.Errorf("health = %+v", h)
			}
			if len(ps.Files) != 2 {
				t.Fatalf("%d files", len(ps.Files))
			}
			site, tok := ps.Files[0], ps.Files[1]
			if string(site.Data) != c.site || site.From != "template" {
				t.Errorf("site.conf = %q from %s", site.Data, site.From)
			}
			// A pipeline with a sensitive variable runs privately: every
			// file is its owner's only, whatever its mode.
			if !ps.Private || tok.From != "content" || tok.Mode != 0o600 || site.Mode != 0o600 || string(tok.Data) != "s3cr3t-token" {
				t.Errorf("private %v; token %+v; site mode %o", ps.Private, tok, site.Mode)
			}
		})
	}
}

// TestPrepareServiceNoFreePort: a port the run cannot allocate is a
// diagnostic about the service, and nothing is prepared.
func TestPrepareServiceNoFreePort(t *testing.T) {
	pl := mustBuild(t, `
pipeline "p" {}
service "web" {
  command = ["srv"]
  port "http" {}
  file "ok" { content = "fine" }
}
step "load" "main" {
  target   = service.web.url
  requests = 1
}
`, plan.Inputs{})
	te := pl.NewTrialEval(pl.Trials[0], false)
	ps, diags := te.PrepareService(pl.Pipeline.Services[0], plan.Placement{HostPort: func() (int, error) { return 0, errors.New("no port left") }})
	if ps != nil || len(diags) != 1 || diags[0].Summary != "No free port" || diags[0].Subject == nil {
		t.Fatalf("prepared %+v, %v", ps, diags)
	}
	if want := `Allocating port "http" of service "web": no port left.`; diags[0].Detail != want {
		t.Errorf("detail %q, want %q", diags[0].Detail, want)
	}
}

// picker is a container provider whose platform picks host ports itself
// (providers.HostPortPicker), as Docker does on a bridge network.
type picker struct{ mounted }

func (picker) PicksHostPort(p providers.Port) bool { return p.Container != 0 }

// TestPrepareServiceLetsThePlatformPick: for a provider whose platform
// picks the host port, an "auto" port with a container port is left at
// host 0 (the platform picks it at the start, no free port is chosen
// first that another process could take before the bind); a port with
// a fixed host keeps it; self.port is the container port.
func TestPrepareServiceLetsThePlatformPick(t *testing.T) {
	pl := mustBuild(t, preparePipeline, plan.Inputs{})
	te := pl.NewTrialEval(pl.Trials[0], true)
	asked := 0
	ps, diags := te.PrepareService(pl.Pipeline.Services[0], plan.Placement{Provider: picker{}, Dir: "/tmp/svc",
		HostPort: func() (int, error) { asked++; return 40001, nil }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var hosts []int
	for _, p := range ps.Spec.Ports {
		hosts = append(hosts, p.Host)
	}
	if diff := cmp.Diff([]int{0, 9090}, hosts); diff != "" || asked != 0 {
		t.Errorf("host ports (-want +got):\n%s; a free port was chosen %d times", diff, asked)
	}
	if ps.Listen["http"] != 80 || ps.Spec.Command[2] != "80" {
		t.Errorf("self.port.http = %d, command %v; want the container port 80", ps.Listen["http"], ps.Spec.Command)
	}
}
