package k8s_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/k8s"
)

const ingressPipeline = "../../pipelines/k8s-ingress.hcl"

// TestIngressPipelineRenders plans pipelines/k8s-ingress.hcl as
// `benchflow plan` does, decodes its provider block into k8s.Config with the
// engine, renders the service's files and prints the manifests of each
// trial: the path `benchflow render --provider k8s` takes, without a
// cluster.
func TestIngressPipelineRenders(t *testing.T) {
	p, diags := hclconf.ParseFile(ingressPipeline)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	pl, diags := plan.Build(p, plan.Inputs{Vars: map[string]string{"ingress_host": "nginx.bench.test"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if len(pl.Trials) != 4 {
		t.Errorf("%d trials, want access_log on/off × 2 repetitions", len(pl.Trials))
	}
	seen := map[string]bool{}
	for _, tr := range pl.Trials {
		te := pl.NewTrialEval(tr, true)
		svc := p.Services[0]
		pv, diags := te.Provider(svc)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		typ, cfg, diags := te.ProviderConfig(pv)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		prov, err := typ.New(&providers.NewRequest{Name: pv.Name, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		kp := prov.(*k8s.Provider)
		if kp.Expose() != k8s.ExposeIngress {
			t.Errorf("expose = %q", kp.Expose())
		}
		dir := t.TempDir()
		self := plan.Self(svc.Name, kp.ServiceDir(svc.Name), map[string]int{"http": 80})
		sc, diags := te.Service(svc, self)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		req := &providers.ProvisionRequest{RunID: "20261130T060000Z-0001", TrialID: tr.ID,
			Service: providers.ServiceSpec{Name: svc.Name, Image: sc.Image, Command: sc.Command, Dir: dir}}
		for _, fc := range sc.Files {
			data, err := te.RenderFile(&fc, self)
			if err != nil {
				t.Fatal(err)
			}
			hp := filepath.Join(dir, fc.Name)
			if err := os.WriteFile(hp, data, 0o644); err != nil {
				t.Fatal(err)
			}
			req.Service.Files = append(req.Service.Files, providers.File{Name: fc.Name, HostPath: hp, Mount: fc.Mount})
		}
		for _, pc := range sc.Ports {
			req.Service.Ports = append(req.Service.Ports, providers.Port{Name: pc.Name, Container: pc.Container, Host: 18080})
		}
		out, err := kp.Render(req)
		if err != nil {
			t.Fatal(err)
		}
		y := string(out)
		for _, want := range []string{"kind: Ingress", "ingressClassName: nginx", "host: nginx.bench.test",
			"image: nginx:alpine", "mountPath: /etc/nginx/nginx.conf", "containerPort: 80"} {
			if !strings.Contains(y, want) {
				t.Errorf("trial %s: manifests lack %q", tr.ID, want)
			}
		}
		log := "access_log off;"
		if strings.Contains(tr.ParamString(), "access_log=on") {
			log = "access_log /dev/stdout;"
		}
		if !strings.Contains(y, log) {
			t.Errorf("trial %s (%s): nginx.conf lacks %q", tr.ID, tr.ParamString(), log)
		}
		seen[log] = true
	}
	if len(seen) != 2 {
		t.Errorf("the trials cover %v, want both access log settings", seen)
	}
}
