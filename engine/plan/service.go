package plan

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/providers"
)

// Placement is what the evaluation of a service takes from outside the
// pipeline: the provider that deploys it, the folder its files go to and
// the host ports it gets. The zero value is the plan's: self.dir is
// "${self.dir}", an "auto" port is its container port (0 without one),
// and no provider changes either.
type Placement struct {
	// Provider deploys the service. Its ListenPort and ServiceDir, when it
	// has them, give self.port.<name> and self.dir.
	Provider providers.Provider
	// Dir is the host folder the files will be written to (made by the
	// run); "" before the run: self.dir is then "${self.dir}", unless the
	// provider mounts the files elsewhere.
	Dir string
	// HostPort picks the host port of a port whose host is "auto" (a free
	// loopback port, in the run); nil takes the container port.
	HostPort func() (int, error)
}

// PreparedService is a service evaluated for one trial: the spec its
// provider receives and the bytes of its files, before anything is
// written. engine/run writes the files (WriteFiles there) and provisions;
// `benchflow render` prints it; the plan's dry run fingerprints it.
type PreparedService struct {
	Config *pipeline.ServiceConfig // the decoded body (version_command, …)
	Ports  []pipeline.PortConfig   // the port blocks as written
	// Spec is what Provision receives, but for the files: Spec.Files is
	// filled by whoever writes Files (each at Spec.Dir/Name).
	Spec providers.ServiceSpec
	// Listen is self.port.<name>: the port the service listens on (the
	// provider's ListenPort, else the host port).
	Listen map[string]int
	// SelfDir is self.dir: where the service finds its files (the
	// provider's ServiceDir, else the host folder, else "${self.dir}").
	SelfDir string
	Files   []RenderedFile
	// Private is set when a file is private (the folder that holds the
	// files is then its owner's only).
	Private bool
}

// RenderedFile is one file block of a service, evaluated.
type RenderedFile struct {
	Name  string
	Mount string // the path inside a container, or ""
	// From is the attribute that gave the content: "template",
	// "content", "source" or "random_bytes".
	From string
	// Mode is the file's mode ("0644" unless mode = …), without the
	// group and other bits when Private.
	Mode uint32
	// Private: the run is private (a sensitive variable) or the file
	// holds a sensitive value; only its owner may read it.
	Private bool
	Data    []byte // in the plan, random_bytes are a placeholder
}

// PrepareService is the one evaluation of a service for this trial, pure
// (it writes nothing and contacts nothing): its port blocks, self.* as
// the placement gives them, its body, and each file rendered. The dry
// run, plan --json, `benchflow render` and the run all call it; they
// differ only in the placement. It returns nil when the body cannot be
// decoded or a port cannot be allocated; file errors are "Invalid file"
// diagnostics at their block, the other files still prepared.
func (te *TrialEval) PrepareService(s *pipeline.Service, at Placement) (_ *PreparedService, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	portCfgs, diags := te.Ports(s)
	var ports []providers.Port
	listen := map[string]int{}
	for _, pc := range portCfgs {
		host, _ := strconv.Atoi(pc.Host) // validated by Ports: "", "auto" or a number
		picks := false
		if hp, ok := at.Provider.(providers.HostPortPicker); ok && host == 0 && at.HostPort != nil {
			picks = hp.PicksHostPort(providers.Port{Name: pc.Name, Container: pc.Container})
		}
		if host == 0 && !picks {
			host = pc.Container
			if at.HostPort != nil {
				n, err := at.HostPort()
				if err != nil {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No free port",
						Detail: fmt.Sprintf("Allocating port %q of service %q: %s", pc.Name, s.Name, sentence(err.Error())), Subject: s.DeclRange.Ptr()})
					return nil, diags
				}
				host = n
			}
		}
		port := providers.Port{Name: pc.Name, Container: pc.Container, Host: host}
		listen[pc.Name] = host
		if l, ok := at.Provider.(providers.ListenPorter); ok {
			listen[pc.Name] = l.ListenPort(port)
		}
		ports = append(ports, port)
	}
	selfDir := at.Dir
	if selfDir == "" {
		selfDir = "${self.dir}"
	}
	if sd, ok := at.Provider.(providers.ServiceDirer); ok {
		selfDir = sd.ServiceDir(s.Name)
	}
	self := Self(s.Name, selfDir, listen)
	cfg, d := te.Service(s, self)
	diags = append(diags, d...)
	if cfg == nil {
		return nil, diags
	}
	ps := &PreparedService{Config: cfg, Ports: portCfgs, Listen: listen, SelfDir: selfDir, Spec: providers.ServiceSpec{
		Name: s.Name, Image: cfg.Image, Command: cfg.Command, Env: cfg.Env,
		Dir: at.Dir, Ports: ports, Replicas: cfg.Replicas, Health: healthSpec(cfg.Health, ports),
	}}
	private := te.plan.Private()
	for i := range cfg.Files {
		fc := &cfg.Files[i]
		b, err := te.RenderFile(fc, self)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid file",
				Detail: sentence(err.Error()), Subject: fileRange(s, fc.Name)})
		}
		f := RenderedFile{Name: fc.Name, Mount: fc.Mount, From: fileFrom(fc), Mode: 0o644, Data: b}
		if m, err := strconv.ParseUint(fc.Mode, 8, 32); err == nil && fc.Mode != "" {
			f.Mode = uint32(m)
		}
		if private || te.plan.holdsSecret(b) {
			f.Private = true
			f.Mode &^= 0o077
			ps.Private = true
		}
		ps.Files = append(ps.Files, f)
	}
	return ps, diags
}

// fileFrom names the attribute a file block takes its content from.
func fileFrom(fc *pipeline.FileConfig) string {
	switch {
	case fc.Template != "":
		return "template"
	case fc.Source != "":
		return "source"
	case fc.RandomBytes != "":
		return "random_bytes"
	}
	return "content"
}

// Private reports whether a run of the plan is its owner's only: the
// pipeline declares a sensitive variable (engine/run then works under
// umask 077, and every rendered file is 0600).
func (p *Plan) Private() bool { return p.hasSensitive() }

// holdsSecret reports whether rendered content contains a sensitive value
// of the plan.
func (p *Plan) holdsSecret(b []byte) bool {
	for _, v := range p.SensitiveValues() {
		if len(v) > 0 && bytes.Contains(b, []byte(v)) {
			return true
		}
	}
	return false
}

// healthSpec is how the engine decides the service is ready: the health
// block, or a TCP connect to the first port, within 30 s, every 100 ms.
func healthSpec(h *pipeline.HealthConfig, ports []providers.Port) providers.Health {
	out := providers.Health{Timeout: 30 * time.Second, Interval: 100 * time.Millisecond}
	if len(ports) > 0 {
		out.PortName = ports[0].Name
		out.TCP = true
	}
	if h == nil {
		return out
	}
	out.HTTPPath = h.HTTP
	out.TCP = h.TCP || (h.HTTP == "" && len(ports) > 0)
	if h.Port != "" {
		out.PortName = h.Port
	}
	out.Status = h.Status
	if d, err := ParseDuration(h.Timeout); err == nil && h.Timeout != "" {
		out.Timeout = d
	}
	if d, err := ParseDuration(h.Interval); err == nil && h.Interval != "" && d > 0 {
		out.Interval = d
	}
	return out
}

// Ports evaluates a service's port blocks (they may not use self.*).
func (te *TrialEval) Ports(s *pipeline.Service) (_ []pipeline.PortConfig, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	sb, ok := s.Body.(*hclsyntax.Body)
	if !ok {
		return nil, nil
	}
	var out []pipeline.PortConfig
	seen := map[string]hcl.Range{}
	for _, b := range sb.Blocks {
		if b.Type != "port" {
			continue
		}
		pc := pipeline.PortConfig{}
		if len(b.Labels) > 0 {
			pc.Name = b.Labels[0]
		}
		if prev, dup := seen[pc.Name]; dup {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate port",
				Detail:  fmt.Sprintf("Service %q already has a port %q (at %s:%d,%d); port names must be unique.", s.Name, pc.Name, prev.Filename, prev.Start.Line, prev.Start.Column),
				Subject: b.DefRange().Ptr()})
			continue
		}
		seen[pc.Name] = b.DefRange()
		var tmp struct {
			Container int    `hcl:"container,optional"`
			Host      string `hcl:"host,optional"`
		}
		d := gohcl.DecodeBody(b.Body, te.Context(cty.NilVal), &tmp)
		diags = append(diags, d...)
		pc.Container, pc.Host = tmp.Container, tmp.Host
		if pc.Host != "" && pc.Host != "auto" {
			n, err := strconv.Atoi(pc.Host)
			if err != nil || n < 1 || n > 65535 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid port",
					Detail: fmt.Sprintf("host must be \"auto\" or a port number (1-65535), not %q.", pc.Host), Subject: b.Body.SrcRange.Ptr()})
			}
		}
		if pc.Container < 0 || pc.Container > 65535 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid port",
				Detail: fmt.Sprintf("container must be a port number (1-65535), not %d.", pc.Container), Subject: b.Body.SrcRange.Ptr()})
		}
		out = append(out, pc)
	}
	return out, diags
}

// Self builds the self object of a service: name, dir and port.<name>.
func Self(name, dir string, listen map[string]int) cty.Value {
	ports := map[string]cty.Value{}
	for k, v := range listen {
		ports[k] = cty.NumberIntVal(int64(v))
	}
	return cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal(name),
		"dir":  cty.StringVal(dir),
		"port": cty.ObjectVal(ports),
	})
}

// Service decodes a service body for this trial.
func (te *TrialEval) Service(s *pipeline.Service, self cty.Value) (_ *pipeline.ServiceConfig, diags hcl.Diagnostics) {
	defer te.withhold(&diags)
	var cfg pipeline.ServiceConfig
	diags = dropFollowOn(gohcl.DecodeBody(s.Body, te.Context(self), &cfg))
	if diags.HasErrors() {
		return nil, diags
	}
	diags = append(diags, validateService(&cfg, s)...)
	return &cfg, diags
}

// RenderFile produces the content of one file block.
func (te *TrialEval) RenderFile(fc *pipeline.FileConfig, self cty.Value) ([]byte, error) {
	set := 0
	for _, b := range []bool{fc.Template != "", fc.Content != "", fc.Source != "", fc.RandomBytes != ""} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("file %q needs exactly one of template, content, source or random_bytes", fc.Name)
	}
	switch {
	case fc.Content != "":
		return []byte(fc.Content), nil
	case fc.Source != "":
		return readFile(te.plan.Pipeline.FS, fc.Source)
	case fc.RandomBytes != "":
		n, err := ParseSize(fc.RandomBytes)
		if err != nil {
			return nil, fmt.Errorf("file %q: random_bytes: %w", fc.Name, err)
		}
		if n < 0 || n > MaxRandomBytes {
			return nil, fmt.Errorf("file %q: random_bytes %s is over the limit of %d bytes (1 GiB)", fc.Name, fc.RandomBytes, MaxRandomBytes)
		}
		if te.dry {
			// Planning only needs to know the size is valid.
			return []byte(fmt.Sprintf("random_bytes %d", n)), nil
		}
		return seededBytes(fc.Name, n), nil
	}
	vars := te.Context(self).Variables
	all := map[string]cty.Value{}
	for k, v := range vars {
		all[k] = v
	}
	if fc.Vars != cty.NilVal && !fc.Vars.IsNull() {
		if !(fc.Vars.Type().IsObjectType() || fc.Vars.Type().IsMapType()) {
			return nil, fmt.Errorf("file %q: vars must be an object", fc.Name)
		}
		for k, v := range fc.Vars.AsValueMap() {
			all[k] = v
		}
	}
	hide := func(expr hclsyntax.Expression, diags hcl.Diagnostics) hcl.Diagnostics {
		return te.plan.secrets().template(expr, fc.Vars, te.plan.fileVarsSensitive(fc.Name)).withhold(diags)
	}
	v, err := renderTemplate(fc.Name, fc.Template, all, te.plan.functions, te.plan.budget, hide)
	if err != nil {
		return nil, fmt.Errorf("rendering file %q: %w", fc.Name, err)
	}
	return []byte(v.AsString()), nil
}

func fileRange(s *pipeline.Service, name string) *hcl.Range {
	if sb, ok := s.Body.(*hclsyntax.Body); ok {
		for _, b := range sb.Blocks {
			if b.Type == "file" && len(b.Labels) > 0 && b.Labels[0] == name {
				return b.DefRange().Ptr()
			}
		}
	}
	return s.DeclRange.Ptr()
}
