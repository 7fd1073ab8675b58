package steps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
)

// loadKind is `step "load"`: one measured load (or, with a search block,
// a capacity search) against the services, with the collect steps that
// name it running alongside.
var loadKind = KindOf(Spec[LoadConfig]{
	Name:      pipeline.KindLoad,
	Phase:     4,
	Blocks:    loadBlocks,
	Behaviour: Behaviour{Drives: true, Measures: true},
	Validate:  validateLoad,
	Refs:      loadRefs,
})

// warmKind is `step "warm"`: a load before the measured ones whose results
// are tagged "warm" (5s by default, or until steady). It shares the load
// step's schema.
var warmKind = KindOf(Spec[LoadConfig]{
	Name:      pipeline.KindWarm,
	Phase:     3,
	Blocks:    loadBlocks,
	Behaviour: Behaviour{Drives: true},
	Validate:  validateLoad,
	Refs:      loadRefs,
})

// LoadConfig is the body of `step "load"` and `step "warm"`: the schema
// the load and warm kinds own, nested blocks included. The fields mirror
// `benchflow load` flags; LoadOptions maps them to load.Options.
type LoadConfig struct {
	Target      string            `hcl:"target,optional"`
	URLs        []URLConfig       `hcl:"url,block"`
	Connections int               `hcl:"connections,optional"` // -c, default 10
	Threads     int               `hcl:"threads,optional"`     // -t, default 2
	Duration    string            `hcl:"duration,optional"`    // -d, default "10s" (warm: "5s")
	Requests    int64             `hcl:"requests,optional"`    // -n
	Rate        float64           `hcl:"rate,optional"`        // -R, requests/s in total
	Timeout     string            `hcl:"timeout,optional"`     // default "2s"
	Method      string            `hcl:"method,optional"`
	Headers     map[string]string `hcl:"headers,optional"`
	Body        string            `hcl:"body,optional"`
	BodyFile    string            `hcl:"body_file,optional"`
	KeepAlive   *bool             `hcl:"keepalive,optional"` // default true
	Script      string            `hcl:"script,optional"`    // Starlark request script
	Interval    string            `hcl:"interval,optional"`  // timeseries interval, default "1s"
	BusyPoll    string            `hcl:"busy_poll,optional"` // --busy-poll, default off
	Nap         string            `hcl:"nap,optional"`       // --nap, default off
	Engine      string            `hcl:"engine,optional"`    // --engine: auto (default), uring, epoll, goroutines
	Protocol    string            `hcl:"protocol,optional"`  // "http/1.1" (default), "h2" (--h2) or "h3" (--h3)
	Streams     int               `hcl:"streams,optional"`   // --streams, HTTP/2 streams per connection
	SNI         string            `hcl:"sni,optional"`       // --sni
	// CACert is a PEM file of CA certificates, relative to the pipeline's
	// folder like body_file (--cacert): https targets are verified
	// against it. The run keeps it in sources/.
	CACert    string `hcl:"cacert,optional"`
	TLSResume bool   `hcl:"tls_resume,optional"` // --tls-resume
	H3ZeroRTT bool   `hcl:"h3_0rtt,optional"`    // --h3-0rtt
	// Checks are response checks (--check): "status==200", "size==4096",
	// "body contains TEXT", "header Content-Type ~ json".
	Checks []string `hcl:"checks,optional"`
	// Stages ramp an open loop's rate (--stage): ["10s:2000", "30s:2000"].
	Stages []string `hcl:"stages,optional"`
	// Until = "steady" (warm steps only) warms in windows of Window
	// (default "1s") until the last three windows' req/s and p50 are each
	// within Tolerance (default "5%") of their mean, for at most Duration
	// (default "30s" then). See run/warm.go.
	Until     string `hcl:"until,optional"`
	Window    string `hcl:"window,optional"`
	Tolerance string `hcl:"tolerance,optional"`
	// Search, in a load step, makes it a capacity search under an SLO
	// (benchflow load --find-max) instead of one load.
	Search *SearchConfig `hcl:"search,block"`
	// Agents, when set, runs the load from that many `benchflow agent`
	// processes started by a provider, and merges their results
	// (agents.go).
	Agents *AgentsConfig `hcl:"agents,block"`
	// MaxErrorRatio fails the trial when a larger fraction of the step's
	// requests failed (load steps only; nil means DefaultMaxErrorRatio).
	MaxErrorRatio *float64       `hcl:"max_error_ratio,optional"`
	DependsOn     hcl.Expression `hcl:"depends_on,optional"`

	// checked is what validateLoad found when the kind's Validate ran on
	// this config (TrialEval.Step decodes a fresh one for each trial):
	// LoadOptions takes it instead of parsing and checking again. A config
	// changed after its check would need a new one.
	checked *loadCheck
}

// durations are c's durations: those validateLoad parsed, else parsed now.
func (c *LoadConfig) durations() loadDurations {
	if c.checked != nil {
		return c.checked.durations
	}
	return parseDurations(c)
}

// loadCheck is a load step's settings checked once per trial: the
// duration attributes parsed and load.Options.Validate's field errors for
// the options without the files (body_file, cacert).
type loadCheck struct {
	durations loadDurations
	fes       []*load.FieldError
}

// loadDurations are the duration attributes of a load or warm step,
// parsed: a value that does not parse is 0 and has its error in errs, in
// the attributes' order (duration, timeout, interval, busy_poll, nap).
type loadDurations struct {
	duration, timeout, interval, busyPoll, nap time.Duration
	errs                                       []durationError
}

// durationError is a duration attribute that does not parse.
type durationError struct {
	name, value string
	err         error
}

func (e durationError) Error() string { return fmt.Sprintf("%s = %q: %s", e.name, e.value, e.err) }

func (e durationError) Unwrap() error { return e.err }

// zeroDurationDiag is the diagnostic of a duration written as 0.
func zeroDurationDiag(body hcl.Body) *hcl.Diagnostic {
	return AttrErr(body, "duration", "Invalid duration", "duration must be more than 0: leave it out for the default (10s, 5s for warm), or bound the step with requests.")
}

// parseDurations parses c's duration attributes with the rules every
// duration of a pipeline follows (pipeline.ParseDuration).
func parseDurations(c *LoadConfig) loadDurations {
	var d loadDurations
	for _, a := range []struct {
		name, v string
		dst     *time.Duration
	}{{"duration", c.Duration, &d.duration}, {"timeout", c.Timeout, &d.timeout}, {"interval", c.Interval, &d.interval}, {"busy_poll", c.BusyPoll, &d.busyPoll}, {"nap", c.Nap, &d.nap}} {
		if a.v == "" {
			continue
		}
		v, err := pipeline.ParseDuration(a.v)
		if err != nil {
			d.errs = append(d.errs, durationError{a.name, a.v, err})
		}
		*a.dst = v
	}
	return d
}

// durationParsed tells whether the duration attribute parsed (or is not
// written).
func (d loadDurations) durationParsed() bool {
	return len(d.errs) == 0 || d.errs[0].name != "duration"
}

// zeroDuration tells whether duration is written and is 0, which Options
// would read as "the default".
func (d loadDurations) zeroDuration(c *LoadConfig) bool {
	return c.Duration != "" && d.duration == 0 && d.durationParsed()
}

// SearchConfig is the `search {}` block of a load step: the flags of
// `benchflow load --find-max`.
type SearchConfig struct {
	SLO       string  `hcl:"slo"`                 // "p99<10ms,errors<0.1%"
	StartRate float64 `hcl:"start_rate,optional"` // default 100
	MaxRate   float64 `hcl:"max_rate,optional"`   // default 1e7
	Probe     string  `hcl:"probe,optional"`      // default "5s"
	Pause     string  `hcl:"pause,optional"`      // default "1s"
	Precision string  `hcl:"precision,optional"`  // default "2%"
	MaxProbes int     `hcl:"max_probes,optional"` // default 30
}

// DefaultMaxErrorRatio is a load step's max_error_ratio when it sets none:
// a trial where more than half the requests failed measured a failure.
const DefaultMaxErrorRatio = 0.5

// URLConfig is a `url {}` block of a load step: one of several weighted
// targets.
type URLConfig struct {
	URL     string            `hcl:"url"`
	Weight  int               `hcl:"weight,optional"`
	Method  string            `hcl:"method,optional"`
	Headers map[string]string `hcl:"headers,optional"`
	Body    string            `hcl:"body,optional"`
}

// loadBlocks spells the nested blocks of LoadConfig in Starlark.
var loadBlocks = []Block{{Keyword: "urls", Type: "url", Many: true}, {Keyword: "search", Type: "search"}, {Keyword: "agents", Type: "agents"}}

func loadRefs(c *LoadConfig) Refs {
	var r Refs
	checkCA := func(data []byte) error {
		_, err := load.ParseCACerts(c.CACert, data)
		return err
	}
	for _, f := range []FileRef{{"body_file", c.BodyFile, nil}, {"script", c.Script, nil}, {"cacert", c.CACert, checkCA}} {
		if f.Path != "" {
			r.Files = append(r.Files, f)
		}
	}
	return r
}

// This file maps the body of a load or warm step (LoadConfig) to
// load.Options, so steps accept the same settings as the `benchflow load`
// flags and are held to the same limits: load.Options.Validate is the one
// rule; here its errors get the attribute's source range.

// LoadOptions turns the body of a `step "load"` or `step "warm"` (kind is
// pipeline.KindLoad or pipeline.KindWarm) into load.Options. A warm step
// defaults to 5s instead of 10s; its result is tagged "warm" and a load's
// "load". body_file and cacert are read from fsys (the pipeline's folder;
// nil means the current directory). A request script (c.Script) is not
// read here: the caller sets Options.Requester. Errors name the attribute.
func LoadOptions(kind string, c *LoadConfig, fsys fs.FS) (load.Options, error) {
	var o load.Options
	if c == nil {
		return o, fmt.Errorf("no %s settings", kind)
	}
	if kind != pipeline.KindLoad && kind != pipeline.KindWarm {
		return o, fmt.Errorf("step kind %q is not a load or warm step", kind)
	}
	var body []byte
	if c.BodyFile != "" {
		if c.Body != "" {
			return o, fmt.Errorf("body and body_file are mutually exclusive")
		}
		if fsys == nil {
			fsys = os.DirFS(".")
		}
		var err error
		if body, err = pipeline.ReadFile(fsys, path.Clean(c.BodyFile)); err != nil {
			return o, fmt.Errorf("body_file: %w", err)
		}
	}
	o, errs := loadSettings(kind, c, body, c.durations())
	if len(errs) > 0 {
		return o, errs[0]
	}
	if c.CACert != "" {
		if fsys == nil {
			fsys = os.DirFS(".")
		}
		pem, err := pipeline.ReadFile(fsys, path.Clean(c.CACert))
		if err != nil {
			return o, fmt.Errorf("cacert: %w", err)
		}
		o.CACert, o.CACertPEM = c.CACert, pem
	}
	if len(o.Targets) == 0 && c.Script == "" {
		return o, fmt.Errorf("target: a %s step needs a target, url blocks or a script", kind)
	}
	// Validate's field errors: those found when the step was decoded for
	// this trial (validateLoad) and the rule of the certificates read
	// since, which Validate checks last; else (a config no Validate saw)
	// Validate's own.
	var fes []*load.FieldError
	if c.checked != nil {
		fes = append(append(fes, c.checked.fes...), load.FieldErrors(o.ValidateCACert())...)
	} else {
		fes = load.FieldErrors(o.Validate())
	}
	var problems []error
	for _, fe := range fes {
		if fe.Field == "target" && fe.Index == 0 && c.Script != "" {
			continue // the script's requester supplies the requests
		}
		problems = append(problems, fe)
	}
	if err := errors.Join(problems...); err != nil {
		return o, err
	}
	return load.Defaults(o), nil
}

// loadSettings maps c, with its durations d (parseDurations), to options
// without reading files and without checking limits. A duration that does
// not parse is left at 0 and reported (naming the attribute) in errs, as
// is a duration written as 0, which Options would read as "the default".
func loadSettings(kind string, c *LoadConfig, body []byte, d loadDurations) (load.Options, []error) {
	var errs []error
	o := load.Options{Tag: kind, Connections: c.Connections, Threads: c.Threads, Requests: c.Requests, Rate: c.Rate}
	rest := d.errs
	if !d.durationParsed() {
		errs, rest = append(errs, rest[0]), rest[1:]
	}
	o.Duration = d.duration
	if d.zeroDuration(c) {
		errs = append(errs, fmt.Errorf("duration = %q: must be more than 0 (leave it out for the default, or bound the step with requests)", c.Duration))
	}
	if o.Duration == 0 && o.Requests == 0 && kind == pipeline.KindWarm {
		o.Duration = 5 * time.Second
	}
	for _, e := range rest {
		errs = append(errs, e)
	}
	o.Timeout, o.Interval, o.BusyPoll, o.Nap = d.timeout, d.interval, d.busyPoll, d.nap
	o.Engine = c.Engine
	o.Checks = c.Checks
	if len(c.Stages) > 0 {
		stages, err := load.ParseStages(c.Stages)
		if err != nil {
			errs = append(errs, fmt.Errorf("stages: %w", err))
		}
		o.Stages = stages
		if c.Duration == "" {
			o.Duration = 0 // the stages' sum (load.Defaults), not warm's 5s
		}
	}
	o.Protocol, o.Streams, o.SNI, o.TLSResume, o.H3ZeroRTT = c.Protocol, c.Streams, c.SNI, c.TLSResume, c.H3ZeroRTT
	if c.KeepAlive != nil && !*c.KeepAlive {
		o.Close = true
	}
	if c.Body != "" {
		body = []byte(c.Body)
	}
	headers := sortedHeaders(c.Headers)
	if c.Target != "" {
		o.Targets = append(o.Targets, load.Target{URL: c.Target, Method: c.Method, Headers: headers, Body: body})
	}
	for _, u := range c.URLs {
		t := load.Target{URL: u.URL, Method: u.Method, Headers: append(append([][2]string{}, headers...), sortedHeaders(u.Headers)...), Body: body, Weight: u.Weight}
		if t.Method == "" {
			t.Method = c.Method
		}
		if u.Body != "" {
			t.Body = []byte(u.Body)
		}
		o.Targets = append(o.Targets, t)
	}
	for i := range o.Targets {
		o.Targets[i].Method = strings.ToUpper(o.Targets[i].Method)
	}
	return o, errs
}

func sortedHeaders(m map[string]string) [][2]string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][2]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// validateLoad checks the body of a load or warm step: the attributes only
// a step has (until, search, max_error_ratio, …) here, and every limit of
// the load itself with load.Options.Validate, each problem at its
// attribute's range.
func validateLoad(st *pipeline.Step, c *LoadConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(d *hcl.Diagnostic) {
		if d != nil {
			diags = append(diags, d)
		}
	}
	body := st.Body
	durations := parseDurations(c) // once per trial: LoadOptions takes them from c.checked
	// CheckDuration's diagnostics, from the one parse, and duration's
	// rule (more than 0) right after its own.
	rest := durations.errs
	if !durations.durationParsed() {
		add(invalidDuration(body, "duration", rest[0].err))
		rest = rest[1:]
	}
	if durations.zeroDuration(c) {
		add(zeroDurationDiag(body))
	}
	for _, e := range rest {
		add(invalidDuration(body, e.name, e.err))
	}
	if r := c.MaxErrorRatio; r != nil {
		if st.Kind != pipeline.KindLoad {
			add(AttrErr(body, "max_error_ratio", "Unsupported max_error_ratio", fmt.Sprintf("max_error_ratio applies to load steps; a %s step's errors do not fail the trial.", st.Kind)))
		} else if !(*r >= 0 && *r <= 1) {
			add(AttrErr(body, "max_error_ratio", "Invalid max_error_ratio", fmt.Sprintf("max_error_ratio is the fraction of the step's requests that may fail before the trial fails, from 0 to 1 (0.01 = 1%%), not %g.", *r)))
		}
	}
	add(CheckURL(body, "target", c.Target))
	diags = append(diags, checkWarmUntil(st, c, durations)...)
	if c.Target == "" && len(c.URLs) == 0 {
		add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing target",
			Detail: fmt.Sprintf("Step %s needs target = \"http://…\" (often \"${service.<name>.url}/\") or url blocks.", st.Addr()), Subject: st.DeclRange.Ptr()})
	}
	if c.Target != "" && len(c.URLs) > 0 {
		add(AttrErr(body, "target", "Conflicting targets", "Use either target or url blocks, not both."))
	}
	if c.Body != "" && c.BodyFile != "" {
		add(AttrErr(body, "body_file", "Conflicting body", "Use either body or body_file, not both."))
	}
	if c.Search != nil {
		diags = append(diags, validateSearch(st, c)...)
	}
	diags = append(diags, validateAgents(st, c)...)
	if len(c.Stages) > 0 {
		if _, err := load.ParseStages(c.Stages); err != nil {
			add(AttrErr(body, "stages", "Invalid stages", err.Error()+"."))
		}
	}
	o, _ := loadSettings(st.Kind, c, nil, durations) // parse errors are reported above
	fes := load.FieldErrors(o.Validate())
	c.checked = &loadCheck{durations: durations, fes: fes}
	for _, fe := range fes {
		switch fe.Field {
		case "target":
			// checkURL and "Missing target" above, which know that a
			// URL built from a service is known only once it runs.
		case "weight":
			add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid weight", Detail: fmt.Sprintf("url %d: weight = %s: %s (0 takes the default, 1).", fe.Index, fe.Value, fe.Reason), Subject: st.DeclRange.Ptr()})
		default:
			add(AttrErr(body, fe.Field, "Invalid "+fe.Field, fmt.Sprintf("%s = %s: %s.", fe.Field, fe.Value, fe.Reason)))
		}
	}
	return diags
}

// checkWarmUntil validates until/window/tolerance of a load or warm step:
// until is "steady" or unset, and only on warm steps; window is a duration
// shorter than the step's duration; tolerance a percentage.
func checkWarmUntil(st *pipeline.Step, c *LoadConfig, durations loadDurations) hcl.Diagnostics {
	var diags hcl.Diagnostics
	body := st.Body
	if c.Until == "" {
		for _, name := range []string{"window", "tolerance"} {
			if (name == "window" && c.Window != "") || (name == "tolerance" && c.Tolerance != "") {
				diags = append(diags, AttrErr(body, name, "Setting needs until", fmt.Sprintf("%s only applies with until = \"steady\" on a warm step.", name)))
			}
		}
		return diags
	}
	if c.Until != "steady" {
		return append(diags, AttrErr(body, "until", "Invalid until", fmt.Sprintf("until must be \"steady\" (warm until req/s and p50 are stable), not %q.", c.Until)))
	}
	if st.Kind != pipeline.KindWarm {
		return append(diags, AttrErr(body, "until", "until on a load step", "until = \"steady\" is for warm steps: a load step measures for its whole duration."))
	}
	if c.Requests > 0 {
		diags = append(diags, AttrErr(body, "requests", "Conflicting settings", "A warm step with until = \"steady\" is bounded by duration, not requests."))
	}
	if d := CheckDuration(body, "window", c.Window); d != nil {
		diags = append(diags, d)
	}
	if c.Tolerance != "" {
		if _, err := pipeline.ParsePercent(c.Tolerance); err != nil {
			diags = append(diags, AttrErr(body, "tolerance", "Invalid tolerance", err.Error()+"."))
		}
	}
	if c.Window != "" && c.Duration != "" {
		w, err1 := pipeline.ParseDuration(c.Window)
		if err1 == nil && durations.durationParsed() && w*3 > durations.duration {
			diags = append(diags, AttrErr(body, "window", "Window too long", fmt.Sprintf("until = \"steady\" compares 3 windows: window = %q must fit 3 times in duration = %q (the maximum).", c.Window, c.Duration)))
		}
	}
	return diags
}

// validateSearch checks a load step's search block with the rules
// `benchflow load --find-max` applies (SearchOptions), at its location.
func validateSearch(st *pipeline.Step, c *LoadConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	blk := SearchBlock(st.Body)
	add := func(attr, summary, detail string) {
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: st.DeclRange.Ptr()}
		if blk != nil {
			d.Subject = blk.DefRange().Ptr()
			if a, ok := blk.Body.Attributes[attr]; ok {
				d.Subject = a.Expr.Range().Ptr()
			}
		}
		diags = append(diags, d)
	}
	if st.Kind != pipeline.KindLoad {
		add("", "Search outside a load step", fmt.Sprintf("Step %s is a %s step: only load steps can search for capacity.", st.Addr(), st.Kind))
		return diags
	}
	for _, a := range []struct {
		name string
		set  bool
	}{{"rate", c.Rate != 0}, {"requests", c.Requests != 0}, {"duration", c.Duration != ""}} {
		if a.set {
			diags = append(diags, AttrErr(st.Body, a.name, "Conflicting "+a.name, fmt.Sprintf("Step %s searches for capacity: the search sets each probe's rate and length itself (probe = …), so drop %s.", st.Addr(), a.name)))
		}
	}
	if _, err := searchOptions(c.Search); err != nil {
		var fe *searchFieldError
		if errors.As(err, &fe) {
			add(fe.attr, "Invalid search", fe.msg)
		} else {
			add("", "Invalid search", err.Error())
		}
	}
	return diags
}

// searchFieldError names the search attribute an error is about.
type searchFieldError struct{ attr, msg string }

func (e *searchFieldError) Error() string { return e.attr + ": " + e.msg }

// SearchOptions converts a search block into the capacity search's options
// (the load template is added by the caller). Its errors name the
// attribute.
func SearchOptions(c *SearchConfig) (load.SearchOptions, error) { return searchOptions(c) }

func searchOptions(c *SearchConfig) (load.SearchOptions, error) {
	so := load.SearchOptions{Start: c.StartRate, Max: c.MaxRate, MaxProbes: c.MaxProbes}
	var err error
	if so.SLO, err = measure.ParseSLO(c.SLO); err != nil {
		return so, &searchFieldError{"slo", err.Error() + "."}
	}
	for _, d := range []struct {
		name string
		v    string
		dst  *time.Duration
	}{{"probe", c.Probe, &so.Probe}, {"pause", c.Pause, &so.Pause}} {
		if d.v == "" {
			continue
		}
		if *d.dst, err = pipeline.ParseDuration(d.v); err != nil {
			return so, &searchFieldError{d.name, err.Error() + "."}
		}
		if *d.dst <= 0 {
			return so, &searchFieldError{d.name, fmt.Sprintf("%s must be positive, not %q.", d.name, d.v)}
		}
	}
	if c.Precision != "" {
		// Below 100% is load.SearchOptions.Validate's rule, below.
		if so.Precision, err = pipeline.ParsePercent(c.Precision); err != nil {
			return so, &searchFieldError{"precision", err.Error() + "."}
		}
	}
	// The one rule for a search's settings (load.SearchOptions.Validate),
	// whose fields are spelled as this block's attributes.
	if fes := load.FieldErrors(so.Validate()); len(fes) > 0 {
		fe := fes[0]
		return so, &searchFieldError{fe.Field, fmt.Sprintf("%s = %s: %s.", fe.Field, fe.Value, fe.Reason)}
	}
	return so, nil
}

// SearchBlock finds the search block of a step body.
func SearchBlock(body hcl.Body) *hclsyntax.Block {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	for _, b := range sb.Blocks {
		if b.Type == "search" {
			return b
		}
	}
	return nil
}
