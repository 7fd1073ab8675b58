package starconf_test

import (
	"fmt"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

// A sweep written as a loop: one axis computed by a comprehension, one load
// step per connection count.
func ExampleParseSource() {
	src := []byte(`
pipeline("sweep", order = "sequential")
matrix(size = ["%dKiB" % (1 << i) for i in range(3)])
web = service("web", command = [benchflow.bin, "serve", "--size", matrix.size], ports = {"http": {}})
for c in [8, 64]:
    step.load("c%d" % c, target = web.url + "/", connections = c, duration = "1s")
`)
	p, diags := starconf.ParseSource(fstest.MapFS{}, "sweep.star", src)
	if diags.HasErrors() {
		fmt.Println(diags.Error())
		return
	}
	pl, diags := plan.Build(p, plan.Inputs{})
	if diags.HasErrors() {
		fmt.Println(diags.Error())
		return
	}
	for _, t := range pl.Trials {
		fmt.Println(t.ID, t.ParamString())
	}
	for _, s := range pl.Steps {
		fmt.Println(s.Addr(), s.Step.DeclRange.Start.Line)
	}
	// Output:
	// c01-r1 size=1KiB
	// c02-r1 size=2KiB
	// c03-r1 size=4KiB
	// load.c8 6
	// load.c64 6
}
