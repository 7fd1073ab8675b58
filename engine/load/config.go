package load

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// FromConfig turns the body of a `step "load"` or `step "warm"` (kind is
// pipeline.KindLoad or pipeline.KindWarm) into Options, so steps accept the
// same settings as the `benchflow load` flags. A warm step defaults to 5s
// instead of 10s; its result is tagged "warm" and a load's "load". body_file
// is read from fsys (the pipeline's folder; nil means the current
// directory). A request script (c.Script) is not read here: the caller
// sets Options.Requester. Errors name the attribute.
func FromConfig(kind string, c *pipeline.LoadConfig, fsys fs.FS) (Options, error) {
	var o Options
	if c == nil {
		return o, fmt.Errorf("no %s settings", kind)
	}
	switch kind {
	case pipeline.KindLoad, pipeline.KindWarm:
		o.Tag = kind
	default:
		return o, fmt.Errorf("step kind %q is not a load or warm step", kind)
	}
	o.Connections, o.Threads, o.Requests, o.Rate = c.Connections, c.Threads, c.Requests, c.Rate
	if c.Connections < 0 {
		return o, fmt.Errorf("connections = %d: must be at least 1", c.Connections)
	}
	if c.Threads < 0 {
		return o, fmt.Errorf("threads = %d: must be at least 1", c.Threads)
	}
	var err error
	if o.Duration, err = configDuration("duration", c.Duration); err != nil {
		return o, err
	}
	if c.Duration != "" && o.Duration == 0 {
		return o, fmt.Errorf("duration = %q: must be more than 0 (leave it out for the default, or bound the step with requests)", c.Duration)
	}
	if o.Duration == 0 && o.Requests == 0 && kind == pipeline.KindWarm {
		o.Duration = 5 * time.Second
	}
	if o.Timeout, err = configDuration("timeout", c.Timeout); err != nil {
		return o, err
	}
	if o.Interval, err = configDuration("interval", c.Interval); err != nil {
		return o, err
	}
	if o.BusyPoll, err = configDuration("busy_poll", c.BusyPoll); err != nil {
		return o, err
	}
	if c.KeepAlive != nil && !*c.KeepAlive {
		o.Close = true
	}
	body := []byte(c.Body)
	if c.BodyFile != "" {
		if c.Body != "" {
			return o, fmt.Errorf("body and body_file are mutually exclusive")
		}
		if fsys == nil {
			fsys = os.DirFS(".")
		}
		if body, err = fs.ReadFile(fsys, path.Clean(c.BodyFile)); err != nil {
			return o, fmt.Errorf("body_file: %w", err)
		}
	}
	headers := sortedHeaders(c.Headers)
	if c.Target != "" {
		o.Targets = append(o.Targets, Target{URL: c.Target, Method: c.Method, Headers: headers, Body: body})
	}
	for i, u := range c.URLs {
		if u.Weight < 0 {
			return o, fmt.Errorf("url %d: weight = %d: must be positive", i+1, u.Weight)
		}
		t := Target{URL: u.URL, Method: u.Method, Headers: append(append([][2]string{}, headers...), sortedHeaders(u.Headers)...), Body: body, Weight: u.Weight}
		if t.Method == "" {
			t.Method = c.Method
		}
		if u.Body != "" {
			t.Body = []byte(u.Body)
		}
		o.Targets = append(o.Targets, t)
	}
	if len(o.Targets) == 0 && c.Script == "" {
		return o, fmt.Errorf("target: a %s step needs a target, url blocks or a script", kind)
	}
	for i := range o.Targets {
		o.Targets[i].Method = strings.ToUpper(o.Targets[i].Method)
	}
	d := Defaults(o)
	if err := Validate(d); err != nil && c.Script == "" {
		return o, err
	}
	return d, nil
}

func configDuration(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := pipeline.ParseDuration(s) // the same rules validate applied
	if err != nil {
		return 0, fmt.Errorf("%s = %q: %w", name, s, err)
	}
	return d, nil
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
