package plan_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
)

// BenchmarkPlanSteps plans pipelines of n exec steps: the time per step
// must stay flat as n grows (planning is linear in the number of steps).
//
//	go test -run '^$' -bench PlanSteps ./engine/plan
func BenchmarkPlanSteps(b *testing.B) {
	for _, n := range []int{500, 2000, 8000} {
		var src strings.Builder
		src.WriteString("pipeline \"many\" {}\nstep \"exec\" \"first\" {\n  command = [\"true\"]\n}\n")
		for i := range n {
			fmt.Fprintf(&src, "step \"exec\" \"s%d\" {\n  command = [\"true\", step.exec.first]\n}\n", i)
		}
		fsys := fstest.MapFS{"p.hcl": {Data: []byte(src.String())}}
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			for b.Loop() {
				p, diags := hclconf.Parse(fsys, "p.hcl", "p.hcl")
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				if _, diags := plan.Build(p, plan.Inputs{}); diags.HasErrors() {
					b.Fatal(diags)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
		})
	}
}
