package run

import (
	"context"
	"fmt"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// executor runs a step of one kind in a trial, given its decoded config
// (the kind's NewConfig type).
type executor func(ctx context.Context, t stepTrial, st *pipeline.Step, cfg any) error

// executors are how each step kind runs: one per kind of engine/steps
// (which declares the kinds and runs nothing), but for the kinds that run
// during another step (collect: steps.Behaviour.During).
// TestEveryKindHasAnExecutor holds the two lists together.
var executors = map[string]executor{
	pipeline.KindProvision: typed(func(ctx context.Context, t stepTrial, _ *pipeline.Step, c *pipeline.ProvisionConfig) error {
		return t.Provision(ctx, c.Services)
	}),
	pipeline.KindTune: typed(func(ctx context.Context, t stepTrial, _ *pipeline.Step, c *pipeline.TuneConfig) error {
		return t.Tune(ctx, c)
	}),
	pipeline.KindCheck: typed(func(ctx context.Context, t stepTrial, _ *pipeline.Step, c *pipeline.CheckConfig) error {
		return t.Check(ctx, c)
	}),
	pipeline.KindExec: typed(func(ctx context.Context, t stepTrial, st *pipeline.Step, c *pipeline.ExecConfig) error {
		return t.Exec(ctx, st.Name, c)
	}),
	pipeline.KindWarm: typed(runLoad),
	pipeline.KindLoad: typed(runLoad),
}

func runLoad(ctx context.Context, t stepTrial, st *pipeline.Step, c *steps.LoadConfig) error {
	return t.Load(ctx, st, c)
}

// typed is the one assertion of a step's config to its kind's type; a
// config of another type is a programming error and panics, naming both.
func typed[C any](run func(ctx context.Context, t stepTrial, st *pipeline.Step, c *C) error) executor {
	return func(ctx context.Context, t stepTrial, st *pipeline.Step, cfg any) error {
		c, ok := cfg.(*C)
		if !ok || c == nil {
			panic(fmt.Sprintf("run: %s step given a config of type %T, want %T", st.Kind, cfg, c))
		}
		return run(ctx, t, st, c)
	}
}
