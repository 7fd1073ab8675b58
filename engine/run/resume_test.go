package run

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
)

// TestResumeKeepsRecordedSeed resumes a run in random order without
// --seed: opening the run re-plans with the seed its manifest recorded, so
// the trials are the same and every one is found complete.
func TestResumeKeepsRecordedSeed(t *testing.T) {
	src := "pipeline \"r\" {\n  order = \"random\"\n  repetitions = 2\n}\nmatrix {\n  x = [\"a\", \"b\", \"c\"]\n}\nstep \"exec\" \"noop\" {\n  command = [\"true\"]\n}\n"
	p, d := hclconf.Parse(fstest.MapFS{"r.hcl": {Data: []byte(src)}}, "r.hcl", "r.hcl")
	if d.HasErrors() {
		t.Fatal(d)
	}
	seed := int64(7)
	first, d := plan.Build(p, plan.Inputs{Seed: &seed})
	if d.HasErrors() {
		t.Fatal(d)
	}
	out := t.TempDir()
	s, err := Apply(context.Background(), first, Options{OutDir: out, NoGC: true, Version: "test"})
	if err != nil || s.OK != 6 {
		t.Fatalf("first run: %+v, %v", s, err)
	}
	again, d := plan.Build(p, plan.Inputs{}) // no --seed: a new random seed
	if d.HasErrors() {
		t.Fatal(d)
	}
	if again.Seed == seed {
		t.Skip("the new plan drew the same seed")
	}
	r := New(again, Options{OutDir: out, Resume: s.Dir, NoGC: true, Version: "test"})
	s2, err := r.Apply(context.Background())
	if err != nil || s2.Skipped != 6 || s2.OK != 0 {
		t.Fatalf("resume without --seed: %+v, %v", s2, err)
	}
	if r.plan.Seed != seed {
		t.Errorf("resumed with seed %d, want the recorded %d", r.plan.Seed, seed)
	}
	// A --seed that differs from the run's is refused, naming the seed.
	other := int64(8)
	third, _ := plan.Build(p, plan.Inputs{Seed: &other})
	if _, err := Apply(context.Background(), third, Options{OutDir: out, Resume: s.Dir, NoGC: true, Version: "test"}); err == nil {
		t.Error("resuming with another --seed succeeded")
	}
}
