package plan_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

// withholdCases are expressions that fail on a value computed from var.tok,
// with a message that quotes (a part of) what they were given. secret is
// the value of tok; its letters appear nowhere in the pipeline's text
// (the checks below skip a letter that does).
var withholdCases = []struct {
	name, secret, src string
}{
	{"jsondecode", "ZQXJ", `locals { x = jsondecode(var.tok) }`},
	{"jsondecode of one character", "ZQXJ", `locals { x = jsondecode(substr(var.tok, 1, 1)) }`},
	{"jsondecode in a template", "ZQXJ", `locals { x = jsondecode("[${var.tok}]") }`},
	{"formatdate", "QJWK", `locals { x = formatdate(var.tok, "2006-01-02T15:04:05Z") }`},
	{"parseint", "ZQXJ", `locals { x = parseint(var.tok, 10) }`},
	{"regex", "ZQ[XJ", `locals { x = regex(var.tok, "a") }`},
	{"regexall", "ZQ(XJ", `locals { x = regexall(var.tok, "a") }`},
	{"timeadd", "ZQXJ", `locals { x = timeadd(var.tok, "1h") }`},
	{"tonumber", "ZQ", `locals { x = tonumber(var.tok) }`},
	{"tobool", "ZQ", `locals { x = tobool(var.tok) }`},
	{"file with a sensitive path", "ZQ", `locals { x = file(var.tok) }`},
	{"templatefile with a sensitive path", "ZQ", `locals { x = templatefile(var.tok, {}) }`},
	{"templatefile with sensitive vars", "ZQXJ", `locals { x = templatefile("j.tmpl", { v = var.tok }) }`},
	{"conditional", "ZQXJ", `locals { x = var.tok == "" ? 1 : jsondecode(var.tok) }`},
	{"operator", "ZQXJ", `locals { x = 1 + jsondecode(strrev(var.tok)) }`},
	{"through a local", "ZQXJ", "locals {\n  a = substr(var.tok, 0, 2)\n  x = jsondecode(local.a)\n}"},
	{"for expression element", "ZQXJ", `locals { x = [for c in split("", var.tok) : jsondecode(c)] }`},
	{"whole var object", "ZQXJ", `locals { x = jsondecode(var["tok"]) }`},
	{"matrix axis", "ZQXJ", `matrix { m = [jsondecode(var.tok)] }`},
	{"matrix value", "ZQ", `matrix { m = [var.tok, var.tok] }`},
	{"validation", "ZQXJ", "variable \"other\" {\n  default = 1\n  validation {\n    condition     = var.other == jsondecode(var.tok)\n    error_message = \"no\"\n  }\n}"},
	{"step attribute", "ZQ", `step "load" "two" {
  target   = "http://127.0.0.1:8080/"
  duration = var.tok
}`},
	{"step attribute decoded", "ZQXJ", `step "load" "two" {
  target   = "http://127.0.0.1:8080/"
  duration = "1s"
  connections = jsondecode(var.tok)
}`},
	{"file mode", "ZQ", `service "web" {
  command = ["true"]
  file "a" {
    content = "x"
    mode    = var.tok
  }
}`},
	{"port host", "ZQ", `service "web" {
  command = ["true"]
  port "http" { host = var.tok }
}`},
	{"provider setting", "ZQ", `provider "local" "l" { stop_timeout = var.tok }`},
	{"provider setting checked", "ZQ", `provider "local" "l" { work_dir = "/${var.tok}" }`},
	{"rendered file template", "ZQXJ", `service "web" {
  command = ["true"]
  file "a" { template = file("v.tmpl") }
}`},
	{"rendered file vars", "ZQXJ", `service "web" {
  command = ["true"]
  file "a" {
    template = file("j.tmpl")
    vars     = { v = var.tok }
  }
}`},
}

const withholdBase = `pipeline "p" {}
variable "tok" {
  type      = string
  sensitive = %v
}
step "load" "main" {
  target   = "http://127.0.0.1:8080/"
  duration = "1s"
}
`

var withholdFiles = fstest.MapFS{
	"j.tmpl": {Data: []byte("${jsondecode(v)}\n")},
	"v.tmpl": {Data: []byte("x ${jsondecode(var.tok)}\n")},
}

func withholdBuild(t *testing.T, sensitive bool, src, secret string) (string, hcl.Diagnostics) {
	t.Helper()
	text := fmt.Sprintf(withholdBase, sensitive) + src + "\n"
	fsys := fstest.MapFS{"p.hcl": {Data: []byte(text)}}
	for k, v := range withholdFiles {
		fsys[k] = v
	}
	p, diags := hclconf.Parse(fsys, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	_, diags = plan.Build(p, plan.Inputs{Vars: map[string]string{"tok": secret}})
	if !diags.HasErrors() {
		t.Fatalf("no error; the case must fail")
	}
	return text + string(withholdFiles["j.tmpl"].Data) + string(withholdFiles["v.tmpl"].Data), diags
}

// leaked lists the letters of secret that out shows and text does not.
func leaked(secret, text, out string) []string {
	var l []string
	for _, r := range secret {
		if !strings.ContainsRune(text, r) && strings.ContainsRune(out, r) {
			l = append(l, string(r))
		}
	}
	return l
}

// Every diagnostic of an expression with a sensitive input says that its
// detail is withheld and shows nothing of the value, whatever the
// function, conversion or check that failed.
func TestSensitiveDetailWithheld(t *testing.T) {
	for _, c := range withholdCases {
		t.Run(c.name, func(t *testing.T) {
			text, diags := withholdBuild(t, true, c.src, c.secret)
			out := diag.Err(diags).Error()
			if l := leaked(c.secret, text, out); len(l) > 0 {
				t.Errorf("the diagnostics show %q of the secret %q:\n%s", l, c.secret, out)
			}
			if !strings.Contains(out, plan.Withheld[:40]) {
				t.Errorf("no diagnostic says its detail is withheld:\n%s", out)
			}
			for _, d := range diags {
				if d.Severity == hcl.DiagError && d.Subject == nil {
					t.Errorf("an error without a location: %s", d.Error())
				}
			}
		})
	}
}

// The same expressions on a variable that is not sensitive keep their
// detail, value and all: the withholding is for sensitive inputs only.
func TestOrdinaryDetailKept(t *testing.T) {
	for _, c := range withholdCases {
		t.Run(c.name, func(t *testing.T) {
			text, diags := withholdBuild(t, false, c.src, c.secret)
			out := diag.Err(diags).Error()
			if len(leaked(c.secret, text, out)) == 0 {
				t.Errorf("the detail no longer shows the value %q:\n%s", c.secret, out)
			}
			if strings.Contains(out, plan.Withheld[:40]) {
				t.Errorf("a detail is withheld without a sensitive value:\n%s", out)
			}
		})
	}
}

// Only what uses the sensitive value loses its detail: an error next to
// it, in the same step or in a local, is reported in full; so are the
// errors of a block's structure.
func TestWithholdingIsNarrow(t *testing.T) {
	src := `
locals {
  ok  = upper(var.tok)
  bad = jsondecode("{")
}
step "load" "two" {
  target   = "http://127.0.0.1:8080/"
  headers  = { Authorization = "Bearer ${var.tok}" }
  duration = "1x"
}`
	_, diags := withholdBuild(t, true, src, "ZQXJ")
	out := diag.Err(diags).Error()
	for _, want := range []string{`Call to function "jsondecode" failed: EOF`, `"1x"`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "withheld") {
		t.Errorf("a detail is withheld that does not use the value:\n%s", out)
	}
}

// A trial evaluated by the run (not dry) withholds as the plan does: the
// errors engine/run turns into a trial's error are the same diagnostics.
func TestSensitiveDetailWithheldInTheRun(t *testing.T) {
	text := fmt.Sprintf(withholdBase, true) + `
locals { x = jsondecode(substr(var.tok, 0, 1)) }
service "web" {
  command = ["true"]
  file "a" {
    content = "x"
    mode    = substr(var.tok, 1, 2)
  }
}
step "check" "c" { url = "http://127.0.0.1:${parseint(var.tok, 10)}/" }
`
	fsys := fstest.MapFS{"p.hcl": {Data: []byte(text)}}
	p, diags := hclconf.Parse(fsys, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, _ := plan.Build(p, plan.Inputs{Vars: map[string]string{"tok": "ZQXJ"}})
	if len(pl.Trials) == 0 {
		// The plan stopped before its trials; make one to evaluate.
		pl.Trials = []*plan.Trial{{ID: "c01-r1", Repetition: 1}}
	}
	te := pl.NewTrialEval(pl.Trials[0], false)
	var all hcl.Diagnostics
	_, d := te.Locals()
	all = append(all, d...)
	_, d = te.PrepareService(p.Services[0], plan.Placement{})
	all = append(all, d...)
	for _, st := range p.Steps {
		_, d = te.Step(st)
		all = append(all, d...)
	}
	if len(all) < 3 {
		t.Fatalf("want an error from the local, the file and the step: %s", all.Error())
	}
	out := diag.Err(all).Error()
	if l := leaked("ZQXJ", text, out); len(l) > 0 {
		t.Errorf("the run's errors show %q:\n%s", l, out)
	}
}

// The Starlark front end builds the same expressions: its errors are
// withheld the same way.
func TestSensitiveDetailWithheldStarlark(t *testing.T) {
	src := `pipeline("p")
variable("tok", type = "string", sensitive = True)
local("x", hcl("jsondecode(substr(var.tok, 0, 1))"))
local("y", fn.formatdate(var.tok, "2006-01-02T15:04:05Z"))
step.load("main", target = "http://127.0.0.1:8080/", duration = hcl("substr(var.tok, 1, 2)"))
`
	p, diags := starconf.Parse(fstest.MapFS{"p.star": {Data: []byte(src)}}, "p.star", "p.star")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{Vars: map[string]string{"tok": "QJWK"}})
	if !diags.HasErrors() {
		t.Fatal("no error")
	}
	out := diag.Err(diags).Error()
	if l := leaked("QJWK", src, out); len(l) > 0 {
		t.Errorf("the diagnostics show %q:\n%s", l, out)
	}
	if n := strings.Count(out, "withheld"); n < 3 {
		t.Errorf("%d withheld details, want 3:\n%s", n, out)
	}
}

// A --var-file that sets a sensitive variable to an expression that fails
// shows neither the message nor the line.
func TestSensitiveVarFileWithheld(t *testing.T) {
	dir := t.TempDir()
	vf := dir + "/v.hcl"
	if err := os.WriteFile(vf, []byte(`tok = jsondecode("ZQ")`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(withholdBase, true)
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(text)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{VarFiles: []string{vf}})
	out := diag.Err(diags).Error()
	if !diags.HasErrors() || strings.ContainsAny(out, "ZQ") || !strings.Contains(out, "v.hcl, line 1") {
		t.Errorf("diagnostics: %s", out)
	}
	for _, d := range diags {
		if d.Subject != nil && d.Subject.Filename == vf {
			t.Errorf("located in the var file (its line would be quoted): %s", d.Error())
		}
	}
}

// A syntax error in the value a --var-file gives a sensitive variable is
// reported at the variable, its line not quoted; one in another
// variable's value is reported where it is.
func TestSensitiveVarFileSyntaxWithheld(t *testing.T) {
	dir := t.TempDir()
	vf := dir + "/v.hcl"
	if err := os.WriteFile(vf, []byte("other = 1\ntok = [\n  \"ZQ\" \"XJ\"\n]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(withholdBase, true) + "variable \"other\" { default = 0 }\n"
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(text)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{VarFiles: []string{vf}})
	out := diag.Err(diags).Error()
	if !diags.HasErrors() || strings.ContainsAny(out, "ZQXJ") || !strings.Contains(out, "line 3") || !strings.Contains(out, "withheld") {
		t.Errorf("diagnostics: %s", out)
	}
	for _, d := range diags {
		if d.Subject != nil && d.Subject.Filename == vf {
			t.Errorf("located in the var file (its line would be quoted): %s", d.Error())
		}
	}
	if err := os.WriteFile(vf, []byte("other = [\n  1 2\n]\ntok = \"ZQXJ\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, diags = plan.Build(p, plan.Inputs{VarFiles: []string{vf}})
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Filename != vf || strings.Contains(diags[0].Detail, "withheld") {
		t.Errorf("an error in a variable that is not sensitive: %s", diags.Error())
	}
}

// A sensitive --var too short to be redacted is not repeated in the
// sentence that names the flag.
func TestShortSensitiveVarNotNamed(t *testing.T) {
	text := fmt.Sprintf(withholdBase, true) + `step "load" "two" {
  target   = "http://127.0.0.1:8080/"
  duration = var.tok
}`
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(text)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = plan.Build(p, plan.Inputs{Vars: map[string]string{"tok": "ZQ"}})
	out := diag.Err(diags).Error()
	if !strings.Contains(out, "--var tok=(sensitive)") || strings.ContainsAny(out, "ZQ") {
		t.Errorf("diagnostics: %s", out)
	}
}
