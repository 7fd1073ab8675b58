package starconf_test

import (
	"testing"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

// TestTwinsAreOneStudy: the quickstart and its Starlark twin have one
// StudySHA256 (compare calls their runs the same study), so has the
// quickstart with other repetitions, and another pipeline has another.
func TestTwinsAreOneStudy(t *testing.T) {
	hp, d := hclconf.ParseFile("../../pipelines/quickstart.hcl")
	if d.HasErrors() {
		t.Fatal(d)
	}
	sp, d := starconf.ParseFile("../../pipelines/quickstart.star")
	if d.HasErrors() {
		t.Fatal(d)
	}
	op, d := hclconf.ParseFile("../../pipelines/capacity.hcl")
	if d.HasErrors() {
		t.Fatal(d)
	}
	sum := func(p *plan.Plan, d interface{ HasErrors() bool }) string {
		t.Helper()
		if d.HasErrors() {
			t.Fatal(d)
		}
		return p.StudySHA256()
	}
	h := sum(plan.Build(hp, plan.Inputs{}))
	if s := sum(plan.Build(sp, plan.Inputs{})); s != h || h == "" {
		t.Errorf("quickstart.hcl %s, quickstart.star %s: want one study", h, s)
	}
	if r := sum(plan.Build(hp, plan.Inputs{Repetitions: 5})); r != h {
		t.Errorf("--repetitions 5 changed the study: %s vs %s", r, h)
	}
	if v := sum(plan.Build(hp, plan.Inputs{Vars: map[string]string{"duration": "7s"}})); v == h {
		t.Error("--var duration=7s did not change the study")
	}
	if o := sum(plan.Build(op, plan.Inputs{})); o == h {
		t.Error("capacity.hcl has the quickstart's study digest")
	}
}
