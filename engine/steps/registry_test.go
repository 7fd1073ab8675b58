package steps

import (
	"reflect"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// TestKinds pins the registry: every kind the model names is declared once,
// in the order messages list them, with a schema, a validation and a phase
// ordering provision → tune → check/exec → warm → load.
func TestKinds(t *testing.T) {
	want := []string{pipeline.KindProvision, pipeline.KindTune, pipeline.KindWarm, pipeline.KindLoad, pipeline.KindCollect, pipeline.KindCheck, pipeline.KindExec}
	if got := Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	phases := map[string]int{"provision": 0, "tune": 1, "check": 2, "exec": 2, "warm": 3, "load": 4, "collect": 4}
	for _, name := range Names() {
		k := Lookup(name)
		if k == nil || k.Name != name || k.NewConfig == nil || k.Validate == nil {
			t.Fatalf("kind %q is incomplete: %+v", name, k)
		}
		if k.Phase != phases[name] {
			t.Errorf("kind %q: phase %d, want %d", name, k.Phase, phases[name])
		}
		if c := NewConfig(name); reflect.TypeOf(c).Kind() != reflect.Pointer {
			t.Errorf("kind %q: NewConfig returns %T, want a pointer to a struct", name, c)
		}
	}
	if Lookup("nosuch") != nil || NewConfig("nosuch") != nil {
		t.Error("an unknown kind was found")
	}
}

// TestBlocksMatchSchema checks that every Starlark block spelling names a
// nested block of its kind's schema, so a kind owns its nested blocks in
// one place (the struct tag) and Starlark cannot drift from HCL.
func TestBlocksMatchSchema(t *testing.T) {
	for _, name := range Names() {
		k := Lookup(name)
		typ := reflect.TypeOf(k.NewConfig()).Elem()
		blocks := map[string]bool{}
		for i := 0; i < typ.NumField(); i++ {
			if tag := typ.Field(i).Tag.Get("hcl"); strings.HasSuffix(tag, ",block") {
				blocks[strings.TrimSuffix(tag, ",block")] = true
			}
		}
		for _, b := range k.Blocks {
			if !blocks[b.Type] {
				t.Errorf("kind %q: Starlark block %q names block type %q, not in %s", name, b.Keyword, b.Type, typ)
			}
			delete(blocks, b.Type)
		}
		for b := range blocks {
			t.Errorf("kind %q: nested block %q has no Starlark spelling in Blocks", name, b)
		}
	}
}

// TestBehaviour pins what each kind declares instead of being tested by
// name: collect runs during a driving step, load and warm drive (only load
// measures), provision deploys its services, and the driving and collect
// bodies are read back through LoadOf and CollectOf.
func TestBehaviour(t *testing.T) {
	want := map[string]Behaviour{
		"provision": {}, "tune": {}, "check": {}, "exec": {},
		"warm":    {Drives: true},
		"load":    {Drives: true, Measures: true},
		"collect": {During: true},
	}
	for _, name := range Names() {
		if got := BehaviourOf(name); got != want[name] {
			t.Errorf("%s: behaviour %+v, want %+v", name, got, want[name])
		}
		k := Lookup(name)
		if (k.Deploys != nil) != (name == "provision") {
			t.Errorf("%s: Deploys set = %v", name, k.Deploys != nil)
		}
		if b := k.Behaviour; b.Drives && LoadOf(k.NewConfig()) == nil {
			t.Errorf("%s: LoadOf of its config is nil", name)
		}
	}
	if BehaviourOf("nope") != (Behaviour{}) {
		t.Error("an unknown kind declares a behaviour")
	}
	if !BehaviourOf("warm").Warms() || BehaviourOf("load").Warms() {
		t.Error("Warms: want warm only")
	}
	if CollectOf(Lookup("collect").NewConfig()) == nil {
		t.Error("CollectOf of a collect config is nil")
	}
	got := Lookup("provision").Deploys(&pipeline.ProvisionConfig{Services: []string{"a", "b"}})
	if !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("provision deploys %v, want [a b]", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("LoadOf of a collect config did not panic")
		}
	}()
	LoadOf(Lookup("collect").NewConfig())
}
