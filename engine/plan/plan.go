package plan

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
)

// Inputs are the values given on the command line.
type Inputs struct {
	// Vars are --var name=value pairs, raw; each is parsed according to
	// the variable's type (strings stay strings, numbers and bools are
	// parsed, lists/maps/objects are HCL expressions).
	Vars map[string]string
	// VarFiles are --var-file paths (HCL files of name = value).
	VarFiles []string
	// Seed overrides the pipeline's seed for order = "random".
	Seed *int64
	// Repetitions overrides the pipeline's repetitions when > 0.
	Repetitions int
	// MaxTrials bounds the trials (cells × repetitions);
	// pipeline.DefaultMaxTrials when 0.
	MaxTrials int
	// Version is the running benchflow's version, benchflow.version in
	// the pipeline ("dev" when empty).
	Version string
}

// Plan is a pipeline expanded into trials in execution order, with its step
// DAG. Building it evaluates everything that does not depend on a
// provisioned service, for every trial, so a plan that builds without
// errors can only fail at run time for reasons of the outside world.
type Plan struct {
	Pipeline *pipeline.Pipeline
	Vars     map[string]cty.Value
	Axes     []Axis
	Cells    []Cell
	Trials   []*Trial
	Seed     int64
	Order    string
	Steps    []*StepNode // topological order (declaration order among peers)
	// Claims are the pipeline's claims matched against the cells: those
	// that are on (ClaimsOff holds the others).
	Claims []ClaimPlan
	// ClaimsOff are the claims whose enabled is false for the plan's
	// variables, in declaration order: not matched against the matrix,
	// not judged, not recorded in the run.
	ClaimsOff []*claims.Claim
	// Adaptive is the pipeline's adaptive repetitions (nil when fixed or
	// overridden by --repetitions): Trials holds the first Min rounds and
	// AddRound appends more.
	Adaptive *pipeline.Adaptive
	// Inputs are what the plan was built from (a resumed run re-plans
	// with its recorded seed).
	Inputs Inputs

	functions map[string]function.Function
	derived   map[string]bool // DerivedSensitive of the planned trials
	budget    *evalBudget     // the pipeline's (pipelineBudget)
	svcLocals map[string]bool // ServiceLocals, computed once

	secretsOnce sync.Once // secrets
	secretSet   *secrets

	fixedOnce sync.Once // fixedVars
	exe       string
	stepsObj  cty.Value
}

func (p *Plan) serviceLocals() map[string]bool {
	if p.svcLocals == nil {
		p.svcLocals = ServiceLocals(p.Pipeline)
	}
	return p.svcLocals
}

// Axis is a matrix axis with its evaluated values.
type Axis struct {
	Name   string
	Values []cty.Value
}

// Cell is one point of the matrix.
type Cell struct {
	Index  int
	Params []Param
}

// Param is one axis value.
type Param struct {
	Name  string
	Value cty.Value
}

// Trial is one cell × one repetition.
type Trial struct {
	ID         string // "c03-r2": cell 3, repetition 2 (stable across orders)
	Index      int    // 0-based execution position
	Cell       int    // 0-based cell index
	Repetition int    // 1-based
	Params     []Param
	// Services describes, per service (declaration order), which provider
	// deploys it and whether it is kept from the previous trial.
	Services []TrialService
}

// TrialService is the dry evaluation of one service for one trial.
type TrialService struct {
	Name         string
	Provider     string // provider name
	ProviderType string
	Reuse        bool   // kept running from the previous trial
	Fingerprint  string // hash of the evaluated inputs
	// Describe is the provider's one-line summary of how it deploys the
	// service (e.g. "expose ingress"), when it offers one.
	Describe string
}

// ParamString renders a trial's parameters as "a=1 b=x".
func (t *Trial) ParamString() string {
	var parts []string
	for _, p := range t.Params {
		parts = append(parts, p.Name+"="+ValueString(p.Value))
	}
	return strings.Join(parts, " ")
}

// ValueString renders a primitive cty value without quotes.
func ValueString(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	if !v.IsKnown() {
		return "(unknown)"
	}
	switch v.Type() {
	case cty.String:
		return v.AsString()
	case cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			i, _ := bf.Int64()
			return fmt.Sprint(i)
		}
		f, _ := bf.Float64()
		return fmt.Sprint(f)
	case cty.Bool:
		return fmt.Sprint(v.True())
	}
	return v.GoString()
}

// Build expands p into a plan. All trials are evaluated in dry mode
// (services not provisioned yet: their attributes are placeholders).
func Build(p *pipeline.Pipeline, in Inputs) (_ *Plan, diags hcl.Diagnostics) {
	pl := &Plan{Pipeline: p, Order: p.Order, Inputs: in, budget: pipelineBudget(p)}
	// Every diagnostic leaves through here: those of expressions computed
	// from a sensitive value lose their detail (withhold.go).
	defer func() { diags = nameVarFlags(p, in, pl.secrets().withhold(diags)) }()
	pl.budget.reset()
	pl.functions = functions(p.FS, pl.budget)
	vars, diags := resolveVariables(p, in, pl.functions)
	pl.Vars = vars
	if diags.HasErrors() {
		return pl, withExceeded(diags, pl.budget)
	}
	axes, d := evalAxes(p, vars, pl.functions)
	diags = append(diags, d...)
	pl.Axes = axes
	if d.HasErrors() {
		return pl, diags
	}
	reps := p.Repetitions
	if in.Repetitions > 0 {
		reps = in.Repetitions
	}
	if in.Repetitions > pipeline.MaxRepetitions {
		return pl, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid repetitions",
			Detail: fmt.Sprintf("--repetitions must be between 1 and %d, not %d.", pipeline.MaxRepetitions, in.Repetitions)})
	}
	if in.Repetitions == 0 && p.Adaptive != nil {
		pl.Adaptive = p.Adaptive
	}
	maxTrials := in.MaxTrials
	if maxTrials <= 0 {
		maxTrials = pipeline.DefaultMaxTrials
	}
	mostReps := reps
	if pl.Adaptive != nil {
		mostReps = pl.Adaptive.Max
	}
	if d := checkTrialCount(p, axes, mostReps, maxTrials); d != nil {
		return pl, append(diags, d)
	}
	cells, d := expandCells(p, axes, vars, pl.functions)
	diags = withExceeded(append(diags, d...), pl.budget)
	pl.Cells = cells
	if d.HasErrors() {
		return pl, diags
	}
	steps, d := buildDAG(p)
	diags = append(diags, d...)
	pl.Steps = steps
	diags = append(diags, checkServices(p)...)
	diags = append(diags, pl.checkClaims()...)
	if diags.HasErrors() {
		return pl, diags
	}

	if n := len(cells) * mostReps; n > maxTrials {
		return pl, append(diags, tooManyTrials(p, len(cells), mostReps, maxTrials))
	}
	pl.Seed = p.Seed
	if in.Seed != nil {
		pl.Seed = *in.Seed
	}
	if p.Order == pipeline.OrderRandom && pl.Seed == 0 {
		pl.Seed = time.Now().UnixNano() & (1<<53 - 1)
		if pl.Seed == 0 {
			pl.Seed = 1
		}
	}
	pl.Trials = orderTrials(cells, reps, p.Order, pl.Seed)

	return pl, append(diags, pl.prepare(pl.Trials, nil)...)
}

// prepare dry-evaluates trials (after prev, the trial run just before
// them): catches bad references, types and templates before anything
// runs, and marks services a trial can reuse. Identical diagnostics from
// several trials are reported once.
func (pl *Plan) prepare(trials []*Trial, prev *Trial) hcl.Diagnostics {
	p := pl.Pipeline
	var diags hcl.Diagnostics
	// A diagnostic that differs between trials only in the trial named in
	// it is reported once, naming every trial it applies to.
	seen := map[string]int{}
	inTrials := map[int][]*Trial{}
	sensitive := pl.hasSensitive()
	for _, t := range trials {
		te := pl.NewTrialEval(t, true)
		services, td := te.dryRun()
		td = withExceeded(td, pl.budget)
		if sensitive && t.Repetition == 1 {
			// What a sensitive value becomes in this cell, for redaction.
			for _, s := range te.DerivedSensitive() {
				if pl.derived == nil {
					pl.derived = map[string]bool{}
				}
				pl.derived[s] = true
			}
		}
		for _, dg := range td {
			named := strings.Contains(dg.Detail, "trial "+t.ID)
			key := dg.Summary + "\x00" + dg.Detail
			if named {
				key = dg.Summary + "\x00" + strings.ReplaceAll(strings.ReplaceAll(dg.Detail, t.ID, "\x01"), "("+t.ParamString()+")", "\x02")
			}
			if dg.Subject != nil {
				key += fmt.Sprint(*dg.Subject)
			}
			if i, ok := seen[key]; ok {
				if named {
					inTrials[i] = append(inTrials[i], t)
				}
				continue
			}
			seen[key] = len(diags)
			if named {
				inTrials[len(diags)] = []*Trial{t}
			}
			diags = append(diags, dg)
		}
		t.Services = services
		if p.ReuseServices && prev != nil {
			for i := range t.Services {
				if i < len(prev.Services) && prev.Services[i].Fingerprint == t.Services[i].Fingerprint && t.Services[i].Fingerprint != "" {
					t.Services[i].Reuse = true
				}
			}
		}
		prev = t
		if len(diags) > 50 && diags.HasErrors() {
			break
		}
	}
	for i, ts := range inTrials {
		if len(ts) < 2 {
			continue
		}
		ids := make([]string, 0, 4)
		for j, t := range ts {
			if j == 3 && len(ts) > 4 {
				ids = append(ids, "…", ts[len(ts)-1].ID)
				break
			}
			ids = append(ids, t.ID)
		}
		first := ts[0]
		d := *diags[i]
		d.Detail = strings.Replace(d.Detail, "trial "+first.ID+" ("+first.ParamString()+")", fmt.Sprintf("%d trials (%s)", len(ts), strings.Join(ids, ", ")), 1)
		d.Detail = strings.Replace(d.Detail, "trial "+first.ID, fmt.Sprintf("%d trials (%s)", len(ts), strings.Join(ids, ", ")), 1)
		diags[i] = &d
	}
	return diags
}

func orderTrials(cells []Cell, reps int, order string, seed int64) []*Trial {
	var ts []*Trial
	mk := func(c Cell, r int) *Trial {
		return &Trial{
			ID:         fmt.Sprintf("c%02d-r%d", c.Index+1, r),
			Cell:       c.Index,
			Repetition: r,
			Params:     c.Params,
		}
	}
	switch order {
	case pipeline.OrderSequential:
		for _, c := range cells {
			for r := 1; r <= reps; r++ {
				ts = append(ts, mk(c, r))
			}
		}
	default: // interleaved, and random starts from it
		for r := 1; r <= reps; r++ {
			for _, c := range cells {
				ts = append(ts, mk(c, r))
			}
		}
		if order == pipeline.OrderRandom {
			rng := rand.New(rand.NewPCG(uint64(seed), 0x62656e6368666c6f))
			rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		}
	}
	for i, t := range ts {
		t.Index = i
	}
	return ts
}

// resolveVariables merges defaults, var files and --var values, converts
// them to the declared types and runs validations.
func resolveVariables(p *pipeline.Pipeline, in Inputs, fns map[string]function.Function) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	decl := map[string]*pipeline.Variable{}
	var names []string
	for _, v := range p.Variables {
		decl[v.Name] = v
		names = append(names, v.Name)
	}
	given := map[string]cty.Value{}
	givenRange := map[string]*hcl.Range{}

	for _, vf := range in.VarFiles {
		src, err := pipeline.ReadLocalFile(vf)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variables file",
				Detail: fmt.Sprintf("--var-file %s.", err)}) // err starts with the path

			continue
		}
		if d := pipeline.CheckNesting(vf, src); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		f, d := hclsyntax.ParseConfig(src, vf, hcl.InitialPos)
		diags = append(diags, hideVarFileLines(vf, src, decl, d)...)
		if d.HasErrors() {
			continue
		}
		attrs, d := f.Body.JustAttributes()
		diags = append(diags, d...)
		for name, a := range attrs {
			if _, ok := decl[name]; !ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
					Detail:  fmt.Sprintf("The variables file sets %q, but the pipeline declares no such variable.%s", name, diag.Suggest(name, names)),
					Subject: a.NameRange.Ptr()})
				continue
			}
			val, d := a.Expr.Value(&hcl.EvalContext{Functions: fns})
			if d.HasErrors() && decl[name].Sensitive {
				// Neither the message nor the line (quoted with it) may
				// show the value.
				d = hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
					Detail: fmt.Sprintf("--var-file %s, line %d: the value of sensitive variable %q does not evaluate. %s",
						vf, a.Expr.Range().Start.Line, name, Withheld),
					Subject: decl[name].DeclRange.Ptr()}}
			}
			diags = append(diags, d...)
			if !d.HasErrors() {
				given[name] = val
				givenRange[name] = a.Expr.Range().Ptr()
			}
		}
	}
	cliNames := make([]string, 0, len(in.Vars))
	for k := range in.Vars {
		cliNames = append(cliNames, k)
	}
	sort.Strings(cliNames)
	for _, name := range cliNames {
		raw := in.Vars[name]
		v, ok := decl[name]
		if !ok {
			hint := diag.Suggest(name, names)
			if flag, ok := settingFlags[name]; ok {
				hint = fmt.Sprintf(" %s is a pipeline setting, not a variable: use %s %s.", name, flag, raw)
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
				Detail: fmt.Sprintf("--var %s=… sets a variable the pipeline does not declare.%s Declared variables: %s.", name, hint, listOrNone(names))})
			continue
		}
		val, err := parseRawVar(raw, v)
		if err != nil {
			detail := fmt.Sprintf("--var %s=%s: %s.", name, raw, err)
			if v.Sensitive {
				// The message of a parse error may quote the value.
				detail = fmt.Sprintf("--var %s=(sensitive): not a valid %s (the value is sensitive and not shown).", name, v.Type.FriendlyName())
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable", Detail: detail})
			continue
		}
		given[name] = val
		givenRange[name] = nil
	}

	out := map[string]cty.Value{}
	for _, v := range p.Variables {
		val, ok := given[v.Name]
		if !ok {
			if v.Default == cty.NilVal {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing required variable",
					Detail:  fmt.Sprintf("Variable %q has no default; set it with --var %s=… or in a --var-file.", v.Name, v.Name),
					Subject: v.DeclRange.Ptr()})
				continue
			}
			val = v.Default
		}
		if v.Type != cty.DynamicPseudoType {
			cv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
					Detail:  fmt.Sprintf("Variable %q must be %s: %s.", v.Name, v.Type.FriendlyName(), err),
					Subject: sensitiveRange(v, givenRange[v.Name])})
				continue
			}
			val = cv
		}
		out[v.Name] = val
	}
	if diags.HasErrors() {
		return out, diags
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(out)}, Functions: fns}
	for _, v := range p.Variables {
		for _, val := range v.Validations {
			res, d := val.Condition.Value(ctx)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			if res.Type() != cty.Bool || res.IsNull() || !res.IsKnown() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid validation result",
					Detail: "A validation condition must produce true or false.", Subject: val.Condition.Range().Ptr()})
				continue
			}
			if res.False() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
					Detail:  fmt.Sprintf("var.%s = %s: %s", v.Name, displayValue(out[v.Name], v.Sensitive), val.ErrorMessage),
					Subject: val.Condition.Range().Ptr()})
			}
		}
	}
	return out, diags
}

// varFileName matches the start of a var file's `name = value` line.
var varFileName = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=`)

// hideVarFileLines replaces each syntax error of var file vf located in
// the value of a sensitive variable (the nearest `name =` at or above its
// line names one) by an error at the variable's declaration: the message
// and the line it quotes would show the value.
func hideVarFileLines(vf string, src []byte, decl map[string]*pipeline.Variable, diags hcl.Diagnostics) hcl.Diagnostics {
	lines := strings.Split(string(src), "\n")
	for i, d := range diags {
		if d.Subject == nil || d.Subject.Filename != vf {
			continue
		}
		for l := min(d.Subject.Start.Line, len(lines)) - 1; l >= 0; l-- {
			m := varFileName.FindStringSubmatch(lines[l])
			if m == nil {
				continue
			}
			if v := decl[m[1]]; v != nil && v.Sensitive {
				diags[i] = &hcl.Diagnostic{Severity: d.Severity, Summary: d.Summary,
					Detail:  fmt.Sprintf("--var-file %s, line %d, in the value of sensitive variable %q. %s", vf, d.Subject.Start.Line, v.Name, Withheld),
					Subject: v.DeclRange.Ptr()}
			}
			break
		}
	}
	return diags
}

func displayValue(v cty.Value, sensitive bool) string {
	if sensitive {
		return "(sensitive)"
	}
	if v.Type().IsPrimitiveType() {
		return ValueString(v)
	}
	return v.GoString()
}

// sensitiveRange is where a problem with v's value is shown: where it was
// given, unless it is sensitive (the line shown would hold the value).
func sensitiveRange(v *pipeline.Variable, given *hcl.Range) *hcl.Range {
	if v.Sensitive {
		return v.DeclRange.Ptr()
	}
	return orRange(given, v.DeclRange)
}

func orRange(r *hcl.Range, def hcl.Range) *hcl.Range {
	if r != nil {
		return r
	}
	return def.Ptr()
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func parseRawVar(raw string, v *pipeline.Variable) (cty.Value, error) {
	ty := v.Type
	if ty == cty.DynamicPseudoType && v.Default != cty.NilVal && !v.Default.IsNull() {
		ty = v.Default.Type()
	}
	switch {
	case ty == cty.String || ty == cty.DynamicPseudoType:
		return cty.StringVal(raw), nil
	case ty.IsPrimitiveType():
		return convert.Convert(cty.StringVal(raw), ty)
	}
	if d := pipeline.CheckNesting("--var "+v.Name, []byte(raw)); d.HasErrors() {
		return cty.NilVal, diag.Err(d)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), "--var "+v.Name, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, diag.Err(diags)
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, diag.Err(diags)
	}
	return val, nil
}

func evalAxes(p *pipeline.Pipeline, vars map[string]cty.Value, fns map[string]function.Function) ([]Axis, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}, Functions: fns}
	var axes []Axis
	for _, a := range p.Matrix.Axes {
		for _, tr := range a.Expr.Variables() {
			if tr.RootName() != "var" {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference in matrix",
					Detail:  fmt.Sprintf("Matrix axis %q refers to %s; axes may only use var.* and functions.", a.Name, traversalString(tr)),
					Subject: tr.SourceRange().Ptr()})
			}
		}
		if diags.HasErrors() {
			continue
		}
		val, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if !(val.Type().IsListType() || val.Type().IsTupleType() || val.Type().IsSetType()) || val.IsNull() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid matrix axis",
				Detail:  fmt.Sprintf("Matrix axis %q must be a list of values, like [\"a\", \"b\"]; got %s.", a.Name, val.Type().FriendlyName()),
				Subject: a.Expr.Range().Ptr()})
			continue
		}
		if val.LengthInt() == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty matrix axis",
				Detail:  fmt.Sprintf("Matrix axis %q has no values, so the matrix would have no trials. Give it at least one value or remove it.", a.Name),
				Subject: a.Expr.Range().Ptr()})
			continue
		}
		ax := Axis{Name: a.Name}
		var kind cty.Type
		seen := map[string]bool{}
		for it := val.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if ev.IsNull() || !ev.Type().IsPrimitiveType() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid matrix value",
					Detail:  fmt.Sprintf("Values of matrix axis %q must be strings, numbers or bools; got %s.", a.Name, ev.Type().FriendlyName()),
					Subject: a.Expr.Range().Ptr()})
				break
			}
			if kind == cty.NilType {
				kind = ev.Type()
			} else if ev.Type() != kind {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Mixed matrix value types",
					Detail:  fmt.Sprintf("Values of matrix axis %q must all have one type (%s first, then %s).", a.Name, kind.FriendlyName(), ev.Type().FriendlyName()),
					Subject: a.Expr.Range().Ptr()})
				break
			}
			k := ValueString(ev)
			if seen[k] {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate matrix value",
					Detail:  fmt.Sprintf("Matrix axis %q lists %s twice.", a.Name, k),
					Subject: a.Expr.Range().Ptr()})
				break
			}
			seen[k] = true
			ax.Values = append(ax.Values, ev)
		}
		axes = append(axes, ax)
	}
	return axes, diags
}

func expandCells(p *pipeline.Pipeline, axes []Axis, vars map[string]cty.Value, fns map[string]function.Function) ([]Cell, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	combos := [][]Param{{}}
	for _, ax := range axes {
		var next [][]Param
		for _, c := range combos {
			for _, v := range ax.Values {
				nc := append(append([]Param(nil), c...), Param{Name: ax.Name, Value: v})
				next = append(next, nc)
			}
		}
		combos = next
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}, Functions: fns}
	axisNames := map[string]bool{}
	var names []string
	for _, ax := range axes {
		axisNames[ax.Name] = true
		names = append(names, ax.Name)
	}
	readObjs := func(expr hcl.Expression, what string) []map[string]cty.Value {
		if expr == nil {
			return nil
		}
		val, d := expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return nil
		}
		if !(val.Type().IsListType() || val.Type().IsTupleType()) || val.IsNull() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid matrix " + what,
				Detail:  fmt.Sprintf("matrix %s must be a list of objects like [{ axis = value }].", what),
				Subject: expr.Range().Ptr()})
			return nil
		}
		var out []map[string]cty.Value
		for it := val.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if ev.IsNull() || !(ev.Type().IsObjectType() || ev.Type().IsMapType()) {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid matrix " + what,
					Detail: fmt.Sprintf("Each matrix %s entry must be an object like { axis = value }.", what), Subject: expr.Range().Ptr()})
				continue
			}
			m := ev.AsValueMap()
			for k := range m {
				if !axisNames[k] {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown matrix axis",
						Detail:  fmt.Sprintf("matrix %s names axis %q, which is not declared.%s", what, k, diag.Suggest(k, names)),
						Subject: expr.Range().Ptr()})
				}
			}
			out = append(out, m)
		}
		return out
	}
	excl := readObjs(p.Matrix.Exclude, "exclude")
	incl := readObjs(p.Matrix.Include, "include")
	if diags.HasErrors() {
		return nil, diags
	}
	matches := func(c []Param, m map[string]cty.Value) bool {
		for _, pr := range c {
			want, ok := m[pr.Name]
			if !ok {
				continue
			}
			if ValueString(want) != ValueString(pr.Value) {
				return false
			}
		}
		return true
	}
	var cells []Cell
	for _, c := range combos {
		drop := false
		for _, m := range excl {
			if matches(c, m) {
				drop = true
				break
			}
		}
		if !drop {
			cells = append(cells, Cell{Params: c})
		}
	}
	for _, m := range incl {
		var c []Param
		ok := true
		for _, ax := range axes {
			v, has := m[ax.Name]
			if !has {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incomplete matrix include",
					Detail:  fmt.Sprintf("A matrix include entry must set every axis; %q is missing.", ax.Name),
					Subject: p.Matrix.Include.Range().Ptr()})
				ok = false
				break
			}
			c = append(c, Param{Name: ax.Name, Value: v})
		}
		if ok {
			cells = append(cells, Cell{Params: c})
		}
	}
	if len(cells) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty matrix",
			Detail: "Every combination of the matrix is excluded, so there is nothing to run.", Subject: p.Matrix.DeclRange.Ptr()})
	}
	for i := range cells {
		cells[i].Index = i
	}
	return cells, diags
}

func traversalString(tr hcl.Traversal) string {
	var b strings.Builder
	for i, s := range tr {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			b.WriteString("[" + ValueString(s.Key) + "]")
		default:
			if i == 0 {
				b.WriteString("?")
			}
		}
	}
	return b.String()
}

// nameVarFlags adds to each error located on a bare var.NAME reference
// whose value came from --var NAME=… that it did: the problem is in the
// flag, not in the line shown.
func nameVarFlags(p *pipeline.Pipeline, in Inputs, diags hcl.Diagnostics) hcl.Diagnostics {
	if len(in.Vars) == 0 {
		return diags
	}
	for i, d := range diags {
		if d.Severity != hcl.DiagError || d.Subject == nil || d.Subject.Filename != p.File {
			continue
		}
		r := d.Subject
		if r.Start.Byte < 0 || r.End.Byte > len(p.Source) || r.Start.Byte >= r.End.Byte {
			continue
		}
		name, ok := strings.CutPrefix(string(p.Source[r.Start.Byte:r.End.Byte]), "var.")
		raw, set := in.Vars[name]
		if !ok || !set || strings.Contains(d.Detail, "--var "+name) {
			continue
		}
		for _, v := range p.Variables {
			if v.Name == name && v.Sensitive {
				raw = "(sensitive)" // however short: the redaction skips short values
			}
		}
		nd := *d
		nd.Detail = sentence(strings.TrimSpace(nd.Detail)) + fmt.Sprintf(" The value comes from --var %s=%s.", name, raw)
		diags[i] = &nd
	}
	return diags
}

// settingFlags maps the pipeline settings that have a command-line flag of
// their own to it: "--var repetitions=5" is answered with "--repetitions 5".
var settingFlags = map[string]string{"repetitions": "--repetitions", "seed": "--seed", "max_trials": "--max-trials"}

// checkTrialCount refuses, before expanding it, a matrix whose cells times
// repetitions exceed maxTrials (include entries count as cells).
func checkTrialCount(p *pipeline.Pipeline, axes []Axis, reps, maxTrials int) *hcl.Diagnostic {
	cells := 1
	for _, ax := range axes {
		n := len(ax.Values)
		if n > 0 && cells > maxTrials/n {
			return tooManyTrials(p, -1, reps, maxTrials)
		}
		cells *= n
	}
	if reps > 0 && cells > maxTrials/reps {
		return tooManyTrials(p, cells, reps, maxTrials)
	}
	return nil
}

func tooManyTrials(p *pipeline.Pipeline, cells, reps, maxTrials int) *hcl.Diagnostic {
	what := "the matrix has more cells than that"
	if cells >= 0 {
		what = fmt.Sprintf("%d cells × %d repetitions = %d", cells, reps, cells*reps)
	}
	rng := p.Matrix.DeclRange
	if rng.Filename == "" {
		rng = p.DeclRange
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Too many trials",
		Detail:  fmt.Sprintf("A plan has at most %d trials (matrix cells × repetitions); %s. Shrink the matrix, or raise the limit with --max-trials.", maxTrials, what),
		Subject: rng.Ptr()}
}

// SensitiveValues lists the values of the pipeline's sensitive variables
// (every string, number and bool inside them) and what the pipeline's
// expressions compute from them in the planned trials (DerivedSensitive:
// upper(var.token), a substring, the characters joined), for redaction.
func (p *Plan) SensitiveValues() []string {
	var out []string
	var walk func(v cty.Value)
	walk = func(v cty.Value) {
		if v == cty.NilVal || v.IsNull() || !v.IsKnown() {
			return
		}
		switch {
		case v.Type().IsPrimitiveType():
			out = append(out, ValueString(v))
		case v.CanIterateElements():
			for it := v.ElementIterator(); it.Next(); {
				_, ev := it.Element()
				walk(ev)
			}
		}
	}
	for _, v := range p.Pipeline.Variables {
		if v.Sensitive {
			walk(p.Vars[v.Name])
		}
	}
	derived := make([]string, 0, len(p.derived))
	for s := range p.derived {
		derived = append(derived, s)
	}
	sort.Strings(derived)
	return append(out, derived...)
}
