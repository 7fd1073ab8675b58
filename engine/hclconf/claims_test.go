package hclconf_test

import (
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func decodeClaimBody(t *testing.T, src string) (*claims.Claim, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "c.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	at := hcl.Range{Filename: "c.hcl", Start: hcl.InitialPos, End: hcl.InitialPos}
	return claims.Decode("c", at, f.Body)
}

// TestDecodeClaimEnabled: enabled is kept as an expression (evaluated by
// engine/plan with the variables) with its range, for every kind of claim.
func TestDecodeClaimEnabled(t *testing.T) {
	for _, tc := range []struct{ name, src, expr string }{
		{"value", "metric = \"rps\"\nvalue = \"> 1\"\nenabled = contains(var.paths, \"gateway\")\n", `contains(var.paths, "gateway")`},
		{"ratio", "metric = \"rps\"\ncell = { a = 1 }\nversus = { a = 2 }\nratio = \"< 1\"\nenabled = false\n", "false"},
		{"verdict", "cell = { a = 1 }\nverdict = \"server-bound\"\nenabled = var.on\n", "var.on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, diags := decodeClaimBody(t, tc.src)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if c.Enabled == nil {
				t.Fatal("enabled was not kept")
			}
			r := c.EnabledRange
			lines := strings.Split(tc.src, "\n")
			if r.Filename != "c.hcl" || r.Start.Line < 1 || r.Start.Line > len(lines) {
				t.Fatalf("enabled range %v", r)
			}
			line := lines[r.Start.Line-1]
			if got := line[r.Start.Column-1 : r.End.Column-1]; got != tc.expr {
				t.Errorf("enabled range covers %q, want %q", got, tc.expr)
			}
		})
	}
	c, diags := decodeClaimBody(t, "metric = \"rps\"\nvalue = \"> 1\"\n")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if c.Enabled != nil || c.EnabledRange != c.DeclRange {
		t.Errorf("without enabled: Enabled = %v, EnabledRange = %v (want nil, the claim's range)", c.Enabled, c.EnabledRange)
	}
}

func TestDecodeClaimEnabledMisspelt(t *testing.T) {
	_, diags := decodeClaimBody(t, "metric = \"rps\"\nvalue = \"> 1\"\nenable = false\n")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `Did you mean "enabled"?`) || diags[0].Subject.Start.Line != 3 {
		t.Errorf("want an unsupported argument error at line 3 suggesting enabled, got %v", diags)
	}
}
