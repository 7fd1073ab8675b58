package plan

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/engine/units"
)

// attrErr is an error diagnostic at an attribute's value (steps.AttrErr).
func attrErr(body hcl.Body, name, summary, detail string) *hcl.Diagnostic {
	return steps.AttrErr(body, name, summary, detail)
}

// ParseDuration parses a duration attribute; see pipeline.ParseDuration.
func ParseDuration(s string) (time.Duration, error) { return pipeline.ParseDuration(s) }

// ParseSize parses a byte size (random_bytes); see units.ParseSize, the one
// grammar of sizes `benchflow serve --size` uses too.
func ParseSize(s string) (int64, error) { return units.ParseSize(s) }

// MaxSize is the largest size ParseSize accepts (1 TiB); every use has a
// smaller limit of its own (random_bytes: MaxRandomBytes).
const MaxSize = units.MaxSize

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
					Detail:  fmt.Sprintf("%s.%s is not declared.%s", root, a.Name, diag.Suggest(a.Name, names(root))),
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
				Detail:  fmt.Sprintf("There is no variable named %q in %s.%s Available: %s.", root, ctxName, diag.Suggest(root, roots), strings.Join(roots, ", ")),
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
