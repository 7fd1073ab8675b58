package plan

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/tune"
)

func levenshteinDistance(a, b string) int { return levenshtein.Distance(a, b, nil) }

// attrRange returns the range of an attribute's value, or of the body.
func attrRange(body hcl.Body, name string) *hcl.Range {
	if sb, ok := body.(*hclsyntax.Body); ok {
		if a, ok := sb.Attributes[name]; ok {
			return a.Expr.Range().Ptr()
		}
		return sb.SrcRange.Ptr()
	}
	return nil
}

func attrErr(body hcl.Body, name, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: attrRange(body, name)}
}

// ParseDuration parses a duration attribute; see pipeline.ParseDuration.
func ParseDuration(s string) (time.Duration, error) { return pipeline.ParseDuration(s) }

var sizeRe = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$`)

// ParseSize parses a byte size: 6, 4KiB, 1MiB, 2.5MiB, 1k (=1024), 1KB (=1000).
func ParseSize(s string) (int64, error) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (examples: 6, 4KiB, 1MiB)", s)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	mult := map[string]float64{
		"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1e3, "m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	}[strings.ToLower(m[2])]
	if mult == 0 {
		return 0, fmt.Errorf("%q has an unknown unit %q (use B, KiB, MiB, GiB, KB, MB, GB)", s, m[2])
	}
	// Checked before converting: a float beyond int64's range converts to
	// an arbitrary (on amd64, negative) integer.
	v := n * mult
	if math.IsInf(v, 0) || math.IsNaN(v) || v > float64(MaxSize) {
		return 0, fmt.Errorf("%q is larger than the largest size, %d bytes (1 TiB)", s, int64(MaxSize))
	}
	return int64(v), nil
}

// MaxSize is the largest size ParseSize accepts (1 TiB); every use has a
// smaller limit of its own (random_bytes: MaxRandomBytes).
const MaxSize = 1 << 40

// MaxRandomBytes is the largest random_bytes file (1 GiB).
const MaxRandomBytes = 1 << 30

func seededBytes(name string, n int64) []byte {
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 42))
	b := make([]byte, n)
	for i := 0; i+8 <= len(b); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func validateService(cfg *pipeline.ServiceConfig, s *pipeline.Service) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if cfg.Image == "" && len(cfg.Command) == 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Nothing to run",
			Detail: fmt.Sprintf("Service %q needs an image (container providers) or a command (local provider).", s.Name), Subject: s.DeclRange.Ptr()})
	}
	if cfg.Replicas < 0 {
		diags = append(diags, attrErr(s.Body, "replicas", "Invalid replicas", "replicas must be 0 or more."))
	}
	seen := map[string]bool{}
	for _, f := range cfg.Files {
		if seen[f.Name] || f.Name == "" || strings.ContainsAny(f.Name, "/\\") || f.Name == "." || f.Name == ".." {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid file name",
				Detail: fmt.Sprintf("File %q: names must be unique plain file names (no slashes); use mount = … for the path inside a container.", f.Name), Subject: fileRange(s, f.Name)})
		}
		seen[f.Name] = true
		if f.Mode != "" {
			if _, err := strconv.ParseUint(f.Mode, 8, 32); err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid file mode",
					Detail: fmt.Sprintf("File %q: mode must be octal like \"0644\", not %q.", f.Name, f.Mode), Subject: fileRange(s, f.Name)})
			}
		}
	}
	if h := cfg.Health; h != nil {
		for name, v := range map[string]string{"timeout": h.Timeout, "interval": h.Interval} {
			if v != "" {
				if _, err := ParseDuration(v); err != nil {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid duration",
						Detail: fmt.Sprintf("health %s: %s.", name, err), Subject: s.DeclRange.Ptr()})
				}
			}
		}
		if h.HTTP != "" && !strings.HasPrefix(h.HTTP, "/") {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid health check",
				Detail: fmt.Sprintf("health http must be a path starting with /, not %q.", h.HTTP), Subject: s.DeclRange.Ptr()})
		}
		if h.Port != "" {
			found := false
			for _, p := range cfg.Ports {
				found = found || p.Name == h.Port
			}
			if !found {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown port",
					Detail: fmt.Sprintf("health port %q is not a port block of service %q.", h.Port, s.Name), Subject: s.DeclRange.Ptr()})
			}
		}
	}
	return diags
}

func checkDuration(body hcl.Body, name, v string) *hcl.Diagnostic {
	if v == "" {
		return nil
	}
	if _, err := ParseDuration(v); err != nil {
		return attrErr(body, name, "Invalid duration", err.Error()+".")
	}
	return nil
}

func checkURL(body hcl.Body, name, v string) *hcl.Diagnostic {
	if v == "" || strings.Contains(v, "${") {
		return nil // placeholder: known after provisioning
	}
	if strings.HasPrefix(v, "unix:") {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return attrErr(body, name, "Invalid URL", fmt.Sprintf("%q is not an http:// or https:// URL (or unix:/path.sock:/path).", v))
	}
	return nil
}

func validateStep(st *pipeline.Step, cfg any) hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(d *hcl.Diagnostic) {
		if d != nil {
			diags = append(diags, d)
		}
	}
	body := st.Body
	switch c := cfg.(type) {
	case *pipeline.LoadConfig:
		diags = append(diags, validateLoad(st, c)...)
	case *pipeline.TuneConfig:
		for _, kv := range []struct{ name, v string }{{"service_cpus", c.ServiceCPUs}, {"loader_cpus", c.LoaderCPUs}} {
			if kv.v != "" {
				if _, err := tune.ParseCPUList(kv.v); err != nil {
					add(attrErr(body, kv.name, "Invalid CPU list", err.Error()+"."))
				}
			}
		}
		if c.Nice != nil && (*c.Nice < -20 || *c.Nice > 19) {
			add(attrErr(body, "nice", "Invalid nice value", fmt.Sprintf("nice must be between -20 and 19, not %d.", *c.Nice)))
		}
		if c.Nofile < 0 {
			add(attrErr(body, "nofile", "Invalid nofile", "nofile must be a positive number of file descriptors."))
		}
		for k := range c.Sysctl {
			if k == "" || strings.ContainsAny(k, " /\\") && !strings.Contains(k, ".") {
				add(attrErr(body, "sysctl", "Invalid sysctl name", fmt.Sprintf("%q is not a sysctl name like net.core.somaxconn.", k)))
			}
		}
	case *pipeline.CollectConfig:
		add(checkDuration(body, "interval", c.Interval))
		add(checkCollectMachine(body, c))
		for _, p := range c.Processes {
			if len(p) > 1 && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") {
				if _, err := regexp.Compile(p[1 : len(p)-1]); err != nil {
					add(attrErr(body, "processes", "Invalid process pattern", fmt.Sprintf("%s: %s.", p, err)))
				}
			}
		}
	case *pipeline.CheckConfig:
		add(checkURL(body, "url", c.URL))
		add(checkDuration(body, "timeout", c.Timeout))
		if c.BodyMatches != "" {
			if _, err := regexp.Compile(c.BodyMatches); err != nil {
				add(attrErr(body, "body_matches", "Invalid regular expression", err.Error()+"."))
			}
		}
		if c.Status != 0 && (c.Status < 100 || c.Status > 599) {
			add(attrErr(body, "status", "Invalid status", fmt.Sprintf("status must be an HTTP status code, not %d.", c.Status)))
		}
	case *pipeline.ExecConfig:
		add(checkDuration(body, "timeout", c.Timeout))
		if len(c.Command) == 0 {
			add(attrErr(body, "command", "Empty command", "command needs at least the program to run."))
		}
	case *pipeline.ProvisionConfig:
		if len(c.Services) == 0 {
			add(attrErr(body, "services", "No services", "A provision step names at least one service."))
		}
	}
	return diags
}

// checkServices validates references between blocks (var, local, matrix,
// service, self) so mistakes are reported with suggestions, once.
func checkServices(p *pipeline.Pipeline) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := func(kind string) []string {
		var out []string
		switch kind {
		case "var":
			for _, v := range p.Variables {
				out = append(out, v.Name)
			}
		case "local":
			for _, l := range p.Locals {
				out = append(out, l.Name)
			}
		case "matrix":
			for _, a := range p.Matrix.Axes {
				out = append(out, a.Name)
			}
		case "service":
			for _, s := range p.Services {
				out = append(out, s.Name)
			}
		}
		return out
	}
	declared := map[string]map[string]bool{}
	for _, k := range []string{"var", "local", "matrix", "service"} {
		declared[k] = map[string]bool{}
		for _, n := range names(k) {
			declared[k][n] = true
		}
	}
	roots := []string{"var", "local", "matrix", "service", "step", "trial", "benchflow", "self"}
	what := map[string]string{"var": "input variable", "local": "local value", "matrix": "matrix axis", "service": "service"}
	check := func(tr hcl.Traversal, allowSelf bool, ctxName string) {
		root := tr.RootName()
		switch root {
		case "var", "local", "matrix", "service":
			if len(tr) < 2 {
				return
			}
			a, ok := tr[1].(hcl.TraverseAttr)
			if !ok {
				return
			}
			if !declared[root][a.Name] {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError,
					Summary: "Reference to undeclared " + what[root],
					Detail:  fmt.Sprintf("%s.%s is not declared.%s", root, a.Name, Suggest(a.Name, names(root))),
					Subject: tr.SourceRange().Ptr()})
			}
		case "self":
			if !allowSelf {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference to self",
					Detail: "self.* (dir, port, name) is only available inside a service block.", Subject: tr.SourceRange().Ptr()})
			}
		case "step", "trial", "benchflow":
		default:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown variable",
				Detail:  fmt.Sprintf("There is no variable named %q in %s.%s Available: %s.", root, ctxName, Suggest(root, roots), strings.Join(roots, ", ")),
				Subject: tr.SourceRange().Ptr()})
		}
	}
	for _, s := range p.Services {
		for attr, trs := range bodyTraversals(s.Body) {
			for _, tr := range trs {
				check(tr, true, "service "+s.Name)
				if tr.RootName() == "service" {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Service refers to a service",
						Detail:  fmt.Sprintf("Service %q argument %q refers to another service; services are provisioned independently. Pass addresses to steps instead.", s.Name, attr),
						Subject: tr.SourceRange().Ptr()})
				}
			}
		}
	}
	for _, st := range p.Steps {
		for _, trs := range bodyTraversals(st.Body) {
			for _, tr := range trs {
				check(tr, false, "step "+st.Addr())
			}
		}
	}
	for _, pv := range p.Providers {
		for _, trs := range bodyTraversals(pv.Config) {
			for _, tr := range trs {
				check(tr, false, "provider "+pv.Name)
				if tr.RootName() == "service" {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Provider refers to a service",
						Detail: "Provider blocks are evaluated before services exist.", Subject: tr.SourceRange().Ptr()})
				}
			}
		}
	}
	// Locals that use services may be used by steps, not by services or
	// providers (which are evaluated before services exist).
	usesService := ServiceLocals(p)
	for _, l := range p.Locals {
		for _, tr := range l.Expr.Variables() {
			check(tr, false, "locals")
		}
	}
	early := func(body hcl.Body, what string) {
		for _, trs := range bodyTraversals(body) {
			for _, tr := range trs {
				if tr.RootName() != "local" || len(tr) < 2 {
					continue
				}
				if a, ok := tr[1].(hcl.TraverseAttr); ok && usesService[a.Name] {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference to a local value",
						Detail:  fmt.Sprintf("local.%s depends on a service, and %s is evaluated before services exist.", a.Name, what),
						Subject: tr.SourceRange().Ptr()})
				}
			}
		}
	}
	for _, s := range p.Services {
		early(s.Body, "service "+s.Name)
	}
	for _, pv := range p.Providers {
		early(pv.Config, "provider "+pv.Name)
	}
	return diags
}

// ServiceLocals reports the local values that depend on a service
// (directly or through other locals).
func ServiceLocals(p *pipeline.Pipeline) map[string]bool {
	usesService := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, l := range p.Locals {
			for _, tr := range l.Expr.Variables() {
				dep := false
				switch tr.RootName() {
				case "service":
					dep = true
				case "local":
					if len(tr) > 1 {
						if a, ok := tr[1].(hcl.TraverseAttr); ok && usesService[a.Name] {
							dep = true
						}
					}
				}
				if dep && !usesService[l.Name] {
					usesService[l.Name] = true
					changed = true
				}
			}
		}
	}
	return usesService
}

// validateSearch checks a load step's search block with the rules
// `benchflow load --find-max` applies (SearchOptions), at its location.
func validateSearch(st *pipeline.Step, c *pipeline.LoadConfig) hcl.Diagnostics {
	var diags hcl.Diagnostics
	blk := searchBlock(st.Body)
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
			diags = append(diags, attrErr(st.Body, a.name, "Conflicting "+a.name, fmt.Sprintf("Step %s searches for capacity: the search sets each probe's rate and length itself (probe = …), so drop %s.", st.Addr(), a.name)))
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
func SearchOptions(c *pipeline.SearchConfig) (load.SearchOptions, error) { return searchOptions(c) }

func searchOptions(c *pipeline.SearchConfig) (load.SearchOptions, error) {
	so := load.SearchOptions{Start: c.StartRate, Max: c.MaxRate, MaxProbes: c.MaxProbes}
	var err error
	if so.SLO, err = load.ParseSLO(c.SLO); err != nil {
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
		p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(c.Precision), "%"), 64)
		if err != nil || p <= 0 || p >= 100 {
			return so, &searchFieldError{"precision", fmt.Sprintf("precision is a percentage between 0 and 100 (\"2%%\"), not %q.", c.Precision)}
		}
		so.Precision = p / 100
	}
	switch {
	case c.StartRate < 0 || c.StartRate > 1e9:
		return so, &searchFieldError{"start_rate", fmt.Sprintf("start_rate is a rate in requests per second up to 1e9, not %g.", c.StartRate)}
	case c.MaxRate < 0 || c.MaxRate > 1e9:
		return so, &searchFieldError{"max_rate", fmt.Sprintf("max_rate is a rate in requests per second up to 1e9, not %g.", c.MaxRate)}
	case c.StartRate > 0 && c.MaxRate > 0 && c.StartRate > c.MaxRate:
		return so, &searchFieldError{"max_rate", fmt.Sprintf("max_rate %g is below start_rate %g.", c.MaxRate, c.StartRate)}
	case c.MaxProbes < 0 || c.MaxProbes == 1 || c.MaxProbes > 1000:
		return so, &searchFieldError{"max_probes", fmt.Sprintf("max_probes is between 2 and 1000, not %d.", c.MaxProbes)}
	case so.Probe != 0 && so.Probe < 2*time.Second:
		return so, &searchFieldError{"probe", fmt.Sprintf("probe is at least 2s (the first second of each probe settles), not %q.", c.Probe)}
	case so.Probe > time.Hour:
		return so, &searchFieldError{"probe", fmt.Sprintf("probe is at most 1h, not %q.", c.Probe)}
	}
	return so, nil
}

// searchBlock finds the search block of a step body.
func searchBlock(body hcl.Body) *hclsyntax.Block {
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
