package plan_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
)

const gatedClaims = `
pipeline "p" {}
variable "paths" { default = ["direct", "gateway"] }
matrix { path = var.paths }
step "load" "main" {
  target   = "http://127.0.0.1:1/${matrix.path}"
  duration = "1s"
}
claim "gateway-rps" {
  enabled = contains(var.paths, "gateway")
  metric  = "rps"
  cell    = { path = "gateway" }
  versus  = { path = "direct" }
  ratio   = "< 0.6"
}
claim "literal-on" {
  enabled = true
  metric  = "rps"
  cell    = { path = "direct" }
  value   = "> 1"
}
claim "always" {
  metric = "rps"
  cell   = { path = "direct" }
  value  = "> 1"
}
claim "literal-off" {
  enabled = false
  metric  = "rps"
  cell    = { path = "nowhere" }
  value   = "> 1"
}
`

func claimNames(pl *plan.Plan) (on, off []string) {
	for _, cp := range pl.Claims {
		on = append(on, cp.Claim.Name)
	}
	for _, c := range pl.ClaimsOff {
		off = append(off, c.Name)
	}
	return on, off
}

func TestClaimEnabled(t *testing.T) {
	for _, tc := range []struct {
		name         string
		vars         map[string]string
		on, off      []string
		gatewayCells int
	}{
		{name: "both paths", on: []string{"gateway-rps", "literal-on", "always"}, off: []string{"literal-off"}, gatewayCells: 1},
		{name: "direct only", vars: map[string]string{"paths": `["direct"]`}, on: []string{"literal-on", "always"}, off: []string{"gateway-rps", "literal-off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := mustBuild(t, gatedClaims, plan.Inputs{Vars: tc.vars})
			on, off := claimNames(pl)
			if diff := cmp.Diff(tc.on, on); diff != "" {
				t.Errorf("claims on differ (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.off, off); diff != "" {
				t.Errorf("claims off differ (-want +got):\n%s", diff)
			}
			for _, cp := range pl.Claims {
				if cp.Claim.Name == "gateway-rps" && (len(cp.Cells) != tc.gatewayCells || len(cp.Versus) != tc.gatewayCells) {
					t.Errorf("gateway-rps selects cells %v versus %v, want %d of each", cp.Cells, cp.Versus, tc.gatewayCells)
				}
			}

			var text bytes.Buffer
			if err := pl.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for _, name := range tc.off {
				if !strings.Contains(text.String(), name) || !lineHas(text.String(), name, "off (enabled = false)") {
					t.Errorf("plan text does not say claim %s is off:\n%s", name, text.String())
				}
			}
			for _, name := range tc.on {
				if lineHas(text.String(), name, "off (enabled = false)") || !lineHas(text.String(), name, "step main") {
					t.Errorf("plan text does not list claim %s as on:\n%s", name, text.String())
				}
			}

			var js bytes.Buffer
			if err := pl.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var jp plan.JSONPlan
			if err := json.Unmarshal(js.Bytes(), &jp); err != nil {
				t.Fatal(err)
			}
			var jsOn []string
			for _, c := range jp.Claims {
				jsOn = append(jsOn, c.Name)
			}
			if diff := cmp.Diff(tc.on, jsOn); diff != "" {
				t.Errorf("plan JSON claims differ (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.off, jp.ClaimsOff); diff != "" {
				t.Errorf("plan JSON claims_off differ (-want +got):\n%s", diff)
			}
		})
	}
}

// lineHas reports whether a line of text that starts with name (after
// the indent) also contains want.
func lineHas(text, name, want string) bool {
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name && strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// A claim that is off is not matched against the axis values, but its
// step, metric and axis names are still checked: they do not depend on the
// variables, so a mistake there is a mistake whatever the variables.
func TestClaimOffStillChecksNames(t *testing.T) {
	src := strings.Replace(gatedClaims, `cell    = { path = "nowhere" }`, `cell    = { pth = "nowhere" }`, 1)
	_, diags := build(t, src, plan.Inputs{})
	if !diags.HasErrors() || diags[0].Summary != "Unknown claim parameter" || diags[0].Subject == nil || diags[0].Subject.Start.Line != 30 {
		t.Errorf("want Unknown claim parameter at p.hcl:30, got %v", diags)
	}
	src = strings.Replace(gatedClaims, "  enabled = false\n  metric  = \"rps\"", "  enabled = false\n  metric  = \"cpu_infra_pct\"", 1)
	_, diags = build(t, src, plan.Inputs{})
	if !diags.HasErrors() || diags[0].Summary != "Claim on a metric no step records" {
		t.Errorf("want Claim on a metric no step records, got %v", diags)
	}
}

func TestClaimEnabledErrors(t *testing.T) {
	for _, tc := range []struct {
		name, enabled, summary, detail string
	}{
		{"matrix", `matrix.path == "gateway"`, "Invalid reference in claim enabled", "refers to matrix.path; it may only use variables (var.*) and functions"},
		{"local", `local.on`, "Invalid reference in claim enabled", "refers to local.on"},
		{"service", `service.web.url != ""`, "Invalid reference in claim enabled", "refers to service.web.url"},
		{"string", `"yes"`, "Invalid claim enabled", "must be true or false, like contains(var.paths, \"gateway\"); got a string"},
		{"number", `length(var.paths)`, "Invalid claim enabled", "got a number"},
		{"null", `null`, "Invalid claim enabled", "got null"},
		{"undeclared variable", `var.gateway`, "Unsupported attribute", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(gatedClaims, `enabled = contains(var.paths, "gateway")`, "enabled = "+tc.enabled, 1)
			_, diags := build(t, src, plan.Inputs{})
			if len(diags) != 1 || diags[0].Summary != tc.summary || !strings.Contains(diags[0].Detail, tc.detail) {
				t.Fatalf("want one %q error with %q, got %v", tc.summary, tc.detail, diags)
			}
			if s := diags[0].Subject; s == nil || s.Filename != "p.hcl" || s.Start.Line != 10 || s.Start.Column < 13 {
				t.Errorf("error located at %v, want p.hcl:10 in the enabled expression", s)
			}
		})
	}
}

// An enabled whose value is not known (a function that cannot be
// computed before the run) is an error: the claim could not be matched.
func TestClaimEnabledUnknown(t *testing.T) {
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(gatedClaims)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	at := p.Claims[0].EnabledRange
	p.Claims[0].Enabled = hcl.StaticExpr(cty.UnknownVal(cty.Bool), at)
	_, diags = plan.Build(p, plan.Inputs{})
	if len(diags) != 1 || diags[0].Summary != "Invalid claim enabled" || !strings.Contains(diags[0].Detail, "not known before the run") {
		t.Fatalf("want an Invalid claim enabled error, got %v", diags)
	}
	if s := diags[0].Subject; s == nil || *s != at {
		t.Errorf("error located at %v, want %v", s, at)
	}
}
