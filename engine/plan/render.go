package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// JSONPlan is the machine-readable form printed by `benchflow plan --json`.
type JSONPlan struct {
	Pipeline    string `json:"pipeline"`
	Description string `json:"description,omitempty"`
	Order       string `json:"order"`
	Seed        int64  `json:"seed,omitempty"`
	Repetitions int    `json:"repetitions"`
	// Settings are the pipeline block's other settings, every one with
	// its effective value (defaults included), so that two plans that
	// print the same JSON run the same way.
	Settings JSONSettings `json:"settings"`
	Axes     []JSONAxis   `json:"matrix"`
	Trials   []JSONTrial  `json:"trials"`
	Steps    []JSONStep   `json:"steps"`
	// Adaptive is set for repetitions = { min, max, precision, budget }:
	// trials lists the first min rounds; the run adds more.
	Adaptive *JSONAdaptive `json:"adaptive,omitempty"`
	// Claims are the pipeline's claims with the cells they select.
	Claims []JSONClaim `json:"claims,omitempty"`
	// ClaimsOff names the claims whose enabled is false for these
	// variables: not matched, judged or recorded.
	ClaimsOff []string `json:"claims_off,omitempty"`
}

// JSONSettings are the pipeline block's run settings (docs/language.md,
// "pipeline").
type JSONSettings struct {
	OnFailure       string `json:"on_failure"`
	ReuseServices   bool   `json:"reuse_services"`
	ExcludeUnsteady bool   `json:"exclude_unsteady"`
	BusyRerun       int    `json:"busy_rerun"`
	BusyGiveUp      int    `json:"busy_give_up"`
	OutputDir       string `json:"output_dir"`
	OutputFormat    string `json:"output_format"`
}

// JSONClaim is a claim of the plan.
type JSONClaim struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Kind        string         `json:"kind"`
	Metric      string         `json:"metric,omitempty"`
	Step        string         `json:"step"`
	Cell        map[string]any `json:"cell"`
	Versus      map[string]any `json:"versus,omitempty"`
	// VersusMetric divides Metric by another metric of the same trials.
	VersusMetric string `json:"versus_metric,omitempty"`
	Bound        string `json:"bound,omitempty"`
	Verdict      string `json:"verdict,omitempty"`
	// Cells are the selected cells' indexes (JSONTrial.cell); Versus
	// the cell each is compared with.
	Cells       []int `json:"cells"`
	VersusCells []int `json:"versus_cells,omitempty"`
}

// JSONAdaptive describes adaptive repetitions and the estimated time.
type JSONAdaptive struct {
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	Precision float64 `json:"precision"` // fraction: 0.03 = 3%
	BudgetS   float64 `json:"budget_s,omitempty"`
	// TrialS is the warm and load time of one trial (Plan.TrialEstimate);
	// EstimatedMinS/MaxS multiply it by cells × min and cells × max.
	TrialS        float64 `json:"trial_s"`
	EstimatedMinS float64 `json:"estimated_min_s"`
	EstimatedMaxS float64 `json:"estimated_max_s"`
}

// JSONAxis is a matrix axis.
type JSONAxis struct {
	Name   string `json:"name"`
	Values []any  `json:"values"`
}

// JSONTrial is one trial with its evaluated services and steps.
type JSONTrial struct {
	ID         string                    `json:"id"`
	Index      int                       `json:"index"`
	Cell       int                       `json:"cell"`
	Repetition int                       `json:"repetition"`
	Params     map[string]any            `json:"params"`
	Services   []JSONService             `json:"services"`
	Steps      map[string]map[string]any `json:"steps"`
}

// JSONService is a service's deployment in one trial.
type JSONService struct {
	Name         string         `json:"name"`
	Provider     string         `json:"provider"`
	ProviderType string         `json:"provider_type"`
	Reuse        bool           `json:"reuse"`
	Describe     string         `json:"describe,omitempty"`
	Config       map[string]any `json:"config,omitempty"`
}

// JSONStep is a node of the step DAG.
type JSONStep struct {
	Address   string   `json:"address"`
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	DependsOn []string `json:"depends_on"`
	During    string   `json:"during,omitempty"`
}

// GoValue converts a primitive cty value to string, int64, float64 or bool.
func GoValue(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	switch v.Type() {
	case cty.String:
		return v.AsString()
	case cty.Bool:
		return v.True()
	case cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == 0 {
				return i
			}
		}
		f, _ := bf.Float64()
		return f
	}
	b, _ := ctyjson.Marshal(v, v.Type())
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// JSON builds the JSON form of the plan, with each trial's services and
// steps evaluated in dry mode (service addresses are placeholders).
func (p *Plan) JSON() *JSONPlan {
	jp := &JSONPlan{
		Pipeline:    p.Pipeline.Name,
		Description: p.Pipeline.Description,
		Order:       p.Order,
		Repetitions: p.Pipeline.Repetitions,
		Settings: JSONSettings{
			OnFailure: p.Pipeline.OnFailure, ReuseServices: p.Pipeline.ReuseServices,
			ExcludeUnsteady: p.Pipeline.ExcludeUnsteady, BusyRerun: p.Pipeline.BusyRerun,
			BusyGiveUp: p.Pipeline.BusyGiveUp, OutputDir: p.Pipeline.Output.Dir, OutputFormat: p.Pipeline.Output.Format,
		},
		Axes:   []JSONAxis{},
		Trials: []JSONTrial{},
		Steps:  []JSONStep{},
	}
	if p.Order == "random" {
		jp.Seed = p.Seed
	}
	for _, cp := range p.Claims {
		c := cp.Claim
		jc := JSONClaim{Name: c.Name, Description: c.Description, Kind: c.Kind, Metric: c.Metric, Step: cp.Step,
			Cell: claimParamsMap(c.Cell), VersusMetric: c.VersusMetric, Bound: c.Bound.Text, Verdict: c.Verdict, Cells: cp.Cells, VersusCells: cp.Versus}
		if len(c.Versus) > 0 {
			jc.Versus = claimParamsMap(c.Versus)
		}
		jp.Claims = append(jp.Claims, jc)
	}
	for _, c := range p.ClaimsOff {
		jp.ClaimsOff = append(jp.ClaimsOff, c.Name)
	}
	if a := p.Adaptive; a != nil {
		est := p.TrialEstimate().Seconds()
		jp.Adaptive = &JSONAdaptive{Min: a.Min, Max: a.Max, Precision: a.Precision, BudgetS: a.Budget.Seconds(),
			TrialS: est, EstimatedMinS: est * float64(len(p.Cells)*a.Min), EstimatedMaxS: est * float64(len(p.Cells)*a.Max)}
	}
	if len(p.Trials) > 0 {
		max := 0
		for _, t := range p.Trials {
			if t.Repetition > max {
				max = t.Repetition
			}
		}
		jp.Repetitions = max
	}
	for _, a := range p.Axes {
		ja := JSONAxis{Name: a.Name}
		for _, v := range a.Values {
			ja.Values = append(ja.Values, GoValue(v))
		}
		jp.Axes = append(jp.Axes, ja)
	}
	for _, t := range p.Trials {
		jt := JSONTrial{ID: t.ID, Index: t.Index, Cell: t.Cell, Repetition: t.Repetition,
			Params: map[string]any{}, Services: []JSONService{}, Steps: map[string]map[string]any{}}
		for _, pr := range t.Params {
			jt.Params[pr.Name] = GoValue(pr.Value)
		}
		te := p.NewTrialEval(t, true)
		for i, s := range p.Pipeline.Services {
			js := JSONService{Name: s.Name}
			if i < len(t.Services) {
				ts := t.Services[i]
				js.Provider, js.ProviderType, js.Reuse, js.Describe = ts.Provider, ts.ProviderType, ts.Reuse, ts.Describe
			}
			if ps, d := te.PrepareService(s, Placement{}); ps != nil && !d.HasErrors() {
				js.Config = structMap(reflect.ValueOf(ps.Config).Elem())
			}
			jt.Services = append(jt.Services, js)
		}
		for _, st := range p.Pipeline.Steps {
			if cfg, d := te.Step(st); !d.HasErrors() {
				jt.Steps[st.Addr()] = structMap(reflect.ValueOf(cfg).Elem())
			}
		}
		jp.Trials = append(jp.Trials, jt)
	}
	for _, n := range p.Steps {
		js := JSONStep{Address: n.Addr(), Kind: n.Step.Kind, Name: n.Step.Name, DependsOn: n.Deps, During: n.During}
		if js.DependsOn == nil {
			js.DependsOn = []string{}
		}
		jp.Steps = append(jp.Steps, js)
	}
	return jp
}

var exprType = reflect.TypeOf((*hcl.Expression)(nil)).Elem()
var ctyValueType = reflect.TypeOf(cty.Value{})

// structMap turns a decoded config struct into a map keyed by hcl tag
// names, leaving out zero values and expressions.
func structMap(v reflect.Value) map[string]any {
	out := map[string]any{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("hcl")
		name, _, _ := strings.Cut(tag, ",")
		if name == "" || f.Type == exprType || strings.Contains(tag, ",label") {
			continue
		}
		if x := plainValue(v.Field(i)); x != nil {
			out[name] = x
		}
	}
	return out
}

func plainValue(fv reflect.Value) any {
	if fv.Type() == ctyValueType {
		cv := fv.Interface().(cty.Value)
		if cv == cty.NilVal || cv.IsNull() {
			return nil
		}
		return GoValue(cv)
	}
	switch fv.Kind() {
	case reflect.Pointer:
		if fv.IsNil() {
			return nil
		}
		if fv.Elem().Kind() == reflect.Struct {
			return structMap(fv.Elem())
		}
		return fv.Elem().Interface()
	case reflect.Slice:
		if fv.Len() == 0 {
			return nil
		}
		var items []any
		for j := 0; j < fv.Len(); j++ {
			e := fv.Index(j)
			if e.Kind() == reflect.Struct {
				m := structMap(e)
				// keep the label
				for k := 0; k < e.NumField(); k++ {
					if tag := e.Type().Field(k).Tag.Get("hcl"); strings.HasSuffix(tag, ",label") {
						n, _, _ := strings.Cut(tag, ",")
						m[n] = e.Field(k).Interface()
					}
				}
				items = append(items, m)
			} else {
				items = append(items, e.Interface())
			}
		}
		return items
	case reflect.Map:
		if fv.Len() == 0 {
			return nil
		}
		return fv.Interface()
	case reflect.Struct:
		return structMap(fv)
	default:
		if fv.IsZero() {
			return nil
		}
		return fv.Interface()
	}
}

// WriteJSON prints the plan as indented JSON.
func (p *Plan) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p.JSON())
}

// WriteText prints the plan for people: trials in execution order, then
// the step DAG.
func (p *Plan) WriteText(w io.Writer) error {
	pp := p.Pipeline
	fmt.Fprintf(w, "Pipeline %q", pp.Name)
	if pp.Description != "" {
		fmt.Fprintf(w, ": %s", pp.Description)
	}
	fmt.Fprintln(w)
	cells := len(p.Cells)
	reps := 0
	if cells > 0 {
		reps = len(p.Trials) / cells
	}
	order := p.Order
	if order == "random" {
		order = fmt.Sprintf("random, seed %d", p.Seed)
	}
	fmt.Fprintf(w, "%d trials = %d matrix cells × %d repetitions, order %s\n", len(p.Trials), cells, reps, order)
	if l := p.adaptiveLine(); l != "" {
		fmt.Fprintln(w, l)
	}
	if n := pp.BusyRerun; n > 0 {
		for _, s := range pp.Steps {
			if s.Kind == pipeline.KindCollect {
				fmt.Fprintf(w, "a trial whose load finds the machine busy runs again, up to %d %s (busy_rerun)", n, map[bool]string{true: "time", false: "times"}[n == 1])
				if g := pp.BusyGiveUp; g > 0 {
					fmt.Fprintf(w, ", until %d %s in a row found it busy (busy_give_up)", g, map[bool]string{true: "attempt", false: "attempts"}[g == 1])
				}
				fmt.Fprintln(w)
				break
			}
		}
	}
	fmt.Fprintln(w)

	// Trials table.
	header := []string{"#", "trial"}
	for _, a := range p.Axes {
		header = append(header, a.Name)
	}
	header = append(header, "services")
	rows := [][]string{header}
	for _, t := range p.Trials {
		row := []string{strconv.Itoa(t.Index + 1), t.ID}
		for _, pr := range t.Params {
			row = append(row, ValueString(pr.Value))
		}
		var svcs []string
		for _, s := range t.Services {
			x := fmt.Sprintf("%s@%s(%s)", s.Name, s.Provider, s.ProviderType)
			if s.Describe != "" {
				x = fmt.Sprintf("%s@%s(%s: %s)", s.Name, s.Provider, s.ProviderType, s.Describe)
			}
			if s.Reuse {
				x += " kept running"
			}
			svcs = append(svcs, x)
		}
		row = append(row, strings.Join(svcs, ", "))
		rows = append(rows, row)
	}
	writeTable(w, rows)

	fmt.Fprintln(w, "\nSteps (each trial):")
	fmt.Fprintln(w, "  provision  services:", p.serviceNames())
	for _, n := range p.Steps {
		var rel string
		switch {
		case n.During != "":
			rel = "runs during " + n.During
		case len(n.Deps) > 0:
			rel = "after " + strings.Join(n.Deps, ", ")
		default:
			rel = "after provisioning"
		}
		if steps.SearchBlock(n.Step.Body) != nil {
			rel += "; a capacity search (probes at rising rates under an SLO)"
		}
		fmt.Fprintf(w, "  %-28s %s\n", n.Addr(), rel)
	}
	fmt.Fprintln(w, "  teardown   everything provisioned or changed, in reverse order")
	if len(p.Claims)+len(p.ClaimsOff) > 0 {
		fmt.Fprintln(w, "\nClaims (checked after the run; report shows holds, fails or inconclusive):")
		on := map[*claims.Claim]ClaimPlan{}
		for _, cp := range p.Claims {
			on[cp.Claim] = cp
		}
		for _, c := range p.Pipeline.Claims {
			cp, ok := on[c]
			if !ok {
				if slices.Contains(p.ClaimsOff, c) {
					fmt.Fprintf(w, "  %-28s %s\n", c.Name, OffLine)
				}
				continue
			}
			fmt.Fprintf(w, "  %-28s %s\n", c.Name, cp.ClaimLine())
			if d := c.Description; d != "" {
				fmt.Fprintf(w, "  %-28s %s\n", "", d)
			}
		}
	}
	return nil
}

// claimParamsMap is a claim's cell or versus as JSON values.
func claimParamsMap(ps []claims.Param) map[string]any {
	m := map[string]any{}
	for _, p := range ps {
		m[p.Name] = GoValue(p.Value)
	}
	return m
}

func (p *Plan) serviceNames() string {
	var s []string
	for _, sv := range p.Pipeline.Services {
		s = append(s, sv.Name)
	}
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

func writeTable(w io.Writer, rows [][]string) {
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			if len(c) > widths[i] {
				widths[i] = len(c)
			}
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + strings.Repeat(" ", widths[i]-len(c)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// Settings lists a decoded configuration struct (a provider's) by its
// HCL attribute names, leaving out unset values; nil for anything else.
func Settings(cfg any) map[string]any {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	return structMap(v.Elem())
}
