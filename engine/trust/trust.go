// Package trust says what a pipeline will do on this machine before it
// runs: the plan `benchflow reproduce` prints and asks consent for. It reads
// the compiled plan (engine/plan: every trial evaluated in dry mode), never
// the pipeline's text: every service with its provider, command or image,
// working folder, ports, environment names and files; every exec step's
// command; every tune change; the agents; every network target the loads
// and checks reach; and what the run needs beyond the sandbox, as the
// sandbox's grant names (engine/sandbox).
package trust

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/redact"
	"github.com/benchflow/benchflow/engine/sandbox"
	"github.com/benchflow/benchflow/engine/steps"
	"github.com/benchflow/benchflow/providers"
)

// Plan is what a pipeline will do, and (filled by the caller) how it will
// be confined and what was checked. Its JSON form is what `benchflow
// reproduce --plan --json` prints (docs/cli.md#reproduce).
type Plan struct {
	Bundle   string `json:"bundle,omitempty"`
	Pipeline string `json:"pipeline"`
	Trials   int    `json:"trials"`
	// Services are the distinct deployments of each service across the
	// trials (a service whose command depends on the matrix appears once
	// per command), in declaration order.
	Services []Service `json:"services"`
	// Steps are the steps that run something or reach something: exec,
	// tune, check, warm and load (collect and provision only read).
	Steps []Step `json:"steps"`
	// Targets are every URL a load, warm or check step reaches, once
	// each: a service of the run (shown as ${service.NAME.url}) or an
	// address.
	Targets []Target `json:"targets"`
	// Needs are the grants the run needs beyond the sandbox, each with
	// the reasons, in sandbox.Grants order.
	Needs []Need `json:"needs"`
	// Hosts are the other machines the run logs in to (the ssh
	// provider's), each with every command run there, in the order the
	// services and steps reach them.
	Hosts []Host `json:"hosts,omitempty"`
	// Reads are the local files the providers read (an identity file,
	// known_hosts): readable in the sandbox with their grant.
	Reads []string `json:"reads,omitempty"`
	// Sandbox are the confinement's facts (sandbox.Spec.Describe), or
	// one line saying the run is not confined.
	Sandbox []string `json:"sandbox"`
	// Checks are the bundle's checks (checksums, pipeline sha256,
	// signature), in the order they ran.
	Checks []Check `json:"checks"`
	// Notes are what the reader should know besides (the bundle's
	// output dir ignored, where the results go).
	Notes []string `json:"notes,omitempty"`
	// Refused are what no grant allows in the sandbox (a sysctl outside
	// sandbox.TuneSysctls): reproduce refuses the bundle, confined,
	// whatever --allow says (--no-sandbox runs it unconfined).
	Refused []string `json:"refused,omitempty"`
}

// Service is one deployment of a service.
type Service struct {
	Name         string   `json:"name"`
	Provider     string   `json:"provider"`
	ProviderType string   `json:"provider_type"`
	Image        string   `json:"image,omitempty"`
	Command      []string `json:"command,omitempty"`
	// VersionCommand is the service's version_command, run once to
	// record the server's version.
	VersionCommand []string `json:"version_command,omitempty"`
	// Dir is where the process runs (local) or where its files are
	// mounted (containers).
	Dir   string   `json:"dir"`
	Ports []string `json:"ports,omitempty"`
	// Env are the names of the variables it sets, never their values.
	Env []string `json:"env,omitempty"`
	// Files are the files written for it: "NAME (template) -> WHERE".
	Files []string `json:"files,omitempty"`
	// ProviderSettings are the provider block's settings (addresses,
	// networks), as plan.Settings lists them.
	ProviderSettings map[string]any `json:"provider_settings,omitempty"`
	TrialCount       int            `json:"trial_count"`
	// Cells are the matrix cells ("size=6 keepalive=true") whose trials
	// deploy it this way, when not every trial does.
	Cells []string `json:"cells,omitempty"`
}

// Step is one distinct evaluation of a step that acts.
type Step struct {
	Address string   `json:"address"`
	Kind    string   `json:"kind"`
	Command []string `json:"command,omitempty"` // exec
	Dir     string   `json:"dir,omitempty"`     // exec
	Env     []string `json:"env,omitempty"`     // exec: names only
	// Tune's changes.
	Sysctl      map[string]string `json:"sysctl,omitempty"`
	Rlimits     map[string]string `json:"rlimits,omitempty"`
	ServiceCPUs string            `json:"service_cpus,omitempty"`
	LoaderCPUs  string            `json:"loader_cpus,omitempty"`
	Nice        *int              `json:"nice,omitempty"`
	// Load, warm and check: the URLs reached, and the agents a load
	// step starts ("3 on provider local").
	Targets    []string `json:"targets,omitempty"`
	Agents     string   `json:"agents,omitempty"`
	TrialCount int      `json:"trial_count"`
	Cells      []string `json:"cells,omitempty"` // as Service.Cells
}

// Target is one URL reached.
type Target struct {
	URL string `json:"url"`
	// Reach is "service" (a service of this run: its url, or a loopback
	// address at service.NAME.port, 0 in the plan), "loopback" (a port a
	// service of this run is given by number, on the run's own
	// loopback), "host-loopback" (another port on loopback: the host's
	// own services, only with the host-network grant) or "outside"
	// (anything else: only with the host-network grant).
	Reach string `json:"reach"`
}

// Host is another machine the run logs in to, and what runs there.
type Host struct {
	Host     string   `json:"host"`     // user@address:port
	Provider string   `json:"provider"` // the provider block's name
	Commands []string `json:"commands"`
}

// Need is one grant the run needs.
type Need struct {
	Grant sandbox.Grant `json:"grant"`
	Why   []string      `json:"why"`
}

// Check is one check of the bundle.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Inspect reads the plan pl: every trial evaluated dry (nothing is
// contacted, nothing written). Values are redacted with redact.Default
// (the plan's sensitive values are in it after the plan is built).
func Inspect(pl *plan.Plan) *Plan { return InspectRedacting(pl, redact.Default) }

// InspectRedacting is Inspect redacting the values of red only: reproduce
// redacts the reader's own sensitive values, not the defaults a bundle
// carries in its pipeline (public, and maybe the command itself: hiding
// them would hide what runs).
func InspectRedacting(pl *plan.Plan, red *redact.Set) *Plan {
	in := &inspector{
		out:      &Plan{Pipeline: pl.Pipeline.Name, Trials: len(pl.Trials), Services: []Service{}, Steps: []Step{}, Targets: []Target{}, Needs: []Need{}},
		red:      red,
		needs:    map[sandbox.Grant][]string{},
		svcIndex: map[string]int{}, stepIndex: map[string]int{},
		svcCells: map[int][]string{}, stepCells: map[int][]string{},
		hostIndex: map[string]int{},
		targets:   map[string]bool{},
		fixed:     map[string]bool{},
	}
	out := in.out
	for _, t := range pl.Trials {
		te := pl.NewTrialEval(t, true)
		for _, s := range pl.Pipeline.Services {
			in.service(t, te, s)
		}
		for _, st := range pl.Pipeline.Steps {
			in.step(t, te, st)
		}
	}
	for i := range out.Services {
		if out.Services[i].TrialCount < out.Trials {
			out.Services[i].Cells = in.svcCells[i]
		}
	}
	for i := range out.Steps {
		if out.Steps[i].TrialCount < out.Trials {
			out.Steps[i].Cells = in.stepCells[i]
		}
	}
	for _, r := range runtimeShapes(pl.Pipeline) {
		in.refuse(r)
	}
	for _, g := range sandbox.Grants() {
		if len(in.needs[g]) > 0 {
			out.Needs = append(out.Needs, Need{Grant: g, Why: in.needs[g]})
		}
	}
	return out
}

// inspector builds a Plan over the trials.
type inspector struct {
	out   *Plan
	red   *redact.Set
	needs map[sandbox.Grant][]string
	// the index in out of a service's or step's distinct evaluation, and
	// the cells of each
	svcIndex, stepIndex map[string]int
	svcCells, stepCells map[int][]string
	hostIndex           map[string]int // in out.Hosts
	targets             map[string]bool
	fixed               map[string]bool // host ports the services are given by number
}

func (in *inspector) need(g sandbox.Grant, why string) {
	if !slices.Contains(in.needs[g], why) {
		in.needs[g] = append(in.needs[g], why)
	}
}

func (in *inspector) refuse(why string) {
	if !slices.Contains(in.out.Refused, why) {
		in.out.Refused = append(in.out.Refused, why)
	}
}

func addCell(m map[int][]string, i int, c string) {
	if !slices.Contains(m[i], c) {
		m[i] = append(m[i], c)
	}
}

// onHost records commands run on host.
func (in *inspector) onHost(host, provider string, cmds ...string) {
	i, ok := in.hostIndex[host]
	if !ok {
		i = len(in.out.Hosts)
		in.hostIndex[host] = i
		in.out.Hosts = append(in.out.Hosts, Host{Host: host, Provider: provider, Commands: []string{}})
	}
	for _, c := range cmds {
		if c != "" && !slices.Contains(in.out.Hosts[i].Commands, c) {
			in.out.Hosts[i].Commands = append(in.out.Hosts[i].Commands, c)
		}
	}
}

// reads records the local files a provider reads.
func (in *inspector) reads(r *providers.Remote) {
	for _, f := range r.Reads {
		if !slices.Contains(in.out.Reads, f) {
			in.out.Reads = append(in.out.Reads, f)
		}
	}
}

// addTarget records a URL reached, redacted, and returns it.
func (in *inspector) addTarget(u string) string {
	u = in.red.String(u)
	if !in.targets[u] {
		in.targets[u] = true
		t := Target{URL: u, Reach: reach(u, in.fixed)}
		in.out.Targets = append(in.out.Targets, t)
		if t.Reach == "outside" || t.Reach == "host-loopback" {
			in.need(sandbox.GrantHostNetwork, "reaches "+u)
		}
	}
	return u
}

// service records service s of trial t.
func (in *inspector) service(t *plan.Trial, te *plan.TrialEval, s *pipeline.Service) {
	sv := Service{Name: s.Name, Dir: "its own folder under the private /tmp"}
	sp, d := te.ServiceProvider(s)
	var at plan.Placement
	var typ *providers.Type
	var remote *providers.Remote
	if sp != nil && !d.HasErrors() {
		typ = sp.Type
		if typ.Remote != nil && sp.Config != nil {
			remote = typ.Remote(sp.Config)
		}
		sv.Provider, sv.ProviderType = sp.Name, sp.Type.Name
		at.Provider = sp.Provider
		if sp.Config != nil {
			sv.ProviderSettings = redactSettings(plan.Settings(sp.Config), in.red)
		}
	}
	ps, _ := te.PrepareService(s, at)
	if ps == nil {
		return
	}
	sv.Image = ps.Spec.Image
	command, version := portsShown(te, s, at, ps)
	for _, a := range command {
		sv.Command = append(sv.Command, in.red.String(a))
	}
	for _, a := range version {
		sv.VersionCommand = append(sv.VersionCommand, in.red.String(a))
	}
	if sv.ProviderType != "local" {
		sv.Dir = ps.SelfDir + " (its files, mounted read-only)"
	} else if wd, ok := sv.ProviderSettings["work_dir"].(string); ok && wd != "" {
		sv.Dir = wd
	}
	for _, pc := range ps.Ports {
		if pc.Host != "" && pc.Host != "auto" {
			in.fixed[pc.Host] = true
		}
	}
	for _, p := range ps.Spec.Ports {
		txt := p.Name + " (a free loopback port)"
		if p.Container > 0 {
			txt = fmt.Sprintf("%s (container %d)", p.Name, p.Container)
		}
		sv.Ports = append(sv.Ports, txt)
	}
	sv.Env = names(ps.Spec.Env)
	for _, f := range ps.Files {
		where := "its folder"
		if f.Mount != "" && sv.ProviderType != "local" {
			where = f.Mount
		} else if sv.ProviderType != "local" {
			where = ps.SelfDir + "/" + f.Name
		}
		sv.Files = append(sv.Files, fmt.Sprintf("%s (%s) -> %s", f.Name, f.From, where))
	}
	if remote != nil && remote.Services != "" {
		in.onHost(remote.Services, sv.Provider, remote.Commands...)
		in.onHost(remote.Services, sv.Provider, argv(sv.Command))
		if len(sv.VersionCommand) > 0 {
			in.onHost(remote.Services, sv.Provider, argv(sv.VersionCommand))
		}
		in.reads(remote)
	}
	if typ != nil && typ.Grant != nil {
		why := fmt.Sprintf("service %s runs on provider %s (%s)", s.Name, sv.Provider, sv.ProviderType)
		if remote != nil && remote.Services != "" {
			why += ", on " + remote.Services
		}
		in.need(typ.Grant.Name, why)
	}
	key := keyOf(sv)
	if i, ok := in.svcIndex[key]; ok {
		in.out.Services[i].TrialCount++
		addCell(in.svcCells, i, t.ParamString())
		return
	}
	sv.TrialCount = 1
	in.svcIndex[key] = len(in.out.Services)
	addCell(in.svcCells, len(in.out.Services), t.ParamString())
	in.out.Services = append(in.out.Services, sv)
}

// step records step st of trial t when it runs or reaches something.
func (in *inspector) step(t *plan.Trial, te *plan.TrialEval, st *pipeline.Step) {
	cfg, d := te.Step(st)
	if d.HasErrors() || cfg == nil {
		return
	}
	ss := Step{Address: st.Addr(), Kind: st.Kind}
	switch c := cfg.(type) {
	case *pipeline.ExecConfig:
		for _, a := range c.Command {
			ss.Command = append(ss.Command, in.red.String(a))
		}
		ss.Dir = c.Dir
		if ss.Dir == "" {
			ss.Dir = "the pipeline's folder"
		}
		ss.Env = names(c.Env)
	case *pipeline.TuneConfig:
		ss.Sysctl, ss.Rlimits = c.Sysctl, c.Rlimits
		if c.Nofile > 0 {
			if ss.Rlimits == nil {
				ss.Rlimits = map[string]string{}
			}
			ss.Rlimits = copyMap(ss.Rlimits)
			ss.Rlimits["nofile"] = fmt.Sprint(c.Nofile)
		}
		ss.ServiceCPUs, ss.LoaderCPUs, ss.Nice = c.ServiceCPUs, c.LoaderCPUs, c.Nice
		if len(c.Sysctl) > 0 {
			in.need(sandbox.GrantTune, st.Addr()+" writes sysctls (as root)")
		}
		for _, k := range sortedKeys(c.Sysctl) {
			if !sandbox.TuneSysctlAllowed(k) {
				in.refuse(fmt.Sprintf("%s sets sysctl %s, which the sandbox never allows (--allow tune writes only %s)", st.Addr(), k, sandbox.TuneSysctlsText()))
			}
		}
		if c.Nice != nil && *c.Nice < 0 {
			in.need(sandbox.GrantTune, st.Addr()+" raises the services' priority (nice < 0)")
		}
	case *pipeline.CheckConfig:
		ss.Targets = []string{in.addTarget(c.URL)}
	case *steps.LoadConfig:
		if c.Target != "" {
			ss.Targets = append(ss.Targets, in.addTarget(c.Target))
		}
		for _, u := range c.URLs {
			ss.Targets = append(ss.Targets, in.addTarget(u.URL))
		}
		if a := c.Agents; a != nil {
			asp, d := te.AgentsProvider(a)
			typ := "local"
			name := a.Provider
			var at *providers.Type
			if asp != nil && !d.HasErrors() {
				typ, name, at = asp.Type.Name, asp.Name, asp.Type
			}
			ss.Agents = fmt.Sprintf("%d benchflow agent(s) on provider %s (%s)", a.Count, name, typ)
			why := fmt.Sprintf("%s runs its agents on provider %s (%s)", st.Addr(), name, typ)
			if at != nil && at.Remote != nil && asp.Config != nil {
				if r := at.Remote(asp.Config); r != nil && len(r.Agents) > 0 {
					for i := 0; i < a.Count; i++ {
						h := r.Agents[i%len(r.Agents)]
						in.onHost(h, name, r.Commands...)
						in.onHost(h, name, fmt.Sprintf("~/.cache/benchflow/bin/<sha256>/benchflow agent --listen 0.0.0.0:0 --index %d  (%s)", i, st.Addr()))
					}
					why += ", on " + strings.Join(r.Agents, ", ")
					in.reads(r)
				}
			}
			if at != nil && at.Grant != nil {
				in.need(at.Grant.Name, why)
			}
		}
	default:
		return // collect, provision: they read, run nothing
	}
	key := keyOf(ss)
	if i, ok := in.stepIndex[key]; ok {
		in.out.Steps[i].TrialCount++
		addCell(in.stepCells, i, t.ParamString())
		return
	}
	ss.TrialCount = 1
	in.stepIndex[key] = len(in.out.Steps)
	addCell(in.stepCells, len(in.out.Steps), t.ParamString())
	in.out.Steps = append(in.out.Steps, ss)
}

// Missing returns the grants p needs that allowed does not hold.
func (p *Plan) Missing(allowed []sandbox.Grant) []Need {
	var out []Need
	for _, n := range p.Needs {
		ok := false
		for _, g := range allowed {
			ok = ok || g == n.Grant
		}
		if !ok {
			out = append(out, n)
		}
	}
	return out
}

// Grants are the grant names p needs.
func (p *Plan) Grants() []sandbox.Grant {
	var out []sandbox.Grant
	for _, n := range p.Needs {
		out = append(out, n.Grant)
	}
	return out
}

// reach says where a URL goes: "service" when its host is a service's
// placeholder, "loopback" for a loopback address at a port of fixed (the
// sandbox's own loopback), "host-loopback" for another loopback port,
// "outside" else.
func reach(u string, fixed map[string]bool) string {
	if strings.Contains(u, "${service.") {
		return "service"
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Hostname() == "" {
		return "outside"
	}
	h := pu.Hostname()
	if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "outside"
	}
	port := pu.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
	}
	if port == "0" {
		// service.NAME.port(s) before provisioning: a service's port.
		return "service"
	}
	if fixed[port] {
		return "loopback"
	}
	return "host-loopback"
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// redactSettings drops secrets from a provider's settings: values that
// hold a sensitive value are shown redacted.
func redactSettings(m map[string]any, red *redact.Set) map[string]any {
	for k, v := range m {
		if s, ok := v.(string); ok {
			m[k] = red.String(s)
		}
	}
	return m
}

func keyOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// portSentinel is the first of the port numbers portsShown evaluates a
// service with: numbers a command is unlikely to hold otherwise.
const portSentinel = 59173

// portsShown is a service's command and version_command as the plan shows
// them. Its ports are known only at run time (a free port; 0 in the plan's
// evaluation), so the service is evaluated again with other numbers for
// them: an argument that changes holds a port, shown as the visible
// unknown ${self.port.NAME} ("127.0.0.1:${self.port.http}"), never as a
// port 0 the run will not use.
func portsShown(te *plan.TrialEval, s *pipeline.Service, at plan.Placement, ps *plan.PreparedService) (command, version []string) {
	command = ps.Spec.Command
	if ps.Config != nil {
		version = ps.Config.VersionCommand
	}
	next := portSentinel
	at.HostPort = func() (int, error) {
		next++
		return next - 1, nil
	}
	ps2, d := te.PrepareService(s, at)
	if ps2 == nil || d.HasErrors() {
		return command, version
	}
	var names []string
	for n := range ps2.Listen {
		names = append(names, n)
	}
	sort.Strings(names)
	unknown := func(a string) string {
		for _, n := range names {
			if v := ps2.Listen[n]; v >= portSentinel && v < next {
				a = strings.ReplaceAll(a, fmt.Sprint(v), "${self.port."+n+"}")
			}
		}
		return a
	}
	shown := func(planned, again []string) []string {
		if len(planned) != len(again) {
			return planned // a shape that depends on a port is refused (runtimeShapes)
		}
		out := make([]string, len(planned))
		for i := range planned {
			out[i] = planned[i]
			if again[i] != planned[i] {
				out[i] = unknown(again[i])
			}
		}
		return out
	}
	command = shown(command, ps2.Spec.Command)
	if ps2.Config != nil {
		version = shown(version, ps2.Config.VersionCommand)
	}
	return command, version
}
