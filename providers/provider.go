// Package providers defines the interface every deployment backend implements
// and the registry the engine finds them in.
//
// A provider type (local, docker, k8s, nomad) declares a Spec[C] for its
// config struct C (gohcl tags), turns it into a Type with TypeOf and
// registers that in init() with Register (typed.go). For each trial the
// engine decodes the pipeline's provider block into a fresh *C
// (Type.NewConfig), checks it with C's Validate, calls New, then Provision
// for each service that names the provider, and Teardown on the returned
// Deployment in reverse order — on success, failure and Ctrl-C.
//
// TypeOf requires *C to implement Validator, so every provider block is
// checked right after decoding (also by `benchflow validate`); its
// *ConfigError values name the attribute, which the engine turns into a
// diagnostic at that attribute (config.go).
//
// Capabilities beyond Provision are optional interfaces found by type
// assertion, declared in this file after Provider and Deployment (but
// AgentLauncher, in agents.go):
//
//   - of a Provider: ListenPorter (which port a service listens on inside
//     its namespace), ServiceDirer (where self.dir is inside the service),
//     VersionRunner (where a service's version_command runs),
//     Renderer (for `benchflow render`), Describer (the one-line summary
//     `benchflow plan` prints), AgentLauncher (load agents of a step's
//     agents block; agents.go, announced by Type.Agents);
//   - of a Deployment: Liveness (early-exit detection during health
//     waits), ProcessReporter (for collect steps), ContainerReporter
//     (the containers whose helper processes are the run's), VersionReporter
//     (platform versions in the manifest).
//
// What a type is, rather than what it can do, is data of its Type: the
// endpoint attributes it exposes (Attrs), whether it launches agents
// (Agents), and the infrastructure processes it starts (Infra).
//
// Providers know nothing of HCL files or the pipeline model: they receive an
// evaluated ServiceSpec.
package providers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/sandbox/grant"
)

// Type describes one provider type for the registry.
type Type struct {
	// Name is the first label of the provider block: "docker".
	Name string
	// NewConfig returns a pointer to a fresh config struct with gohcl tags
	// (`hcl:"network,optional"`). The engine decodes the provider block
	// into it per trial. nil means the block must be empty. TypeOf sets
	// it.
	NewConfig func() any
	// New builds a provider from a decoded config (the value NewConfig
	// returned, filled in). TypeOf sets it: it asserts the config's type
	// and calls the Spec's typed New.
	New func(req *NewRequest) (Provider, error)
	// Attrs lists the extra endpoint attributes (Endpoint.Attrs keys) the
	// type may expose, e.g. "gateway_url"; pipelines may refer to them as
	// service.<name>.<attr>, and validation accepts those names.
	Attrs []string
	// GC, when set, removes what crashed runs left behind: objects labelled
	// LabelManaged (and LabelRun = req.RunID when that is not empty) whose
	// owner is gone (GCDecision), reaching the backend through req.Configs
	// (or the environment's defaults). It reports each object it keeps
	// through req.Keep and returns a description of each removed one, and an
	// error wrapping ErrUnavailable when the backend cannot be reached.
	GC func(ctx context.Context, req *GCRequest) ([]string, error)
	// Agents reports that the type's providers implement AgentLauncher
	// (they can run the load agents of a step's agents block).
	Agents bool
	// Infra lists the infrastructure processes the type's deployments
	// use on this machine (an engine, an agent, a gateway, an ingress
	// controller): process names (comm as the kernel shows it, truncated
	// to 15 bytes, or a prefix ending in "*") that the whole-machine
	// accounting of collect steps counts as role "infra" rather than
	// "other" — only in a trial with a service of this type. A process
	// that serves one container (docker-proxy, containerd-shim,
	// fuse-overlayfs) is never listed here: it is the run's only by
	// relation to the run's containers (ContainerReporter).
	Infra []string
	// Preflight, when set, checks before a run's first trial that what
	// the type's providers need is there (a Nomad agent, Consul, an
	// APISIX admin API answering at the configured addresses), reaching
	// them through req.Configs as GC does. Its error says what is missing
	// and where the docs say how to get it; the run then does not start.
	// It changes nothing and is bounded in time.
	Preflight func(ctx context.Context, req *GCRequest) error
	// Grant, when set, is what the type's providers need from reproduce's
	// sandbox beyond what it gives every run: the grant a bundle using
	// the type must be given (--allow NAME), what it opens and binds.
	// Register registers it (engine/sandbox/grant); the sandbox, the
	// trust plan and reproduce find it there and by the type, and name
	// no provider. nil: the type runs in the sandbox as it is (local).
	Grant *grant.Spec
	// Remote, when set, says which other machines a provider block of
	// the type (its decoded config) reaches, what it runs there itself
	// and which local files it reads, for reproduce's plan.
	Remote func(cfg any) *Remote
}

// Remote is where a provider runs things on other machines.
type Remote struct {
	// Services is the host the services run on ("user@host:port"), ""
	// when none; Agents are the hosts load agents run on.
	Services string
	Agents   []string
	// Commands are what the provider itself runs on each host it
	// reaches, before the services' commands and the agents.
	Commands []string
	// Reads are the local files it reads (an identity file,
	// known_hosts): readable in the sandbox with its grant.
	Reads []string
}

// NewRequest carries what New needs.
type NewRequest struct {
	Name   string // the second label: "nat"
	Config any    // the decoded config struct, or nil
}

// Provider deploys services for one trial.
type Provider interface {
	// Provision starts the service and returns once it is started (the
	// engine runs the health check afterwards). On error nothing it
	// started may be left behind.
	Provision(ctx context.Context, req *ProvisionRequest) (Deployment, error)
}

// Deployment is one provisioned service.
type Deployment interface {
	// Endpoint tells where the service can be reached from the host
	// running benchflow.
	Endpoint() Endpoint
	// Teardown stops and removes everything Provision created. It is
	// called exactly once, with a fresh context, even after Ctrl-C; it
	// must be safe after a partially failed Provision.
	Teardown(ctx context.Context) error
}

// ProvisionRequest is the evaluated service for one trial.
type ProvisionRequest struct {
	RunID   string // sortable run id; also the value of LabelRun
	TrialID string
	Service ServiceSpec
	// LogDir is a folder in the results directory for the service's
	// stdout/stderr or container logs (created by the engine).
	LogDir string
	// Logf writes a progress line (shown with --verbose).
	Logf func(format string, args ...any)
}

// Labels every provider puts on what it creates (containers, networks, k8s
// objects, nomad jobs) so leftovers can be found by `benchflow gc`.
const (
	LabelManaged = "dev.benchflow.managed" // "true"
	LabelRun     = "dev.benchflow.run"     // run id
	LabelTrial   = "dev.benchflow.trial"   // trial id
	LabelService = "dev.benchflow.service" // service name
)

// ServiceSpec is a service evaluated for one trial.
type ServiceSpec struct {
	Name    string
	Image   string   // container image (docker, k8s, nomad docker driver)
	Command []string // argv; for containers it overrides the image's command
	Env     map[string]string
	// Dir is the host folder where the service's files were rendered.
	Dir   string
	Files []File
	Ports []Port
	// Replicas is the number of instances (orchestrators); 0 means 1.
	Replicas int
	Health   Health
}

// File is a rendered file of the service.
type File struct {
	Name     string // base name, also the file name under Dir
	HostPath string // Dir/Name
	Mount    string // absolute path inside a container, or ""
	Mode     uint32
}

// Port is a port of the service. The engine fills Host before Provision:
// with the number the pipeline gave or a free loopback port.
type Port struct {
	Name      string
	Container int // 0 when the pipeline gave none
	Host      int
}

// Health is how the engine decides the service is ready.
type Health struct {
	HTTPPath string // "" unless an HTTP check
	TCP      bool
	PortName string
	Status   int // 0 = any 2xx/3xx
	Timeout  time.Duration
	Interval time.Duration
}

// Endpoint is where a deployment answers.
type Endpoint struct {
	Scheme string // "http" (default) or "https"
	Host   string // e.g. "127.0.0.1"
	Port   int    // the primary port
	// Ports maps port names to host-reachable port numbers.
	Ports map[string]int
	// Attrs are extra values exposed as service.<name>.<attr> in the
	// pipeline, e.g. "gateway_url", "namespace", "job".
	Attrs map[string]string
}

// URL returns scheme://host:port.
func (e Endpoint) URL() string {
	s := e.Scheme
	if s == "" {
		s = "http"
	}
	return fmt.Sprintf("%s://%s", s, hostPort(e.Host, e.Port))
}

func hostPort(h string, p int) string {
	for _, c := range h {
		if c == ':' {
			return fmt.Sprintf("[%s]:%d", h, p)
		}
	}
	return fmt.Sprintf("%s:%d", h, p)
}

// Process is one OS process of a deployment, as a host pid.
type Process struct {
	PID  int
	Name string // e.g. "nginx", "docker-proxy"
	// Role says why it is reported: "service" (the service's own
	// processes) or "infra" (docker-proxy, dockerd, containerd-shim, an
	// ingress controller, …).
	Role string
	// Host is set on a process of the run that runs on another host
	// sharing this machine's kernel (an ssh host in a network namespace
	// or a container here): collect counts its CPU in its role, since it
	// is this kernel's, and leaves its rows to the sampler of its own
	// host ("" for this machine's processes).
	Host string
}

// ProcessReporter is implemented by deployments whose processes can be
// sampled by collect steps.
type ProcessReporter interface {
	Processes(ctx context.Context) ([]Process, error)
}

// ContainerReporter is implemented by deployments that run containers on
// this machine. What it reports ties the engine's helper processes to the
// run by relation rather than by name (engine/collect): a docker-proxy
// forwards one of the Ports, a containerd-shim names the ID, a
// fuse-overlayfs mounts one of the Mounts. Called once per collect step,
// after Provision.
type ContainerReporter interface {
	Containers() []Container
}

// Container is one container a deployment started.
type Container struct {
	ID string // the engine's full id (64 hex digits for Docker)
	// IP is its address on the engine's network ("" on the host network).
	IP string
	// Ports are its published ports.
	Ports []ContainerPort
	// Mounts are the host paths of its root filesystem (the merged,
	// upper and work directories of an overlay): where a FUSE storage
	// driver serves it from.
	Mounts []string
}

// ContainerPort is a published port: Host on the host, Container inside.
type ContainerPort struct {
	Host, Container int
}

// VersionReporter is implemented by deployments on a platform whose
// versions change results (Kubernetes server and kubelet, Nomad server and
// client, the gateway): "k8s_server" → "v1.31.2", "nomad_client" →
// "1.9.3", …. The engine records them per trial in manifest.json
// (trials[].services[].versions); each call is bounded by 5 s.
type VersionReporter interface {
	PlatformVersions(ctx context.Context) map[string]string
}

// VersionRunner is implemented by providers whose services run on another
// machine (ssh): the service's version_command runs there, with the
// semantics of envinfo.ServiceVersion (combined output trimmed; a non-zero
// exit is an error that still returns the output). It is called before
// Provision.
type VersionRunner interface {
	RunVersion(ctx context.Context, argv []string) (string, error)
}

// Liveness is implemented by deployments that can tell, while the engine
// waits for health, that the service has already died. The error should
// quote the exit status and the last lines of the service's output.
type Liveness interface {
	Alive(ctx context.Context) error
}

// ListenPorter is implemented by providers whose services listen on a
// different port than the host-reachable one (a container behind NAT
// listens on the container port). The engine exposes the result as
// self.port.<name> to templates. Without it the host port is used.
type ListenPorter interface {
	ListenPort(p Port) int
}

// HostPortPicker is implemented by providers whose platform picks a free
// host port itself and reports it after provisioning (Docker publishing a
// container port on host port 0): for a port whose host is "auto" and for
// which PicksHostPort is true, the engine leaves Port.Host 0 instead of
// choosing a free port first (which another process could take before the
// container binds it). The provider's endpoint then carries the port.
type HostPortPicker interface {
	PicksHostPort(p Port) bool
}

// ServiceDirer is implemented by providers that mount the service's files at
// another path than the host folder; the result is self.dir in templates.
type ServiceDirer interface {
	ServiceDir(service string) string
}

// Renderer is implemented by providers that can print what they would
// create (e.g. Kubernetes manifests) without contacting anything.
type Renderer interface {
	Render(req *ProvisionRequest) ([]byte, error)
}

// Describer is implemented by providers that summarize in one line how
// they deploy services and how the load reaches them ("namespace per run,
// through a NodePort on …"); `benchflow plan` prints it next to each
// service (engine/plan, TrialService.Describe).
type Describer interface {
	Describe() string
}

// ErrUnavailable reports that a provider's backend cannot be reached (no
// Docker engine, no kubeconfig). Tests skip on it; gc ignores it.
var ErrUnavailable = errors.New("provider backend unavailable")

var (
	mu    sync.RWMutex
	types = map[string]*Type{}
)

// Register adds a provider type. It panics on a duplicate or empty name.
func Register(t *Type) {
	mu.Lock()
	defer mu.Unlock()
	if t == nil || t.Name == "" || t.New == nil {
		panic("providers: Register with an incomplete Type")
	}
	if _, dup := types[t.Name]; dup {
		panic("providers: duplicate provider type " + t.Name)
	}
	types[t.Name] = t
	if t.Grant != nil {
		grant.Register(*t.Grant)
	}
}

// Lookup returns the registered type with that name.
func Lookup(name string) (*Type, bool) {
	mu.RLock()
	defer mu.RUnlock()
	t, ok := types[name]
	return t, ok
}

// Names lists the registered provider types, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for n := range types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
