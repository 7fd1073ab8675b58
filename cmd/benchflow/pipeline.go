package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/redact"
	"github.com/benchflow/benchflow/engine/starconf"
)

// varFlags are the flags shared by validate, plan, apply and render.
type varFlags struct {
	vars      []string
	varFiles  []string
	seed      int64
	reps      int
	maxTrials int
}

func (v *varFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&v.vars, "var", nil, "set a variable: --var name=value (repeatable)")
	cmd.Flags().StringArrayVar(&v.varFiles, "var-file", nil, "read variables from an HCL file of name = value lines (repeatable)")
	cmd.Flags().Int64Var(&v.seed, "seed", 0, "seed for order = \"random\" (default: the pipeline's, or a new one that is recorded)")
	cmd.Flags().IntVar(&v.reps, "repetitions", 0, fmt.Sprintf("override the pipeline's repetitions (1-%d; a fixed count, turning adaptive repetitions off)", pipeline.MaxRepetitions))
	cmd.Flags().IntVar(&v.maxTrials, "max-trials", pipeline.DefaultMaxTrials, "refuse a plan of more trials than this (matrix cells × repetitions)")
}

// registerVars adds only --var and --var-file, for commands that read a
// pipeline's variables but run no trials (gc).
func (v *varFlags) registerVars(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&v.vars, "var", nil, "set a variable: --var name=value (repeatable)")
	cmd.Flags().StringArrayVar(&v.varFiles, "var-file", nil, "read variables from an HCL file of name = value lines (repeatable)")
	v.maxTrials = pipeline.DefaultMaxTrials
}

func (v *varFlags) inputs() (plan.Inputs, error) {
	in := plan.Inputs{Vars: map[string]string{}, VarFiles: v.varFiles, Repetitions: v.reps, MaxTrials: v.maxTrials, Version: version}
	if v.reps < 0 || v.reps > pipeline.MaxRepetitions {
		return in, fmt.Errorf("--repetitions %d: must be between 1 and %d (or 0 for the pipeline's own)", v.reps, pipeline.MaxRepetitions)
	}
	if v.maxTrials < 1 {
		return in, fmt.Errorf("--max-trials %d: must be at least 1", v.maxTrials)
	}
	for _, kv := range v.vars {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return in, fmt.Errorf("--var %q: expected name=value", kv)
		}
		in.Vars[k] = val
	}
	if v.seed != 0 {
		s := v.seed
		in.Seed = &s
	}
	return in, nil
}

// loadPipeline parses a .hcl or .star file.
func loadPipeline(file string) (*pipeline.Pipeline, hcl.Diagnostics) {
	if strings.HasSuffix(file, ".star") {
		return starconf.ParseFile(file)
	}
	return hclconf.ParseFile(file)
}

// buildPlan parses and plans, printing diagnostics. It returns nil plan on
// errors.
func buildPlan(w io.Writer, file string, vf *varFlags, jsonDiags bool) (*plan.Plan, hcl.Diagnostics, error) {
	in, err := vf.inputs()
	if err != nil {
		return nil, nil, &exitError{code: 1, err: err}
	}
	if _, err := os.Stat(file); err != nil {
		return nil, nil, &exitError{code: 1, err: fmt.Errorf("reading pipeline: %w", err)}
	}
	p, diags := loadPipeline(file)
	var pl *plan.Plan
	if !diags.HasErrors() && p != nil {
		var d hcl.Diagnostics
		pl, d = plan.Build(p, in)
		diags = append(diags, d...)
		if pl != nil {
			redact.Default.Add(pl.SensitiveValues()...)
		}
	}
	if len(diags) > 0 && !jsonDiags {
		src := diag.Sources{}
		if p != nil {
			src[p.File] = p.Source
		} else if b, err := pipeline.ReadLocalFile(file); err == nil {
			src[file] = b
		}
		for _, d := range diags {
			if d.Subject != nil && src[d.Subject.Filename] == nil {
				if b, err := pipeline.ReadLocalFile(d.Subject.Filename); err == nil {
					src[d.Subject.Filename] = b
				}
			}
		}
		diag.Write(w, diags, src)
	}
	if diags.HasErrors() {
		return nil, diags, &exitError{code: 1}
	}
	return pl, diags, nil
}
