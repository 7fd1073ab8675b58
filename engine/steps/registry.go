package steps

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// Kind declares one step kind: everything the front ends, engine/plan and
// engine/run need to know about it — declaration only: how a kind runs is
// engine/run's (one executor per kind, engine/run/executors.go). Each kind lives in its own file of
// this package, is built by KindOf from its typed Spec and is listed once
// in kinds below. The functions of a Kind take the config as any (its
// callers handle every kind alike); KindOf writes the one assertion.
type Kind struct {
	// Name is the first label of `step "<name>" "…"` and the Starlark
	// builtin step.<name>.
	Name string
	// Phase orders kinds in the DAG when no reference does: 0 provision,
	// 1 tune, 2 check/exec, 3 warm, 4 load (collect runs during a load).
	Phase int
	// Behaviour is what engine/plan and engine/run ask of a kind instead
	// of testing its name.
	Behaviour
	// NewConfig returns a pointer to the zero schema struct of a step's
	// body: gohcl tags for attributes and nested blocks alike (a load
	// step's url and search blocks). engine/hclconf and engine/starconf
	// check bodies against it when parsing; engine/plan decodes each
	// trial's body into it.
	NewConfig func() any
	// Blocks spells the nested blocks of the schema for Starlark, which
	// writes them as keyword arguments (urls = [{…}], search = {…}).
	Blocks []Block
	// Validate checks a decoded body (NewConfig's type) for one trial;
	// every diagnostic has a source range (see AttrErr).
	Validate func(st *pipeline.Step, cfg any) hcl.Diagnostics
	// Refs reports what a decoded body names outside the step (services,
	// files), which plan checks exist; nil when it names nothing.
	Refs func(cfg any) Refs
	// Deploys reports the services a decoded body deploys when the step
	// runs (a provision step's services); nil when the kind deploys none.
	// Services no such step names are deployed before all other steps.
	Deploys func(cfg any) []string
}

// Behaviour declares how a kind takes part in a trial.
type Behaviour struct {
	// During: the step does not run in sequence but during the driving
	// step its during attribute names (collect), which it must name.
	During bool
	// Drives: the step drives load at the services and its body is a
	// *LoadConfig (load, warm). Driving steps never overlap; during
	// steps run alongside them; they make up a trial's estimated time.
	Drives bool
	// Measures: the step's results are the measurement (load), which
	// max_error_ratio checks and adaptive repetition observes. A driving
	// kind that does not measure warms: its results are tagged warm, it
	// may run until = "steady", and its default duration is shorter.
	Measures bool
}

// Warms reports a driving kind whose results are not the measurement.
func (b Behaviour) Warms() bool { return b.Drives && !b.Measures }

// Spec declares a step kind whose body decodes into a C (a struct with
// gohcl tags): the kind's own code receives a *C, never an any.
type Spec[C any] struct {
	Name   string
	Phase  int
	Blocks []Block
	Behaviour
	// Validate checks a decoded body for one trial (nil: nothing to
	// check beyond the schema).
	Validate func(st *pipeline.Step, c *C) hcl.Diagnostics
	// Refs reports what the body names outside the step (nil: nothing).
	Refs func(c *C) Refs
	// Deploys reports the services the step deploys (nil: none).
	Deploys func(c *C) []string
}

// KindOf builds the Kind of s: NewConfig returns a fresh *C, and Validate,
// Refs and Deploys assert the config they are given to *C once, here, before
// calling s's typed functions. A config of another type is a programming
// error in the caller (the config did not come from this kind's
// NewConfig) and panics with both types named.
func KindOf[C any](s Spec[C]) *Kind {
	k := &Kind{
		Name:      s.Name,
		Phase:     s.Phase,
		Blocks:    s.Blocks,
		Behaviour: s.Behaviour,
		NewConfig: func() any { return new(C) },
		Validate: func(st *pipeline.Step, cfg any) hcl.Diagnostics {
			if s.Validate == nil {
				return nil
			}
			return s.Validate(st, configOf[C](s.Name, cfg))
		},
	}
	if s.Refs != nil {
		k.Refs = func(cfg any) Refs { return s.Refs(configOf[C](s.Name, cfg)) }
	}
	if s.Deploys != nil {
		k.Deploys = func(cfg any) []string { return s.Deploys(configOf[C](s.Name, cfg)) }
	}
	return k
}

// configOf is the one assertion of a step's config to its kind's type.
func configOf[C any](kind string, cfg any) *C {
	c, ok := cfg.(*C)
	if !ok || c == nil {
		panic(fmt.Sprintf("steps: %s step given a config of type %T, want %T", kind, cfg, c))
	}
	return c
}

// Block is how a nested block of a step's schema is written in Starlark.
type Block struct {
	Keyword string // the keyword argument: "urls"
	Type    string // the HCL block type: "url"
	Labeled bool   // a dict of label → attributes (file, port)
	Many    bool   // a list of attribute dicts (url)
}

// Refs are the names a step's body uses outside the step.
type Refs struct {
	Services []string  // service names
	Files    []FileRef // files read from the pipeline's folder
}

// FileRef is a file an attribute names. Check, when set, is the rule its
// content must meet (engine/plan applies it when the pipeline is
// validated, so that a file that would fail the run fails validation).
type FileRef struct {
	Attr, Path string
	Check      func(data []byte) error
}

// kinds lists every step kind, in the order messages name them. A new
// kind is one file declaring a *Kind and one entry here.
var kinds = []*Kind{provisionKind, tuneKind, warmKind, loadKind, collectKind, checkKind, execKind}

var byName = func() map[string]*Kind {
	m := map[string]*Kind{}
	for _, k := range kinds {
		if m[k.Name] != nil {
			panic("steps: step kind " + k.Name + " declared twice")
		}
		m[k.Name] = k
	}
	return m
}()

// Lookup returns the kind named name, or nil.
func Lookup(name string) *Kind { return byName[name] }

// BehaviourOf returns the behaviour the kind named name declares (none
// for an unknown kind, which validation reports).
func BehaviourOf(name string) Behaviour {
	if k := byName[name]; k != nil {
		return k.Behaviour
	}
	return Behaviour{}
}

// LoadOf returns the body of a driving step (Behaviour.Drives: load,
// warm), decoded by its kind's NewConfig.
func LoadOf(cfg any) *LoadConfig { return configOf[LoadConfig]("load or warm", cfg) }

// CollectOf returns the body of a collect step, decoded by its kind's
// NewConfig.
func CollectOf(cfg any) *pipeline.CollectConfig {
	return configOf[pipeline.CollectConfig](pipeline.KindCollect, cfg)
}

// Names lists every step kind's name, in declaration order.
func Names() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.Name
	}
	return out
}

// NewConfig returns a pointer to the zero schema struct of a step kind, or
// nil for an unknown kind.
func NewConfig(kind string) any {
	if k := Lookup(kind); k != nil {
		return k.NewConfig()
	}
	return nil
}
