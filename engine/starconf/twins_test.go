package starconf_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
	_ "github.com/benchflow/benchflow/providers/standard"
)

// twins lists every .hcl file with a .star twin in testdata/twins,
// pipelines/ and each examples/ folder.
func twins(t *testing.T) []string {
	t.Helper()
	var out []string
	dirs := []string{"testdata/twins", "../../pipelines"}
	examples, _ := filepath.Glob("../../examples/*")
	dirs = append(dirs, examples...)
	for _, dir := range dirs {
		hcls, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hcls {
			if _, err := os.Stat(strings.TrimSuffix(h, ".hcl") + ".star"); err == nil {
				out = append(out, h)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no .hcl/.star twins found")
	}
	return out
}

func mustPlan(t *testing.T, p *pipeline.Pipeline, diags hcl.Diagnostics) *plan.Plan {
	t.Helper()
	if diags.HasErrors() {
		t.Fatalf("parsing: %s", diags.Error())
	}
	pl, diags := plan.Build(p, plan.Inputs{})
	if diags.HasErrors() {
		t.Fatalf("planning %s: %s", p.File, diags.Error())
	}
	return pl
}

// modelSummary is what the plan JSON does not show but both front ends
// must agree on.
type modelSummary struct {
	Name, Description, Order, OnFailure string
	Repetitions                         int
	Seed                                int64
	ReuseServices                       bool
	Output                              pipeline.OutputSettings
	Variables, Locals, Axes             []string
	Providers, Services, Steps          []string
}

func summarize(p *pipeline.Pipeline) modelSummary {
	s := modelSummary{Name: p.Name, Description: p.Description, Order: p.Order, OnFailure: p.OnFailure,
		Repetitions: p.Repetitions, Seed: p.Seed, ReuseServices: p.ReuseServices, Output: p.Output}
	for _, v := range p.Variables {
		s.Variables = append(s.Variables, v.Name+":"+v.Type.FriendlyName()+":"+v.Default.GoString()+":"+v.Description)
	}
	for _, l := range p.Locals {
		s.Locals = append(s.Locals, l.Name)
	}
	for _, a := range p.Matrix.Axes {
		s.Axes = append(s.Axes, a.Name)
	}
	for _, pv := range p.Providers {
		s.Providers = append(s.Providers, pv.Type+"."+pv.Name)
	}
	for _, sv := range p.Services {
		s.Services = append(s.Services, sv.Name)
	}
	for _, st := range p.Steps {
		s.Steps = append(s.Steps, st.Addr())
	}
	return s
}

func TestTwinsPlanIdentically(t *testing.T) {
	for _, h := range twins(t) {
		star := strings.TrimSuffix(h, ".hcl") + ".star"
		t.Run(filepath.Base(h), func(t *testing.T) {
			hp, hd := hclconf.ParseFile(h)
			sp, sd := starconf.ParseFile(star)
			if sd.HasErrors() {
				t.Fatalf("parsing %s: %s", star, sd.Error())
			}
			if hd.HasErrors() {
				t.Fatalf("parsing %s: %s", h, hd.Error())
			}
			// When the HCL file does not plan here (e.g. its provider type
			// is not registered in this build), its twin must fail the
			// same way.
			if _, d := plan.Build(hp, plan.Inputs{}); d.HasErrors() {
				_, sd := plan.Build(sp, plan.Inputs{})
				if diff := cmp.Diff(summaries(d), summaries(sd)); diff != "" {
					t.Fatalf("planning errors differ (-hcl +star):\n%s", diff)
				}
				t.Skipf("%s does not plan in this build (%s); its twin fails identically", h, d[0].Summary)
			}
			hplan, splan := mustPlan(t, hp, hd), mustPlan(t, sp, sd)
			if sp.Format != "star" || hp.Format != "hcl" {
				t.Errorf("formats: hcl %q, star %q", hp.Format, sp.Format)
			}
			if diff := cmp.Diff(summarize(hp), summarize(sp)); diff != "" {
				t.Errorf("models differ (-hcl +star):\n%s", diff)
			}
			hj, sj := hplan.JSON(), splan.JSON()
			if len(hj.Trials) == 0 {
				t.Fatal("the plan has no trials")
			}
			if diff := cmp.Diff(hj, sj); diff != "" {
				t.Errorf("plans differ (-hcl +star):\n%s", diff)
			}
		})
	}
}

// summaries lists the distinct error messages (the plan reports one per
// source range, and ranges differ between the two files).
func summaries(diags hcl.Diagnostics) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range diags {
		m := d.Summary + ": " + d.Detail
		if d.Severity == hcl.DiagError && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// TestTwinsThroughCLI compares `benchflow plan --json` of each twin when
// BENCHFLOW_BIN names a built binary (make build; BENCHFLOW_BIN=bin/benchflow).
func TestTwinsThroughCLI(t *testing.T) {
	bin := os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		t.Skip("BENCHFLOW_BIN is not set (point it at a built bin/benchflow to compare plans through the CLI)")
	}
	for _, h := range twins(t) {
		star := strings.TrimSuffix(h, ".hcl") + ".star"
		t.Run(filepath.Base(h), func(t *testing.T) {
			run := func(f string) any {
				out, err := exec.Command(bin, "plan", "--json", f).Output()
				if err != nil {
					t.Fatalf("benchflow plan --json %s: %v", f, err)
				}
				var v any
				if err := json.Unmarshal(out, &v); err != nil {
					t.Fatalf("decoding plan of %s: %v", f, err)
				}
				return v
			}
			if diff := cmp.Diff(run(h), run(star)); diff != "" {
				t.Errorf("plans differ (-hcl +star):\n%s", diff)
			}
		})
	}
}
