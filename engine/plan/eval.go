package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/providers"
)

// ImplicitLocal is the provider a service gets when the pipeline declares none.
const ImplicitLocal = "local"

// TrialEval evaluates bodies for one trial. In dry mode services are not
// provisioned and service.<name> attributes are placeholders such as
// "${service.nginx.url}"; otherwise the executor sets each service's
// endpoint with SetEndpoint as it comes up.
type TrialEval struct {
	plan     *Plan
	Trial    *Trial
	dry      bool
	locals   map[string]cty.Value
	services map[string]cty.Value
}

// NewTrialEval prepares evaluation for trial t.
func (p *Plan) NewTrialEval(t *Trial, dry bool) *TrialEval {
	// Each trial has the whole evaluation budget.
	p.budget.reset()
	te := &TrialEval{plan: p, Trial: t, dry: dry, services: map[string]cty.Value{}}
	for _, s := range p.Pipeline.Services {
		te.services[s.Name] = te.placeholderService(s.Name)
	}
	return te
}

func (te *TrialEval) placeholderService(name string) cty.Value {
	ph := func(attr string) cty.Value { return cty.StringVal("${service." + name + "." + attr + "}") }
	// ports.<name> exists for every port block the service declares (the
	// numbers are known after provisioning: 0 until then).
	ports := map[string]cty.Value{}
	for _, s := range te.plan.Pipeline.Services {
		if sb, ok := s.Body.(*hclsyntax.Body); ok && s.Name == name {
			for _, b := range sb.Blocks {
				if b.Type == "port" && len(b.Labels) > 0 {
					ports[b.Labels[0]] = cty.NumberIntVal(0)
				}
			}
		}
	}
	attrs := map[string]cty.Value{
		"name":  cty.StringVal(name),
		"url":   ph("url"),
		"host":  ph("host"),
		"port":  cty.NumberIntVal(0),
		"ports": cty.ObjectVal(ports),
	}
	for _, a := range te.plan.providerAttrs() {
		if _, ok := attrs[a]; !ok {
			attrs[a] = ph(a)
		}
	}
	return cty.ObjectVal(attrs)
}

// providerAttrs lists the extra service attributes the provider types used
// by the pipeline expose.
func (p *Plan) providerAttrs() []string {
	set := map[string]bool{}
	for _, pv := range p.Pipeline.Providers {
		if t, ok := providers.Lookup(pv.Type); ok {
			for _, a := range t.Attrs {
				set[a] = true
			}
		}
	}
	var out []string
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Plan is the plan this evaluation belongs to.
func (te *TrialEval) Plan() *Plan { return te.plan }

// SetEndpoint records a provisioned service's endpoint, making
// service.<name>.* known to later evaluations.
func (te *TrialEval) SetEndpoint(name string, ep providers.Endpoint) {
	ports := map[string]cty.Value{}
	for k, v := range ep.Ports {
		ports[k] = cty.NumberIntVal(int64(v))
	}
	attrs := map[string]cty.Value{
		"name":  cty.StringVal(name),
		"url":   cty.StringVal(ep.URL()),
		"host":  cty.StringVal(ep.Host),
		"port":  cty.NumberIntVal(int64(ep.Port)),
		"ports": cty.ObjectVal(ports),
	}
	for _, a := range te.plan.providerAttrs() {
		attrs[a] = cty.StringVal("")
	}
	for k, v := range ep.Attrs {
		attrs[k] = cty.StringVal(v)
	}
	te.services[name] = cty.ObjectVal(attrs)
	te.locals = nil // locals may refer to services
}

func (te *TrialEval) paramsObject() cty.Value {
	m := map[string]cty.Value{}
	for _, p := range te.Trial.Params {
		m[p.Name] = p.Value
	}
	return cty.ObjectVal(m)
}

func (te *TrialEval) baseVars() map[string]cty.Value {
	exe, steps := te.plan.fixedVars()
	return map[string]cty.Value{
		"var":    cty.ObjectVal(te.plan.Vars),
		"matrix": te.paramsObject(),
		"trial": cty.ObjectVal(map[string]cty.Value{
			"id":         cty.StringVal(te.Trial.ID),
			"index":      cty.NumberIntVal(int64(te.Trial.Index)),
			"cell":       cty.NumberIntVal(int64(te.Trial.Cell)),
			"repetition": cty.NumberIntVal(int64(te.Trial.Repetition)),
		}),
		"benchflow": cty.ObjectVal(map[string]cty.Value{
			"bin":     cty.StringVal(exe),
			"version": cty.StringVal(te.plan.version()),
		}),
		"step": steps,
	}
}

// version is benchflow.version: Inputs.Version, or "dev" when the caller
// gave none (a binary built without -X main.version, a test).
func (p *Plan) version() string {
	if p.Inputs.Version == "" {
		return "dev"
	}
	return p.Inputs.Version
}

// fixedVars are the parts of every evaluation context that do not change
// between trials: the executable and the step.<kind>.<name> object. They
// are built once, so evaluating every step of every trial stays linear
// in the number of steps.
func (p *Plan) fixedVars() (string, cty.Value) {
	p.fixedOnce.Do(func() {
		p.exe, _ = os.Executable()
		byKind := map[string]map[string]cty.Value{}
		for _, s := range p.Pipeline.Steps {
			if byKind[s.Kind] == nil {
				byKind[s.Kind] = map[string]cty.Value{}
			}
			byKind[s.Kind][s.Name] = cty.StringVal(s.Addr())
		}
		steps := map[string]cty.Value{}
		for k, m := range byKind {
			steps[k] = cty.ObjectVal(m)
		}
		p.stepsObj = cty.ObjectVal(steps)
	})
	return p.exe, p.stepsObj
}

// Locals evaluates the locals for this trial. They may use var, matrix,
// trial, each other, and services (whose attributes are placeholders until
// the service is provisioned; SetEndpoint recomputes them).
func (te *TrialEval) Locals() (_ map[string]cty.Value, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	if te.locals != nil {
		return te.locals, nil
	}
	done, diags := te.evalLocals(te.baseVars())
	te.locals = done
	return done, diags
}

// evalLocals evaluates the locals in the context vars (var, matrix, …;
// local and service are set here).
func (te *TrialEval) evalLocals(vars map[string]cty.Value) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	done := map[string]cty.Value{}
	pending := append([]*pipeline.Local(nil), te.plan.Pipeline.Locals...)
	for len(pending) > 0 {
		var next []*pipeline.Local
		for _, l := range pending {
			ready := true
			for _, tr := range l.Expr.Variables() {
				if tr.RootName() == "local" && len(tr) > 1 {
					if a, ok := tr[1].(hcl.TraverseAttr); ok {
						if _, ok := done[a.Name]; !ok {
							ready = false
						}
					}
				}
			}
			if !ready {
				next = append(next, l)
				continue
			}
			vars["local"] = cty.ObjectVal(done)
			vars["service"] = cty.ObjectVal(te.services)
			v, d := l.Expr.Value(&hcl.EvalContext{Variables: vars, Functions: te.plan.functions})
			diags = append(diags, d...)
			if d.HasErrors() {
				v = cty.DynamicVal
			}
			done[l.Name] = v
		}
		if len(next) == len(pending) {
			var names []string
			for _, l := range next {
				names = append(names, "local."+l.Name)
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Dependency cycle between local values",
				Detail: "These local values refer to each other: " + strings.Join(names, ", ") + ".", Subject: next[0].DeclRange.Ptr()})
			for _, l := range next {
				done[l.Name] = cty.DynamicVal
			}
			break
		}
		pending = next
	}
	return done, diags
}

// Context returns the evaluation context; self may be cty.NilVal.
func (te *TrialEval) Context(self cty.Value) *hcl.EvalContext {
	vars := te.baseVars()
	locals, _ := te.Locals()
	vars["local"] = cty.ObjectVal(locals)
	vars["service"] = cty.ObjectVal(te.services)
	if self != cty.NilVal {
		vars["self"] = self
	}
	return &hcl.EvalContext{Variables: vars, Functions: te.plan.functions}
}

// Provider finds the provider block a service uses in this trial. A nil
// block with no errors means the implicit local provider.
func (te *TrialEval) Provider(s *pipeline.Service) (_ *pipeline.Provider, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	p := te.plan.Pipeline
	sb, _ := s.Body.(*hclsyntax.Body)
	var name string
	var rng *hcl.Range
	if sb != nil {
		if a, ok := sb.Attributes["provider"]; ok {
			rng = a.Expr.Range().Ptr()
			v, d := a.Expr.Value(te.Context(cty.NilVal))
			if d.HasErrors() {
				return nil, d
			}
			if v.IsNull() || v.Type() != cty.String {
				return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid provider",
					Detail: "provider must be the name of a provider block (a string).", Subject: rng}}
			}
			name = v.AsString()
		}
	}
	var names []string
	for _, pv := range p.Providers {
		names = append(names, pv.Name)
		if pv.Name == name {
			return pv, nil
		}
	}
	if name == "" {
		switch len(p.Providers) {
		case 0:
			return nil, nil
		case 1:
			return p.Providers[0], nil
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Missing provider",
			Detail:  fmt.Sprintf("Service %q must say which provider deploys it (provider = …); the pipeline declares %s.", s.Name, strings.Join(names, ", ")),
			Subject: s.DeclRange.Ptr()}}
	}
	if name == ImplicitLocal && len(p.Providers) == 0 {
		return nil, nil
	}
	if rng == nil {
		rng = s.DeclRange.Ptr()
	}
	return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to undeclared provider",
		Detail:  fmt.Sprintf("Service %q uses provider %q in trial %s (%s), but no provider block has that name.%s Declared: %s.", s.Name, name, te.Trial.ID, te.Trial.ParamString(), diag.Suggest(name, names), listOrNone(names)),
		Subject: rng}}
}

// ProviderType resolves a provider block's registered type.
func ProviderType(pv *pipeline.Provider) (*providers.Type, hcl.Diagnostics) {
	typeName := ImplicitLocal
	if pv != nil {
		typeName = pv.Type
	}
	t, ok := providers.Lookup(typeName)
	if !ok {
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown provider type",
			Detail: fmt.Sprintf("There is no provider type %q.%s Available types: %s.", typeName, diag.Suggest(typeName, providers.Names()), listOrNone(providers.Names()))}
		if pv != nil {
			d.Subject = pv.TypeRange.Ptr()
		}
		return nil, hcl.Diagnostics{d}
	}
	return t, nil
}

// ProviderConfig decodes a provider block for this trial into its type's
// config struct. pv nil means the implicit local provider.
func (te *TrialEval) ProviderConfig(pv *pipeline.Provider) (_ *providers.Type, _ any, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	t, diags := ProviderType(pv)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	if t.NewConfig == nil {
		if pv != nil {
			_, d := pv.Config.Content(&hcl.BodySchema{})
			diags = append(diags, d...)
		}
		return t, nil, diags
	}
	cfg := t.NewConfig()
	if pv != nil {
		diags = append(diags, gohcl.DecodeBody(pv.Config, te.Context(cty.NilVal), cfg)...)
		if v, ok := cfg.(providers.Validator); ok && !diags.HasErrors() {
			diags = append(diags, configDiags(pv, v.Validate())...)
		}
	}
	return t, cfg, diags
}

// ServiceProvider is the provider of one service (or of a step's agents)
// in one trial.
type ServiceProvider struct {
	Block  *pipeline.Provider // nil for the implicit local provider
	Name   string             // the block's name, or ImplicitLocal
	Type   *providers.Type
	Config any // decoded and validated (providers.Validator), or nil
	// Provider is what Type.New built from Config; nil when New failed
	// (Err says why).
	Provider providers.Provider
	Err      error
}

// ServiceProvider resolves the provider of s for this trial: the block the
// service names, its type, its configuration decoded and validated, and the
// provider New builds from it (New contacts nothing). It is where a
// service's provider is resolved, for the run (engine/run) and `benchflow
// render`; the dry run resolves each provider block once per trial with
// the same decodeProvider and build. Diagnostics are about the service's provider
// attribute and the provider block; New's error is in Err.
func (te *TrialEval) ServiceProvider(s *pipeline.Service) (_ *ServiceProvider, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	pv, diags := te.Provider(s)
	if diags.HasErrors() {
		return nil, diags
	}
	sp, d := te.buildProvider(pv)
	return sp, append(diags, d...)
}

// buildProvider decodes provider block pv (nil: the implicit local
// provider) for this trial and builds its provider; nil when the block
// does not decode.
func (te *TrialEval) buildProvider(pv *pipeline.Provider) (*ServiceProvider, hcl.Diagnostics) {
	sp, diags := te.decodeProvider(pv)
	if sp != nil {
		sp.build()
		te.withholdProvider(sp)
	}
	return sp, diags
}

// decodeProvider is buildProvider without building: Provider is nil.
func (te *TrialEval) decodeProvider(pv *pipeline.Provider) (*ServiceProvider, hcl.Diagnostics) {
	typ, cfg, diags := te.ProviderConfig(pv)
	if diags.HasErrors() {
		return nil, diags
	}
	sp := &ServiceProvider{Block: pv, Name: ImplicitLocal, Type: typ, Config: cfg}
	if pv != nil {
		sp.Name = pv.Name
	}
	return sp, diags
}

// build calls the type's New with the decoded configuration.
func (sp *ServiceProvider) build() {
	sp.Provider, sp.Err = sp.Type.New(&providers.NewRequest{Name: sp.Name, Config: sp.Config})
}

// configDiags reports a provider config's Validate errors: each
// *providers.ConfigError at its attribute, anything else at the block.
func configDiags(pv *pipeline.Provider, err error) hcl.Diagnostics {
	var diags hcl.Diagnostics
	attrs, other := providers.ConfigErrors(err)
	for _, e := range attrs {
		d := steps.AttrErr(pv.Config, e.Attr, "Invalid provider setting", fmt.Sprintf("Provider %s.%s: %s: %s", pv.Type, pv.Name, e.Attr, sentence(e.Msg)))
		if e.Warning {
			d.Severity, d.Summary = hcl.DiagWarning, "Suspicious provider setting"
		}
		if d.Subject == nil {
			d.Subject = pv.DeclRange.Ptr()
		}
		diags = append(diags, d)
	}
	for _, e := range other {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid provider configuration",
			Detail: fmt.Sprintf("Provider %s.%s: %s", pv.Type, pv.Name, sentence(e.Error())), Subject: pv.DeclRange.Ptr()})
	}
	return diags
}

// sentence ends s with a full stop unless it ends with one already (or a
// question mark).
func sentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

// Step decodes a step body for this trial into its kind's config struct
// and validates durations, sizes and enums.
func (te *TrialEval) Step(st *pipeline.Step) (_ any, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	kind := steps.Lookup(st.Kind)
	if kind == nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown step kind", Detail: fmt.Sprintf("There is no step kind %q.", st.Kind), Subject: st.DeclRange.Ptr()}}
	}
	cfg := kind.NewConfig()
	diags = dropFollowOn(gohcl.DecodeBody(st.Body, te.Context(cty.NilVal), cfg))
	if diags.HasErrors() {
		return nil, diags
	}
	vd := kind.Validate(st, cfg)
	if te.dry {
		// A value computed from a service's attributes is a placeholder
		// until the service runs: checks of its value wait for the run.
		vd = te.dropServiceDependent(st.Body, vd)
	}
	diags = append(diags, vd...)
	diags = append(diags, te.checkStepRefs(st, cfg)...)
	return cfg, diags
}

// dropServiceDependent removes the diagnostics about attributes of body
// whose expression uses service.* (directly or through a local value).
func (te *TrialEval) dropServiceDependent(body hcl.Body, diags hcl.Diagnostics) hcl.Diagnostics {
	sb, ok := body.(*hclsyntax.Body)
	if !ok || len(diags) == 0 {
		return diags
	}
	dependent := map[hcl.Range]bool{}
	usesService := te.plan.serviceLocals()
	for _, a := range sb.Attributes {
		for _, tr := range a.Expr.Variables() {
			switch tr.RootName() {
			case "service":
				dependent[a.Expr.Range()] = true
			case "local":
				if len(tr) > 1 {
					if at, ok := tr[1].(hcl.TraverseAttr); ok && usesService[at.Name] {
						dependent[a.Expr.Range()] = true
					}
				}
			}
		}
	}
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Subject != nil && dependent[*d.Subject] {
			continue
		}
		out = append(out, d)
	}
	return out
}

// checkStepRefs checks what a step names outside itself: services, and the
// files it reads (body_file, script, cacert) with their content's rule
// (a CA file's PEM), so that what validates also runs.
func (te *TrialEval) checkStepRefs(st *pipeline.Step, cfg any) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var refs steps.Refs
	if k := steps.Lookup(st.Kind); k != nil && k.Refs != nil {
		refs = k.Refs(cfg)
	}
	if steps.BehaviourOf(st.Kind).Drives {
		diags = append(diags, te.checkAgentsProvider(st, steps.LoadOf(cfg))...)
	}
	for _, f := range refs.Files {
		if err := statFile(te.plan.Pipeline.FS, f.Path); err != nil {
			summary := "Missing file"
			if errors.Is(err, pipeline.ErrNotRegular) || errors.Is(err, pipeline.ErrTooLarge) {
				summary = "Unreadable file"
			}
			diags = append(diags, attrErr(st.Body, f.Attr, summary,
				fmt.Sprintf("%s %q: %s.", f.Attr, f.Path, strings.TrimSuffix(err.Error(), "."))))
			continue
		}
		if f.Check == nil {
			continue
		}
		summary := "Unreadable file"
		data, err := readFile(te.plan.Pipeline.FS, f.Path)
		if err == nil {
			summary, err = "Invalid file", f.Check(data)
		}
		if err != nil {
			diags = append(diags, attrErr(st.Body, f.Attr, summary,
				fmt.Sprintf("%s %q: %s.", f.Attr, f.Path, strings.TrimSuffix(err.Error(), "."))))
		}
	}
	services := refs.Services
	var names []string
	declared := map[string]bool{}
	for _, s := range te.plan.Pipeline.Services {
		names = append(names, s.Name)
		declared[s.Name] = true
	}
	for _, n := range services {
		if !declared[n] {
			diags = append(diags, attrErr(st.Body, "services", "Reference to undeclared service",
				fmt.Sprintf("Step %s names service %q, which is not declared.%s Declared services: %s.", st.Addr(), n, diag.Suggest(n, names), listOrNone(names))))
		}
	}
	return diags
}

// dryRun evaluates everything of the trial that can be evaluated before
// provisioning, and summarises each service: which provider deploys it and
// a fingerprint of its evaluated inputs (for reuse between trials).
func (te *TrialEval) dryRun() ([]TrialService, hcl.Diagnostics) {
	_, diags := te.Locals()
	p := te.plan.Pipeline
	// Every provider block is decoded once per trial, used or not, and
	// built (New) once when a service uses it.
	provs := map[string]*ServiceProvider{}
	for _, pv := range p.Providers {
		sp, d := te.decodeProvider(pv)
		diags = append(diags, d...)
		provs[pv.Name] = sp
	}
	if len(p.Providers) == 0 {
		_, d := ProviderType(nil)
		diags = append(diags, d...)
	}
	var services []TrialService
	newFailed := map[string]bool{}
	for _, s := range p.Services {
		ts := TrialService{Name: s.Name, Provider: ImplicitLocal, ProviderType: ImplicitLocal}
		h := sha256.New()
		pv, d := te.Provider(s)
		diags = append(diags, d...)
		if pv != nil {
			ts.Provider, ts.ProviderType = pv.Name, pv.Type
			var cfg any
			if sp := provs[pv.Name]; sp != nil {
				cfg = sp.Config
				if sp.Provider == nil && sp.Err == nil {
					sp.build()
					te.withholdProvider(sp)
				}
				// New only checks the configuration; it contacts nothing.
				// Its error is the run's error to come, so it is this
				// trial's too (once per provider).
				if sp.Err != nil && !newFailed[pv.Name] {
					newFailed[pv.Name] = true
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid provider configuration",
						Detail: sentence(sp.Err.Error()), Subject: pv.DeclRange.Ptr()})
				}
				if ds, ok := sp.Provider.(providers.Describer); ok && sp.Err == nil {
					ts.Describe = ds.Describe()
				}
			}
			fmt.Fprintf(h, "%s/%s/%#v\n", pv.Type, pv.Name, cfg)
		}
		// The plan's placement: self.* are placeholders, whatever the
		// provider.
		ps, d := te.PrepareService(s, Placement{})
		diags = append(diags, d...)
		if ps != nil {
			cfg := ps.Config
			fmt.Fprintf(h, "%q %q %v %d %v\n", cfg.Image, cfg.Command, sortedMap(cfg.Env), cfg.Replicas, ps.Ports)
			for _, f := range ps.Files {
				fmt.Fprintf(h, "%s %x\n", f.Name, sha256.Sum256(f.Data))
			}
			if !d.HasErrors() {
				ts.Fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
			}
		}
		services = append(services, ts)
	}
	for _, st := range p.Steps {
		_, d := te.Step(st)
		diags = append(diags, d...)
	}
	return services, diags
}

func sortedMap(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// dropFollowOn removes the "Unsuitable value type" errors gohcl adds after
// an expression already failed at the same place: one mistake, one message.
func dropFollowOn(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Summary == "Unsuitable value type" && d.Subject != nil {
			dup := false
			for _, o := range diags {
				if o != d && o.Severity == hcl.DiagError && o.Subject != nil && o.Summary != d.Summary &&
					o.Subject.Start.Line == d.Subject.Start.Line {
					dup = true
				}
			}
			if dup {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}
