package pipeline

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// The structs below are the per-trial schemas of service and step bodies
// (the load and warm steps' LoadConfig is in engine/steps/load.go).
// engine/plan decodes each body with gohcl into one of them, in an evaluation
// context holding var.*, local.*, matrix.*, trial.*, service.* and step.*.
// Durations and sizes are strings ("30s", "4KiB") parsed after decoding so
// errors point at the attribute.

// ServiceConfig is the body of a `service "name" {}` block.
type ServiceConfig struct {
	// Provider names the provider that deploys the service (the second
	// label of a provider block). Optional when exactly one provider is
	// declared; "local" when none is.
	Provider       string            `hcl:"provider,optional"`
	Image          string            `hcl:"image,optional"`
	Command        []string          `hcl:"command,optional"`
	Env            map[string]string `hcl:"env,optional"`
	VersionCommand []string          `hcl:"version_command,optional"`
	// Replicas is the number of instances for orchestrated providers.
	Replicas  int            `hcl:"replicas,optional"`
	Files     []FileConfig   `hcl:"file,block"`
	Ports     []PortConfig   `hcl:"port,block"`
	Health    *HealthConfig  `hcl:"health,block"`
	DependsOn hcl.Expression `hcl:"depends_on,optional"`
}

// FileConfig is a `file "name" {}` block of a service: a file rendered into
// the trial's service directory (self.dir) before the service starts.
// Exactly one of Template, Content, Source or RandomBytes is set.
type FileConfig struct {
	Name string `hcl:"name,label"`
	// Template is template text (usually file("x.tmpl")) rendered with
	// Vars plus var.*, local.*, matrix.*, trial.* and self.*.
	Template string    `hcl:"template,optional"`
	Vars     cty.Value `hcl:"vars,optional"`
	Content  string    `hcl:"content,optional"`
	// Source copies a file (path relative to the pipeline) verbatim.
	Source string `hcl:"source,optional"`
	// RandomBytes generates a file of that size ("4KiB") from a seeded
	// generator, identical across trials and runs.
	RandomBytes string `hcl:"random_bytes,optional"`
	// Mount is where container providers mount the file; local ignores it.
	Mount string `hcl:"mount,optional"`
	Mode  string `hcl:"mode,optional"` // octal, default "0644"
}

// PortConfig is a `port "name" {}` block.
type PortConfig struct {
	Name string `hcl:"name,label"`
	// Container is the port inside a container (docker, k8s, nomad).
	Container int `hcl:"container,optional"`
	// Host is "auto" (default: a free loopback port) or a port number.
	Host string `hcl:"host,optional"`
}

// HealthConfig is the `health {}` block of a service.
type HealthConfig struct {
	HTTP     string `hcl:"http,optional"` // path, e.g. "/"
	TCP      bool   `hcl:"tcp,optional"`
	Port     string `hcl:"port,optional"` // port name; default the first
	Status   int    `hcl:"status,optional"`
	Timeout  string `hcl:"timeout,optional"`  // default "30s"
	Interval string `hcl:"interval,optional"` // default "100ms"
}

// TuneConfig is the body of `step "tune"`.
type TuneConfig struct {
	Sysctl map[string]string `hcl:"sysctl,optional"`
	// Nofile sets RLIMIT_NOFILE of the service processes.
	Nofile int `hcl:"nofile,optional"`
	// Rlimits sets other limits by name ("nproc", "memlock", …).
	Rlimits map[string]string `hcl:"rlimits,optional"`
	// ServiceCPUs and LoaderCPUs are CPU lists ("0", "1-3", "0,2").
	ServiceCPUs string `hcl:"service_cpus,optional"`
	LoaderCPUs  string `hcl:"loader_cpus,optional"`
	// Nice is the priority of the service processes (-20…19).
	Nice *int `hcl:"nice,optional"`
	// Services limits process settings to these services (default all).
	Services []string `hcl:"services,optional"`
	// Optional turns a setting that cannot be applied into a warning.
	Optional  bool           `hcl:"optional,optional"`
	DependsOn hcl.Expression `hcl:"depends_on,optional"`
}

// MinCollectInterval is the shortest sampling interval of a collect step:
// below it the 10 ms resolution of /proc CPU times makes CPU% meaningless.
// Declared here so that validation (engine/steps) need not import the
// sampler (engine/collect, which writes results).
const MinCollectInterval = 10 * time.Millisecond

// CollectConfig is the body of `step "collect"`; it runs during the load
// step named by During.
type CollectConfig struct {
	During string `hcl:"during"` // step.load.<name>
	// Processes are process names (comm or argv[0] base name) or, between
	// slashes, regular expressions matched against the command line.
	Processes []string `hcl:"processes,optional"`
	// Services adds the processes each named service's provider reports
	// (default: every service of the trial).
	Services []string `hcl:"services,optional"`
	Loader   bool     `hcl:"loader,optional"` // sample benchflow's own process
	Interval string   `hcl:"interval,optional"`
	System   *bool    `hcl:"system,optional"`  // /proc/stat split, default true
	Network  *bool    `hcl:"network,optional"` // /proc/net/dev, default true
	// Machine turns the whole-machine accounting on (default true): every
	// process and kernel thread is sampled, and those that used at least
	// Threshold percent of one core (default 1) averaged over the load
	// are kept in processes.parquet; the CPU budget and the verdict of the
	// load come from it.
	Machine   *bool    `hcl:"machine,optional"`
	Threshold *float64 `hcl:"threshold,optional"`
	// QuietCheck is the window of the quiet check before the load
	// (default "1s"; "0s" turns it off).
	QuietCheck string         `hcl:"quiet_check,optional"`
	DependsOn  hcl.Expression `hcl:"depends_on,optional"`
}

// CheckConfig is the body of `step "check"`: one request whose response must
// match before any load runs.
type CheckConfig struct {
	URL          string            `hcl:"url"`
	Method       string            `hcl:"method,optional"`
	Headers      map[string]string `hcl:"headers,optional"`
	Body         string            `hcl:"body,optional"`
	Status       int               `hcl:"status,optional"` // default 200
	BodyContains string            `hcl:"body_contains,optional"`
	BodyMatches  string            `hcl:"body_matches,optional"` // regexp
	BodySize     *int64            `hcl:"body_size,optional"`
	HeaderValues map[string]string `hcl:"expect_headers,optional"`
	Timeout      string            `hcl:"timeout,optional"`
	DependsOn    hcl.Expression    `hcl:"depends_on,optional"`
}

// ExecConfig is the body of `step "exec"`: run a command on the host.
type ExecConfig struct {
	Command   []string          `hcl:"command"`
	Env       map[string]string `hcl:"env,optional"`
	Dir       string            `hcl:"dir,optional"`
	Timeout   string            `hcl:"timeout,optional"`
	DependsOn hcl.Expression    `hcl:"depends_on,optional"`
}

// ProvisionConfig is the body of `step "provision"`: it makes provisioning
// of the named services an explicit DAG node. Services not named by any
// provision step are provisioned before all other steps.
type ProvisionConfig struct {
	Services  []string       `hcl:"services"`
	DependsOn hcl.Expression `hcl:"depends_on,optional"`
}
