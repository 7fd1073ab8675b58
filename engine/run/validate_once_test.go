package run

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/plan"
)

// TestLoadOptionsValidatedOncePerTrial counts load.Options.Validate over
// a run of two trials of a load step: once per trial when the plan is
// built (its dry run, where a value from a service is a placeholder) and
// once per trial when it runs (the step decoded for the trial, where the
// errors keep their locations; neither steps.LoadOptions nor the load
// check the options again).
func TestLoadOptionsValidatedOncePerTrial(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	src := fmt.Sprintf("pipeline \"v\" {\n  repetitions = 2\n}\nstep \"load\" \"l\" {\n  target = %q\n  connections = 1\n  threads = 1\n  requests = 5\n  duration = \"2s\"\n  timeout = \"1s\"\n}\n", srv.URL+"/")
	p, d := hclconf.Parse(fstest.MapFS{"v.hcl": {Data: []byte(src)}}, "v.hcl", "v.hcl")
	if d.HasErrors() {
		t.Fatal(d)
	}
	before := load.Validations()
	pl, d := plan.Build(p, plan.Inputs{})
	if d.HasErrors() {
		t.Fatal(d)
	}
	if n := load.Validations() - before; n != 2 {
		t.Errorf("building the plan of 2 trials validated the load options %d times, want 2", n)
	}
	// Opening the run digests the study (Plan.JSON, which decodes every
	// step of every trial as `plan --json` prints them): that is counted
	// apart.
	before = load.Validations()
	pl.JSON()
	digest := load.Validations() - before
	before = load.Validations()
	s, err := Apply(context.Background(), pl, Options{OutDir: t.TempDir(), NoGC: true, Version: "test"})
	if err != nil || s.OK != 2 {
		t.Fatalf("run: %+v, %v", s, err)
	}
	if n := load.Validations() - before - digest; n != 2 {
		t.Errorf("running 2 trials validated the load options %d times besides the study's digest (%d), want 2: once per trial", n, digest)
	}
}
