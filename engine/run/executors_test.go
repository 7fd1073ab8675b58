package run

import (
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// TestEveryKindHasAnExecutor: every step kind engine/steps declares runs
// through an executor of its own here, unless it runs during another step
// (collect); and nothing here runs a kind that is not declared.
func TestEveryKindHasAnExecutor(t *testing.T) {
	for _, name := range steps.Names() {
		k := steps.Lookup(name)
		if _, ok := executors[name]; ok == k.During {
			t.Errorf("kind %q: executor registered = %v, During = %v (a kind runs on its own, or during another step)", name, ok, k.During)
		}
	}
	for name := range executors {
		if steps.Lookup(name) == nil {
			t.Errorf("an executor for %q, which engine/steps does not declare", name)
		}
	}
}

// TestExecutorAssertsItsConfig: a config of another kind's type is named
// in a panic, not run.
func TestExecutorAssertsItsConfig(t *testing.T) {
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.HasPrefix(s, "run: tune step given a config of type *pipeline.ExecConfig") {
			t.Errorf("recovered %v, want the run: panic naming both types", r)
		}
	}()
	executors["tune"](t.Context(), stepTrial{}, &pipeline.Step{Kind: "tune", Name: "t"}, steps.NewConfig("exec"))
}
