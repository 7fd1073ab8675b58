package plan_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
)

func build(t *testing.T, src string, in plan.Inputs) (*plan.Plan, hcl.Diagnostics) {
	t.Helper()
	fsys := fstest.MapFS{"p.hcl": {Data: []byte(src)}, "t.tmpl": {Data: []byte("listen ${self.port.http}; log ${log};\n")}}
	p, diags := hclconf.Parse(fsys, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		return nil, diags
	}
	return plan.Build(p, in)
}

func mustBuild(t *testing.T, src string, in plan.Inputs) *plan.Plan {
	t.Helper()
	pl, diags := build(t, src, in)
	if diags.HasErrors() {
		t.Fatalf("unexpected errors: %s", diags.Error())
	}
	return pl
}

const study = `
pipeline "s1" {
  repetitions = 3
  order       = "%s"
  seed        = 7
}
matrix {
  deploy = ["host", "nat", "hostnet"]
  log    = ["on", "off"]
}
service "web" {
  command = ["serve", "${self.port.http}"]
  port "http" {}
  file "x.conf" {
    template = file("t.tmpl")
    vars     = { log = matrix.log }
  }
}
step "tune" "kernel" { nofile = 1024 }
step "warm" "w" { target = service.web.url }
step "load" "main" {
  target   = "${service.web.url}/"
  duration = "1s"
}
step "collect" "cpu" { during = step.load.main }
`

func ids(pl *plan.Plan) []string {
	var out []string
	for _, tr := range pl.Trials {
		out = append(out, tr.ID)
	}
	return out
}

func TestInterleavedEighteenTrials(t *testing.T) {
	pl := mustBuild(t, strings.Replace(study, "%s", "interleaved", 1), plan.Inputs{})
	if len(pl.Trials) != 18 {
		t.Fatalf("got %d trials, want 18", len(pl.Trials))
	}
	// A B C D E F A B C … : each block of 6 visits every cell once.
	for i, tr := range pl.Trials {
		if tr.Cell != i%6 || tr.Repetition != i/6+1 || tr.Index != i {
			t.Fatalf("trial %d = cell %d rep %d, want cell %d rep %d", i, tr.Cell, tr.Repetition, i%6, i/6+1)
		}
	}
	if got := pl.Trials[1].ParamString(); got != "deploy=host log=off" {
		t.Errorf("second trial params = %q", got)
	}
}

func TestSequentialAndRandomOrders(t *testing.T) {
	seq := mustBuild(t, strings.Replace(study, "%s", "sequential", 1), plan.Inputs{})
	if got := ids(seq)[:4]; !cmp.Equal(got, []string{"c01-r1", "c01-r2", "c01-r3", "c02-r1"}) {
		t.Errorf("sequential starts %v", got)
	}
	r1 := mustBuild(t, strings.Replace(study, "%s", "random", 1), plan.Inputs{})
	r2 := mustBuild(t, strings.Replace(study, "%s", "random", 1), plan.Inputs{})
	if !cmp.Equal(ids(r1), ids(r2)) {
		t.Error("the same seed gave two orders")
	}
	if r1.Seed != 7 {
		t.Errorf("seed = %d, want 7", r1.Seed)
	}
	other := int64(8)
	r3 := mustBuild(t, strings.Replace(study, "%s", "random", 1), plan.Inputs{Seed: &other})
	if cmp.Equal(ids(r1), ids(r3)) {
		t.Error("another seed gave the same order")
	}
	inter := mustBuild(t, strings.Replace(study, "%s", "interleaved", 1), plan.Inputs{})
	if cmp.Equal(ids(r1), ids(inter)) {
		t.Error("random order equals interleaved")
	}
	a, b := append([]string(nil), ids(r1)...), append([]string(nil), ids(inter)...)
	sortStrings(a)
	sortStrings(b)
	if !cmp.Equal(a, b) {
		t.Error("random order is not a permutation of the trials")
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestDAG(t *testing.T) {
	pl := mustBuild(t, strings.Replace(study, "%s", "interleaved", 1), plan.Inputs{})
	got := map[string][]string{}
	for _, n := range pl.Steps {
		got[n.Addr()] = n.Deps
		if n.During != "" {
			got[n.Addr()] = []string{"during " + n.During}
		}
	}
	want := map[string][]string{
		"tune.kernel": nil,
		"warm.w":      {"tune.kernel"},
		"load.main":   {"warm.w"},
		"collect.cpu": {"during load.main"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestExplicitDependencyAgainstPhaseOrder(t *testing.T) {
	// An exec step that waits for the load runs after it, not before.
	pl := mustBuild(t, `
pipeline "p" {}
step "exec" "after" {
  command    = ["true"]
  depends_on = [step.load.main]
}
step "load" "main" { target = "http://127.0.0.1:1/" }
step "exec" "before" { command = ["true"] }
`, plan.Inputs{})
	var order []string
	for _, n := range pl.Steps {
		order = append(order, n.Addr())
	}
	if diff := cmp.Diff([]string{"exec.before", "load.main", "exec.after"}, order); diff != "" {
		t.Error(diff)
	}
}

func TestMatrixIncludeExclude(t *testing.T) {
	pl := mustBuild(t, `
pipeline "p" {}
matrix {
  a       = [1, 2]
  b       = ["x", "y"]
  exclude = [{ a = 2, b = "y" }]
  include = [{ a = 3, b = "z" }]
}
`, plan.Inputs{})
	var got []string
	for _, c := range pl.Cells {
		var ps []string
		for _, p := range c.Params {
			ps = append(ps, plan.ValueString(p.Value))
		}
		got = append(got, strings.Join(ps, ","))
	}
	if diff := cmp.Diff([]string{"1,x", "1,y", "2,x", "3,z"}, got); diff != "" {
		t.Error(diff)
	}
}

func TestVariables(t *testing.T) {
	src := `
pipeline "p" {}
variable "conns" {
  type    = number
  default = 4
}
variable "sizes" { default = ["1", "2"] }
variable "token" {
  sensitive = true
}
matrix { size = var.sizes }
step "load" "main" {
  target      = "http://127.0.0.1:1/${matrix.size}"
  connections = var.conns * 2
}
`
	_, diags := build(t, src, plan.Inputs{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Missing required variable") {
		t.Fatalf("want a missing variable error, got %v", diags)
	}
	pl := mustBuild(t, src, plan.Inputs{Vars: map[string]string{"conns": "8", "token": "s3cret", "sizes": `["a","b","c"]`}})
	if len(pl.Trials) != 3 {
		t.Errorf("trials = %d, want 3 (sizes from --var)", len(pl.Trials))
	}
	var buf bytes.Buffer
	if err := pl.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var jp plan.JSONPlan
	if err := json.Unmarshal(buf.Bytes(), &jp); err != nil {
		t.Fatal(err)
	}
	if c := jp.Trials[0].Steps["load.main"]["connections"]; c != float64(16) {
		t.Errorf("connections = %v, want 16", c)
	}
	if strings.Contains(buf.String(), "s3cret") {
		t.Error("plan JSON shows a sensitive value")
	}
	_, diags = build(t, src, plan.Inputs{Vars: map[string]string{"conns": "many", "token": "x"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Invalid value for variable") {
		t.Errorf("want a conversion error, got %v", diags)
	}
	_, diags = build(t, src, plan.Inputs{Vars: map[string]string{"con": "1", "token": "x"}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `Did you mean "conns"?`) {
		t.Errorf("want a suggestion, got %v", diags)
	}
}

func TestPlanTextMentionsEveryTrialAndStep(t *testing.T) {
	pl := mustBuild(t, strings.Replace(study, "%s", "interleaved", 1), plan.Inputs{})
	var buf bytes.Buffer
	if err := pl.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"18 trials = 6 matrix cells × 3 repetitions", "c06-r3", "load.main", "runs during load.main", "teardown"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan text lacks %q:\n%s", want, out)
		}
	}
}

func TestReuseServices(t *testing.T) {
	src := `
pipeline "p" {
  repetitions    = 2
  order          = "sequential"
  reuse_services = true
}
matrix {
  conns = [1, 2]
}
service "web" {
  command = ["serve"]
  port "http" {}
}
step "load" "main" {
  target      = service.web.url
  connections = matrix.conns
}
`
	pl := mustBuild(t, src, plan.Inputs{})
	var reuse []bool
	for _, tr := range pl.Trials {
		reuse = append(reuse, tr.Services[0].Reuse)
	}
	// The service does not depend on the matrix: every trial after the
	// first keeps it.
	if diff := cmp.Diff([]bool{false, true, true, true}, reuse); diff != "" {
		t.Error(diff)
	}
}

// TestPlanJSONSettings: plan --json carries every setting of the pipeline
// block, the defaults included, so a Starlark twin printing the same JSON
// runs the same way.
func TestPlanJSONSettings(t *testing.T) {
	for _, c := range []struct {
		src  string
		want plan.JSONSettings
	}{
		{`pipeline "p" {}
step "exec" "x" {
  command = ["true"]
}`, plan.JSONSettings{OnFailure: "continue", BusyRerun: 2, BusyGiveUp: 2, OutputDir: "results", OutputFormat: "parquet"}},
		{`pipeline "p" {
  on_failure = "abort"
  reuse_services = true
  exclude_unsteady = true
  busy_rerun = 0
  busy_give_up = 0
}
step "exec" "x" {
  command = ["true"]
}`, plan.JSONSettings{OnFailure: "abort", ReuseServices: true, ExcludeUnsteady: true, OutputDir: "results", OutputFormat: "parquet"}},
	} {
		pl := mustBuild(t, c.src, plan.Inputs{})
		var buf bytes.Buffer
		if err := pl.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		var jp plan.JSONPlan
		if err := json.Unmarshal(buf.Bytes(), &jp); err != nil {
			t.Fatal(err)
		}
		if jp.Settings != c.want {
			t.Errorf("settings %+v, want %+v\n%s", jp.Settings, c.want, buf.String())
		}
		if !strings.Contains(buf.String(), `"busy_give_up"`) || !strings.Contains(buf.String(), `"exclude_unsteady"`) {
			t.Errorf("a setting left out of the JSON when it is zero:\n%s", buf.String())
		}
	}
}
