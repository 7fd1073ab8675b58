package plan

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

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/pipeline"
)

// This file maps the body of a load or warm step (pipeline.LoadConfig) to
// load.Options, so steps accept the same settings as the `benchflow load`
// flags and are held to the same limits: load.Options.Validate is the one
// rule; here its errors get the attribute's source range.

// LoadOptions turns the body of a `step "load"` or `step "warm"` (kind is
// pipeline.KindLoad or pipeline.KindWarm) into load.Options. A warm step
// defaults to 5s instead of 10s; its result is tagged "warm" and a load's
// "load". body_file is read from fsys (the pipeline's folder; nil means the
// current directory). A request script (c.Script) is not read here: the
// caller sets Options.Requester. Errors name the attribute.
func LoadOptions(kind string, c *pipeline.LoadConfig, fsys fs.FS) (load.Options, error) {
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
		if body, err = fs.ReadFile(fsys, path.Clean(c.BodyFile)); err != nil {
			return o, fmt.Errorf("body_file: %w", err)
		}
	}
	o, errs := loadSettings(kind, c, body)
	if len(errs) > 0 {
		return o, errs[0]
	}
	if len(o.Targets) == 0 && c.Script == "" {
		return o, fmt.Errorf("target: a %s step needs a target, url blocks or a script", kind)
	}
	var problems []error
	for _, fe := range load.FieldErrors(o.Validate()) {
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

// loadSettings maps c to options without reading files and without
// checking limits. A duration that does not parse is left at 0 and
// reported (naming the attribute) in errs, as is a duration written as 0,
// which Options would read as "the default".
func loadSettings(kind string, c *pipeline.LoadConfig, body []byte) (load.Options, []error) {
	var errs []error
	o := load.Options{Tag: kind, Connections: c.Connections, Threads: c.Threads, Requests: c.Requests, Rate: c.Rate}
	duration := func(name, s string) time.Duration {
		if s == "" {
			return 0
		}
		d, err := pipeline.ParseDuration(s) // the same rules validate applied
		if err != nil {
			errs = append(errs, fmt.Errorf("%s = %q: %w", name, s, err))
		}
		return d
	}
	o.Duration = duration("duration", c.Duration)
	if c.Duration != "" && len(errs) == 0 && o.Duration == 0 {
		errs = append(errs, fmt.Errorf("duration = %q: must be more than 0 (leave it out for the default, or bound the step with requests)", c.Duration))
	}
	if o.Duration == 0 && o.Requests == 0 && kind == pipeline.KindWarm {
		o.Duration = 5 * time.Second
	}
	o.Timeout = duration("timeout", c.Timeout)
	o.Interval = duration("interval", c.Interval)
	o.BusyPoll = duration("busy_poll", c.BusyPoll)
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
func validateLoad(st *pipeline.Step, c *pipeline.LoadConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(d *hcl.Diagnostic) {
		if d != nil {
			diags = append(diags, d)
		}
	}
	body := st.Body
	add(checkDuration(body, "duration", c.Duration))
	if d, err := pipeline.ParseDuration(c.Duration); c.Duration != "" && err == nil && d == 0 {
		add(attrErr(body, "duration", "Invalid duration", "duration must be more than 0: leave it out for the default (10s, 5s for warm), or bound the step with requests."))
	}
	add(checkDuration(body, "timeout", c.Timeout))
	add(checkDuration(body, "interval", c.Interval))
	add(checkDuration(body, "busy_poll", c.BusyPoll))
	if r := c.MaxErrorRatio; r != nil {
		if st.Kind != pipeline.KindLoad {
			add(attrErr(body, "max_error_ratio", "Unsupported max_error_ratio", fmt.Sprintf("max_error_ratio applies to load steps; a %s step's errors do not fail the trial.", st.Kind)))
		} else if !(*r >= 0 && *r <= 1) {
			add(attrErr(body, "max_error_ratio", "Invalid max_error_ratio", fmt.Sprintf("max_error_ratio is the fraction of the step's requests that may fail before the trial fails, from 0 to 1 (0.01 = 1%%), not %g.", *r)))
		}
	}
	add(checkURL(body, "target", c.Target))
	diags = append(diags, checkWarmUntil(st, c)...)
	if c.Target == "" && len(c.URLs) == 0 {
		add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing target",
			Detail: fmt.Sprintf("Step %s needs target = \"http://…\" (often \"${service.<name>.url}/\") or url blocks.", st.Addr()), Subject: st.DeclRange.Ptr()})
	}
	if c.Target != "" && len(c.URLs) > 0 {
		add(attrErr(body, "target", "Conflicting targets", "Use either target or url blocks, not both."))
	}
	if c.Body != "" && c.BodyFile != "" {
		add(attrErr(body, "body_file", "Conflicting body", "Use either body or body_file, not both."))
	}
	if c.Search != nil {
		diags = append(diags, validateSearch(st, c)...)
	}
	o, _ := loadSettings(st.Kind, c, nil) // parse errors are reported above
	for _, fe := range load.FieldErrors(o.Validate()) {
		switch fe.Field {
		case "target":
			// checkURL and "Missing target" above, which know that a
			// URL built from a service is known only once it runs.
		case "weight":
			add(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid weight", Detail: fmt.Sprintf("url %d: weight = %s: %s (0 takes the default, 1).", fe.Index, fe.Value, fe.Reason), Subject: st.DeclRange.Ptr()})
		default:
			add(attrErr(body, fe.Field, "Invalid "+fe.Field, fmt.Sprintf("%s = %s: %s.", fe.Field, fe.Value, fe.Reason)))
		}
	}
	return diags
}
