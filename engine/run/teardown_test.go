package run

import (
	"context"
	"testing"

	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

type orderDep struct {
	name string
	log  *[]string
}

func (d orderDep) Endpoint() providers.Endpoint { return providers.Endpoint{} }
func (d orderDep) Teardown(context.Context) error {
	*d.log = append(*d.log, "stop "+d.name)
	return nil
}

// TestTeardownIsOneStack: services and tune changes are undone in one
// reverse order, so a setting made before a service started is restored
// after it stopped, and one made after it is restored before.
func TestTeardownIsOneStack(t *testing.T) {
	var log []string
	r := New(&plan.Plan{}, Options{OutDir: t.TempDir()})
	tr := &trialRun{r: r, trial: &plan.Trial{ID: "c01-r1"}, rec: &results.TrialRecord{Status: results.StatusOK},
		services: map[string]*liveService{}}
	undo := func(what string) func(context.Context) error {
		return func(context.Context) error { log = append(log, "undo "+what); return nil }
	}
	tr.pushUndo("sysctl before", undo("sysctl before"))
	for _, name := range []string{"db", "web"} {
		l := &liveService{name: name, dep: orderDep{name, &log}}
		tr.services[name] = l
		tr.svcOrder = append(tr.svcOrder, name)
		tr.pushService(l)
	}
	tr.pushUndo("affinity after", undo("affinity after"))
	tr.teardown(nil)
	want := []string{"undo affinity after", "stop web", "stop db", "undo sysctl before"}
	if len(log) != len(want) {
		t.Fatalf("teardown did %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("teardown did %q, want %q", log, want)
		}
	}
	// A second teardown (a forced exit after a graceful one) does nothing twice.
	tr.teardown(nil)
	if len(log) != len(want) {
		t.Errorf("a second teardown did more: %q", log)
	}
}
