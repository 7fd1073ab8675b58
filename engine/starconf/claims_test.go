package starconf_test

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

type pipelineFile struct {
	name string
	p    *pipeline.Pipeline
}

func claimsOnOff(pl *plan.Plan) (on, off []string) {
	for _, cp := range pl.Claims {
		on = append(on, cp.Claim.Name)
	}
	for _, c := range pl.ClaimsOff {
		off = append(off, c.Name)
	}
	return on, off
}

// TestClaimEnabledStarlark: enabled takes an hcl() expression, an fn.*
// call or a literal bool, evaluated with the plan's variables as in HCL.
func TestClaimEnabledStarlark(t *testing.T) {
	src := `pipeline("p")
variable("paths", default = ["direct", "gateway"])
matrix(path = var.paths)
step.load("main", target = "http://127.0.0.1:1/" + matrix.path, duration = "1s")
claim("raw", enabled = hcl('contains(var.paths, "gateway")'), metric = "rps", cell = {"path": "gateway"}, value = "> 1")
claim("call", enabled = fn.contains(var.paths, "gateway"), metric = "rps", cell = {"path": "gateway"}, versus = {"path": "direct"}, ratio = "< 1")
claim("true", enabled = True, metric = "rps", cell = {"path": "direct"}, value = "> 1")
claim("false", enabled = False, metric = "rps", cell = {"path": "nowhere"}, value = "> 1")
claim("plain", metric = "rps", value = "> 1")
`
	p, diags := starconf.Parse(fstest.MapFS{"p.star": {Data: []byte(src)}}, "p.star", "p.star")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		on, off []string
	}{
		{"both paths", nil, []string{"raw", "call", "true", "plain"}, []string{"false"}},
		{"direct only", map[string]string{"paths": `["direct"]`}, []string{"true", "plain"}, []string{"raw", "call", "false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, diags := plan.Build(p, plan.Inputs{Vars: tc.vars})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			on, off := claimsOnOff(pl)
			if diff := cmp.Diff(tc.on, on); diff != "" {
				t.Errorf("claims on differ (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.off, off); diff != "" {
				t.Errorf("claims off differ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGatewayClaimsGated: pipelines/gateway.hcl and its twin validate
// with --var 'paths=["direct"]' (the documented way to run without
// APISIX), their claims then off; by default the claims are on and select
// their gateway cells. The twins plan identically both ways.
func TestGatewayClaimsGated(t *testing.T) {
	hp, hd := hclconf.ParseFile("../../pipelines/gateway.hcl")
	sp, sd := starconf.ParseFile("../../pipelines/gateway.star")
	if hd.HasErrors() || sd.HasErrors() {
		t.Fatalf("parsing: %s %s", hd.Error(), sd.Error())
	}
	claims := []string{"gateway-costs", "gateway-cpu"}
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		on, off []string
	}{
		{"direct only", map[string]string{"paths": `["direct"]`}, nil, claims},
		{"default", nil, claims, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var jsons []*plan.JSONPlan
			for _, p := range []*pipelineFile{{"gateway.hcl", hp}, {"gateway.star", sp}} {
				pl, diags := plan.Build(p.p, plan.Inputs{Vars: tc.vars})
				if diags.HasErrors() {
					t.Fatalf("%s does not validate: %s", p.name, diags.Error())
				}
				on, off := claimsOnOff(pl)
				if diff := cmp.Diff(tc.on, on); diff != "" {
					t.Errorf("%s: claims on differ (-want +got):\n%s", p.name, diff)
				}
				if diff := cmp.Diff(tc.off, off); diff != "" {
					t.Errorf("%s: claims off differ (-want +got):\n%s", p.name, diff)
				}
				for _, cp := range pl.Claims {
					if len(cp.Cells) == 0 {
						t.Errorf("%s: claim %s selects no cell", p.name, cp.Claim.Name)
					}
					for _, i := range cp.Cells {
						for _, prm := range pl.Cells[i].Params {
							if prm.Name == "path" && plan.ValueString(prm.Value) != "gateway" {
								t.Errorf("%s: claim %s selects a cell with path %s", p.name, cp.Claim.Name, plan.ValueString(prm.Value))
							}
						}
					}
				}
				jsons = append(jsons, pl.JSON())
			}
			if diff := cmp.Diff(jsons[0], jsons[1]); diff != "" {
				t.Errorf("plans differ (-hcl +star):\n%s", diff)
			}
		})
	}
}
