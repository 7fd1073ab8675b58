// Package script runs Starlark request scripts for load steps (`script =
// "requests.star"` in a load step, `benchflow load -s requests.star`): the
// role Lua scripts play in wrk.
//
// A script defines request() (required), and optionally response() and
// done():
//
//	pool_size = 1000                  # how many times request() is called
//
//	def request(i):                   # i = 0 … pool_size-1 (or no parameter)
//	    return {"path": "/item/%d" % i, "headers": {"Accept": "text/html"}}
//
//	def response(status, headers, body):
//	    ...                           # once per response: costly, see docs
//
//	def done(summary):
//	    print("%d requests, p99 %d µs" % (summary["requests"], summary["latency_us"]["p99"]))
//
// Entry points: NewRequester (what the executor calls for a load step) and
// Load. A Script implements load.Requester: Pool calls request() ahead of
// the load and returns the deduplicated, weighted targets, so the hot path
// sends prebuilt bytes exactly as without a script. Response and Done run
// the optional hooks. engine/starconf (the sibling package) owns .star
// pipelines; engine/load owns sending the requests.
package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/starconf"
)

// Limits and defaults.
const (
	DefaultPoolSize = 1024
	MaxPoolSize     = 1 << 20
	// DefaultMaxSteps bounds the whole life of a script: loading it, every
	// request() call and the hooks.
	DefaultMaxSteps = 100_000_000
)

// fileOptions is the Starlark dialect of request scripts (the same as
// pipelines: loops at top level, while, set; no recursion).
var fileOptions = syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}

// Options tune Load.
type Options struct {
	// MaxSteps bounds execution (DefaultMaxSteps when zero).
	MaxSteps uint64
	// MaxAlloc is the allocation budget of each phase in bytes
	// (starconf.MaxAlloc, 512 MiB, when zero).
	MaxAlloc int64
	// Print receives print() output (os.Stderr when nil).
	Print io.Writer
}

// Script is a loaded request script.
type Script struct {
	name string
	base string

	mu       sync.Mutex // the hooks run one at a time on one thread
	thread   *starlark.Thread
	maxSteps uint64
	alloc    *starconf.Budget
	request  *starlark.Function
	response *starlark.Function
	done     *starlark.Function
	poolSize int
	hookErr  atomic.Pointer[error] // first response() error
}

var (
	_ load.Requester = (*Script)(nil)
)

// NewRequester loads the request script at path (relative to fsys, the
// pipeline's folder) for a load whose base URL is base (the step's target,
// e.g. http://127.0.0.1:8080). Paths returned by request() are appended to
// base. The returned value is a *Script: callers may also use its Response
// and Done hooks.
func NewRequester(fsys fs.FS, path string, base string) (load.Requester, error) {
	s, err := Load(context.Background(), fsys, path, base, Options{})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Load reads and runs a request script's top level.
func Load(ctx context.Context, fsys fs.FS, path, base string, opts Options) (*Script, error) {
	if !fs.ValidPath(path) {
		return nil, fmt.Errorf("reading request script: %q must be a path inside the pipeline's folder (relative, without ..)", path)
	}
	src, err := pipeline.ReadFile(fsys, path)
	if err != nil {
		return nil, fmt.Errorf("reading request script: %w", err)
	}
	return LoadSource(ctx, path, src, base, opts)
}

// LoadSource runs script source bytes; name is used in messages.
func LoadSource(ctx context.Context, name string, src []byte, base string, opts Options) (*Script, error) {
	if err := checkBase(base); err != nil {
		return nil, fmt.Errorf("loading request script %s: %w", name, err)
	}
	out := opts.Print
	if out == nil {
		out = os.Stderr
	}
	maxSteps := opts.MaxSteps
	if maxSteps == 0 {
		maxSteps = DefaultMaxSteps
	}
	th := &starlark.Thread{
		Name: name,
		Print: func(th *starlark.Thread, msg string) {
			fmt.Fprintf(out, "%s\n", msg)
		},
		Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
			return nil, errors.New("load() is not available in request scripts")
		},
	}
	th.SetMaxExecutionSteps(maxSteps)
	stop := cancelWith(ctx, th)
	defer stop()
	bg := starconf.NewBudget(opts.MaxAlloc)
	predeclared := bg.Predeclared()
	predeclared["struct"] = starlark.NewBuiltin("struct", starlarkstruct.Make)
	predeclared["json"] = checkedJSON(bg)
	// Globals stay unfrozen (unlike ExecFile) so hooks can keep state
	// (counters in a dict); every call holds s.mu, so this is safe.
	if err := starconf.CheckSource(name, src); err != nil {
		return nil, fmt.Errorf("loading request script: %s", err)
	}
	f, err := fileOptions.Parse(name, src, 0)
	if err != nil {
		return nil, fmt.Errorf("loading request script: %s", describe(err))
	}
	starconf.RewriteAlloc(f)
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return nil, fmt.Errorf("loading request script: %s", describe(err))
	}
	globals, err := prog.Init(th, predeclared)
	if err != nil {
		return nil, fmt.Errorf("loading request script: %s", describe(err))
	}
	s := &Script{name: name, base: strings.TrimSuffix(base, "/"), thread: th, maxSteps: maxSteps, alloc: bg, poolSize: DefaultPoolSize}
	fn := func(key string, params ...int) (*starlark.Function, error) {
		v, ok := globals[key]
		if !ok {
			return nil, nil
		}
		f, ok := v.(*starlark.Function)
		if !ok {
			return nil, fmt.Errorf("%s: %s must be a function (def %s(…)), not %s", name, key, key, v.Type())
		}
		for _, p := range params {
			if f.NumParams() == p {
				return f, nil
			}
		}
		return nil, fmt.Errorf("%s: %s() takes %d parameters; want %s", name, key, f.NumParams(), joinInts(params))
	}
	if s.request, err = fn("request", 0, 1); err != nil {
		return nil, err
	}
	if s.request == nil {
		return nil, fmt.Errorf("%s: the script defines no request() function", name)
	}
	if s.response, err = fn("response", 3); err != nil {
		return nil, err
	}
	if s.done, err = fn("done", 1); err != nil {
		return nil, err
	}
	if v, ok := globals["pool_size"]; ok {
		n, err := starlark.AsInt32(v)
		if err != nil || n < 1 || n > MaxPoolSize {
			return nil, fmt.Errorf("%s: pool_size must be an int between 1 and %d, not %s", name, MaxPoolSize, v.String())
		}
		s.poolSize = n
	}
	return s, nil
}

func joinInts(ns []int) string {
	var parts []string
	for _, n := range ns {
		parts = append(parts, fmt.Sprint(n))
	}
	return strings.Join(parts, " or ")
}

func checkBase(base string) error {
	if base == "" {
		return nil
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") && !strings.HasPrefix(base, "unix:") {
		return fmt.Errorf("base URL %q has no scheme (want http://, https:// or unix:)", base)
	}
	return nil
}

// cancelWith cancels the thread when ctx ends; stop releases the watcher.
func cancelWith(ctx context.Context, th *starlark.Thread) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			th.Cancel(ctx.Err().Error())
		case <-done:
		}
	}()
	return func() { close(done) }
}

// describe renders a Starlark error with its backtrace (file:line:col).
func describe(err error) string {
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		return ee.Backtrace()
	}
	return err.Error()
}

// budget gives the next phase (the whole pool, one response() or done())
// its own MaxSteps.
func (s *Script) budget() {
	s.thread.SetMaxExecutionSteps(s.thread.ExecutionSteps() + s.maxSteps)
	s.alloc.Reset()
}

// HasResponse reports whether the script defines response().
func (s *Script) HasResponse() bool { return s.response != nil }

// PoolSize is the number of request() calls Pool makes.
func (s *Script) PoolSize() int { return s.poolSize }

// Pool calls request() PoolSize times and returns the distinct requests,
// each weighted by how often it was returned. It implements
// load.Requester.
func (s *Script) Pool() ([]load.Target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.budget()
	index := map[string]int{}
	var out []load.Target
	for i := 0; i < s.poolSize; i++ {
		var args starlark.Tuple
		if s.request.NumParams() == 1 {
			args = starlark.Tuple{starlark.MakeInt(i)}
		}
		v, err := starlark.Call(s.thread, s.request, args, nil)
		if err != nil {
			return nil, fmt.Errorf("calling request(%d) of %s: %s", i, s.name, describe(err))
		}
		t, err := s.target(v)
		if err != nil {
			return nil, fmt.Errorf("request(%d) of %s: %w", i, s.name, err)
		}
		key := targetKey(t)
		if j, ok := index[key]; ok {
			out[j].Weight++
			continue
		}
		index[key] = len(out)
		out = append(out, t)
	}
	return out, nil
}

func targetKey(t load.Target) string {
	var b strings.Builder
	b.WriteString(t.Method)
	b.WriteByte(0)
	b.WriteString(t.URL)
	for _, h := range t.Headers {
		b.WriteByte(0)
		b.WriteString(h[0])
		b.WriteByte(':')
		b.WriteString(h[1])
	}
	b.WriteByte(0)
	b.Write(t.Body)
	return b.String()
}

var requestKeys = []string{"method", "path", "url", "headers", "body", "weight"}

// target converts what request() returned: a dict or struct with method,
// path or url, headers, body and weight; a plain string is a path.
func (s *Script) target(v starlark.Value) (load.Target, error) {
	t := load.Target{Method: "GET", Weight: 1}
	fields := map[string]starlark.Value{}
	switch v := v.(type) {
	case starlark.String:
		fields["path"] = v
	case *starlark.Dict:
		for _, it := range v.Items() {
			k, ok := it[0].(starlark.String)
			if !ok {
				return t, fmt.Errorf("the returned dict has a non-string key %s", it[0].String())
			}
			fields[string(k)] = it[1]
		}
	case *starlarkstruct.Struct:
		for _, k := range v.AttrNames() {
			fields[k], _ = v.Attr(k)
		}
	default:
		return t, fmt.Errorf("request() must return a dict, a struct or a path string, not %s", v.Type())
	}
	for k := range fields {
		if !contains(requestKeys, k) {
			return t, fmt.Errorf("unknown request field %q (fields are %s)", k, strings.Join(requestKeys, ", "))
		}
	}
	str := func(k string) (string, bool, error) {
		fv, ok := fields[k]
		if !ok || fv == starlark.None {
			return "", false, nil
		}
		switch x := fv.(type) {
		case starlark.String:
			return string(x), true, nil
		case starlark.Bytes:
			return string(x), true, nil
		}
		return "", false, fmt.Errorf("%s must be a string, not %s", k, fv.Type())
	}
	if m, ok, err := str("method"); err != nil {
		return t, err
	} else if ok {
		t.Method = strings.ToUpper(m)
	}
	p, hasPath, err := str("path")
	if err != nil {
		return t, err
	}
	u, hasURL, err := str("url")
	if err != nil {
		return t, err
	}
	switch {
	case hasPath && hasURL:
		return t, errors.New("give path or url, not both")
	case hasURL:
		t.URL = u
	case hasPath:
		if !strings.HasPrefix(p, "/") {
			return t, fmt.Errorf("path %q must start with /", p)
		}
		if s.base == "" {
			return t, fmt.Errorf("path %q needs a base URL (the load step's target, or the URL given to benchflow load)", p)
		}
		t.URL = s.base + p
	default:
		if s.base == "" {
			return t, errors.New("the request has neither path nor url, and there is no base URL")
		}
		t.URL = s.base + "/"
	}
	if b, ok, err := str("body"); err != nil {
		return t, err
	} else if ok {
		t.Body = []byte(b)
	}
	if w, ok := fields["weight"]; ok {
		n, err := starlark.AsInt32(w)
		if err != nil || n < 1 {
			return t, fmt.Errorf("weight must be a positive int, not %s", w.String())
		}
		t.Weight = n
	}
	if h, ok := fields["headers"]; ok && h != starlark.None {
		hs, err := headers(h)
		if err != nil {
			return t, err
		}
		t.Headers = hs
	}
	return t, nil
}

func headers(v starlark.Value) ([][2]string, error) {
	var out [][2]string
	pair := func(k, v starlark.Value) error {
		ks, ok1 := k.(starlark.String)
		vs, ok2 := v.(starlark.String)
		if !ok1 || !ok2 {
			return fmt.Errorf("headers must map strings to strings, not %s to %s", k.Type(), v.Type())
		}
		out = append(out, [2]string{string(ks), string(vs)})
		return nil
	}
	switch h := v.(type) {
	case *starlark.Dict:
		for _, it := range h.Items() {
			if err := pair(it[0], it[1]); err != nil {
				return nil, err
			}
		}
	case *starlark.List:
		for i := 0; i < h.Len(); i++ {
			t, ok := h.Index(i).(starlark.Tuple)
			if !ok || len(t) != 2 {
				return nil, errors.New("a headers list holds (name, value) pairs")
			}
			if err := pair(t[0], t[1]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("headers must be a dict or a list of (name, value) pairs, not %s", v.Type())
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Response calls the script's response(status, headers, body) hook, if
// any. Calls are serialized (one Starlark thread), so a response hook
// costs a lock and an interpreter call per response: see
// docs/starlark.md for what that does to throughput.
func (s *Script) Response(status int, hdrs [][2]string, body []byte) error {
	if s.response == nil {
		return nil
	}
	hd := starlark.NewDict(len(hdrs))
	for _, h := range hdrs {
		_ = hd.SetKey(starlark.String(strings.ToLower(h[0])), starlark.String(h[1]))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.budget()
	_, err := starlark.Call(s.thread, s.response, starlark.Tuple{starlark.MakeInt(status), hd, starlark.Bytes(body)}, nil)
	if err != nil {
		return fmt.Errorf("calling response() of %s: %s", s.name, describe(err))
	}
	return nil
}

// ResponseHook returns the function to set as load.Options.OnResponse, or
// nil when the script defines no response(). The load generator gives it
// the status code only: response() receives an empty headers dict and
// empty body. After the first error (see Err) later calls do nothing.
func (s *Script) ResponseHook() func(status int) {
	if s.response == nil {
		return nil
	}
	return func(status int) {
		if s.hookErr.Load() != nil {
			return
		}
		if err := s.Response(status, nil, nil); err != nil {
			s.hookErr.CompareAndSwap(nil, &err)
		}
	}
}

// Err returns the first error of a response() call made through
// ResponseHook, or nil.
func (s *Script) Err() error {
	if p := s.hookErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Done calls the script's done(summary) hook, if any, with the totals of
// the load: requests, errors, duration_s, rps, bytes, status (by code),
// errors_by (by class) and latency_us (p50, p75, p90, p99, p999, max,
// mean).
func (s *Script) Done(res *measure.Record) error {
	if s.done == nil || res == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.budget()
	_, err := starlark.Call(s.thread, s.done, starlark.Tuple{Summary(res)}, nil)
	if err != nil {
		return fmt.Errorf("calling done() of %s: %s", s.name, describe(err))
	}
	return nil
}

// Summary is the dict done() receives.
func Summary(res *measure.Record) *starlark.Dict {
	d := starlark.NewDict(10)
	set := func(k string, v starlark.Value) { _ = d.SetKey(starlark.String(k), v) }
	set("requests", starlark.MakeInt64(res.Requests))
	set("errors", starlark.MakeInt64(res.Errors))
	set("bytes", starlark.MakeInt64(res.Bytes))
	set("duration_s", starlark.Float(res.Duration.Seconds()))
	set("rps", starlark.Float(res.RPS()))
	status := starlark.NewDict(len(res.Status))
	codes := make([]int, 0, len(res.Status))
	for c := range res.Status {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		_ = status.SetKey(starlark.MakeInt(c), starlark.MakeInt64(res.Status[c]))
	}
	set("status", status)
	by := starlark.NewDict(len(res.ErrorsBy))
	classes := make([]string, 0, len(res.ErrorsBy))
	for k := range res.ErrorsBy {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		_ = by.SetKey(starlark.String(k), starlark.MakeInt64(res.ErrorsBy[k]))
	}
	set("errors_by", by)
	lat := starlark.NewDict(7)
	if h := res.Latency; h != nil {
		for _, q := range []struct {
			k string
			p float64
		}{{"p50", 50}, {"p75", 75}, {"p90", 90}, {"p99", 99}, {"p999", 99.9}} {
			_ = lat.SetKey(starlark.String(q.k), starlark.MakeInt64(h.ValueAtQuantile(q.p)))
		}
		_ = lat.SetKey(starlark.String("max"), starlark.MakeInt64(h.Max()))
		mean := h.Mean()
		if math.IsNaN(mean) {
			mean = 0
		}
		_ = lat.SetKey(starlark.String("mean"), starlark.Float(mean))
	}
	set("latency_us", lat)
	return d
}

// checkedJSON is the json module with encode, indent and decode charged to
// the budget before they build their result.
func checkedJSON(bg *starconf.Budget) *starlarkstruct.Module {
	m := &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{}}
	for name, v := range json.Module.Members {
		orig, ok := v.(*starlark.Builtin)
		if !ok {
			m.Members[name] = v
			continue
		}
		m.Members[name] = starlark.NewBuiltin(orig.Name(), func(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if len(args) > 0 {
				var n int64
				switch name {
				case "decode":
					if s, ok := args[0].(starlark.String); ok {
						n = int64(len(s)) * 32 // a value per byte, at most
					}
				case "indent":
					if s, ok := args[0].(starlark.String); ok {
						n = int64(len(s)) * 16 // an indented line per byte, at most
					}
				default: // encode: \u00XX per byte, at most
					n = bg.TextLen(args[0]) * 6
				}
				if err := bg.Charge(n); err != nil {
					return nil, err
				}
			}
			return orig.CallInternal(th, args, kwargs)
		})
	}
	return m
}
