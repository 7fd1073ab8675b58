package nomad

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/units"
	"github.com/benchflow/benchflow/engine/userfile"
	"github.com/benchflow/benchflow/providers"
)

// Config is the body of a `provider "nomad" "<name>" {}` block, decoded per
// trial (so `count = matrix.count` works). Every attribute is optional.
//
// Secrets are never attributes: the block names the environment variable
// or the file that holds each token, and only the name or path is kept
// here, so printing a Config (or a manifest holding it) shows no secret.
type Config struct {
	// Address of the Nomad HTTP API; default NOMAD_ADDR, then
	// http://127.0.0.1:4646.
	Address   string `hcl:"address,optional"`
	Region    string `hcl:"region,optional"`    // default NOMAD_REGION
	Namespace string `hcl:"namespace,optional"` // default NOMAD_NAMESPACE
	// TokenEnv names the variable holding the Nomad ACL token (default
	// NOMAD_TOKEN); TokenFile is a file holding it instead.
	TokenEnv  string `hcl:"token_env,optional"`
	TokenFile string `hcl:"token_file,optional"`

	Datacenters []string `hcl:"datacenters,optional"` // default ["*"]
	// Driver is the task driver: "docker" (default), "exec" or "raw_exec".
	Driver string `hcl:"driver,optional"`
	// Count is the number of allocations; default the service's replicas,
	// then 1.
	Count  int `hcl:"count,optional"`
	CPU    int `hcl:"cpu,optional"`    // MHz per allocation, default 100
	Memory int `hcl:"memory,optional"` // MB per allocation, default 128
	// JobName is the job id; default benchflow-<service>-<run id>.
	JobName string `hcl:"job_name,optional"`
	Group   string `hcl:"group,optional"` // default "servers"
	Task    string `hcl:"task,optional"`  // default "web"

	// ServiceProvider is where the job's service registers:
	// "consul" (default) or "nomad" (Nomad's native service discovery:
	// nothing below about Consul is used, and no Consul is contacted).
	ServiceProvider string `hcl:"service_provider,optional"`

	// ConsulAddress defaults to CONSUL_HTTP_ADDR, then 127.0.0.1:8500.
	ConsulAddress   string `hcl:"consul_address,optional"`
	ConsulTokenEnv  string `hcl:"consul_token_env,optional"` // default CONSUL_HTTP_TOKEN
	ConsulTokenFile string `hcl:"consul_token_file,optional"`

	// Gateway creates an APISIX upstream and route to the service.
	Gateway bool `hcl:"gateway,optional"`
	// APISIXAdmin is the admin API base URL; default APISIX_ADMIN.
	APISIXAdmin   string `hcl:"apisix_admin,optional"`
	APISIXKeyEnv  string `hcl:"apisix_key_env,optional"` // default APISIX_ADMIN_KEY
	APISIXKeyFile string `hcl:"apisix_key_file,optional"`
	// GatewayURL is the APISIX proxy base URL; default APISIX_GATEWAY.
	GatewayURL string `hcl:"gateway_url,optional"`
	// APISIXControl is the control API base URL, where the provider
	// checks that APISIX's Consul discovery holds every instance before
	// the load; default APISIX_CONTROL, then http://127.0.0.1:9090.
	// "off" skips the check.
	APISIXControl string `hcl:"apisix_control,optional"`
	// EtcdAddress is the client URL of APISIX's etcd (its
	// deployment.etcd.host); default APISIX_ETCD. When set, the
	// manifest records etcd's version (GET /version) in gateway trials;
	// nothing else is read or written there.
	EtcdAddress string `hcl:"etcd_address,optional"`
	// GatewayPIDFile is the pid file of APISIX's nginx master (APISIX
	// writes logs/nginx.pid under its prefix); default APISIX_PID_FILE.
	// The gateway's processes are found by the socket listening on
	// gateway_url's port, which needs their open files: inside
	// reproduce's sandbox (no capabilities) those cannot be read, and
	// the pid file is how the master, and the workers below it, are
	// found there.
	GatewayPIDFile string `hcl:"gateway_pid_file,optional"`
	// RouteURI is the route's uri (default "/*").
	RouteURI string `hcl:"route_uri,optional"`
	// Discovery is "consul" (the default with service_provider "consul":
	// the upstream names the Consul service, APISIX resolves it) or
	// "nodes" (explicit nodes taken from Consul, or from Nomad's
	// registrations, when the service is healthy; the default, and the
	// only choice, with service_provider "nomad").
	Discovery string `hcl:"discovery,optional"`
	// ReadyTimeout bounds scheduling, health and gateway waits (default
	// "2m").
	ReadyTimeout string `hcl:"ready_timeout,optional"`
}

// Drivers the provider knows how to configure.
var Drivers = []string{"docker", "exec", "raw_exec"}

// Service providers: where the job's service registers and the provider
// waits for it.
const (
	// ServiceProviderConsul registers the service in Consul, with its
	// check; the provider waits for the passing instances there.
	ServiceProviderConsul = "consul"
	// ServiceProviderNomad uses Nomad's native service discovery (Nomad
	// 1.3, checks since 1.4): the service registers in Nomad, which runs
	// the check itself, and no Consul is contacted.
	ServiceProviderNomad = "nomad"
)

// ServiceProviders lists the values of service_provider.
var ServiceProviders = []string{ServiceProviderConsul, ServiceProviderNomad}

// Discovery modes of the APISIX upstream.
var discoveries = []string{"consul", "nodes"}

// settings is a validated Config with defaults applied and secrets read.
type settings struct {
	Config
	ready       time.Duration
	token       string // Nomad ACL token
	consulToken string
	adminKey    string
	gatewayErr  error // gateway = true without the APISIX addresses
}

// useConsul reports whether the service registers in Consul.
func (s *settings) useConsul() bool { return s.ServiceProvider == ServiceProviderConsul }

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Validate checks the attributes c sets, as New will
// (providers.Validator): each problem is a *providers.ConfigError naming
// the attribute, so `benchflow validate` reports it at its place in the
// file, before anything is contacted. It reads neither the environment nor
// the token files; New checks what they supply.
func (c *Config) Validate() error {
	if errs := c.problems(); len(errs) > 0 {
		return errs
	}
	return nil
}

// configErrors is the problems of one config: each a *providers.ConfigError
// (the engine reports them one by one), printed on one line.
type configErrors []error

func (e configErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e configErrors) Unwrap() []error { return e }

// bad is the error of one attribute.
func bad(attr, format string, args ...any) error {
	return &providers.ConfigError{Attr: attr, Msg: fmt.Sprintf(format, args...)}
}

// oneOf quotes a list of values: "a", "b" or "c".
func oneOf(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// problems checks the values c holds; an empty value is a default and is
// not checked.
func (c *Config) problems() configErrors {
	var errs configErrors
	if c.Driver != "" && !slices.Contains(Drivers, c.Driver) {
		errs = append(errs, bad("driver", "%q is not %s.%s", c.Driver, oneOf(Drivers), diag.Suggest(c.Driver, Drivers)))
	}
	if c.Count < 0 {
		errs = append(errs, bad("count", "%d is negative: want 1 or more, or leave it out for the service's replicas", c.Count))
	}
	if c.CPU < 0 {
		errs = append(errs, bad("cpu", "%d is negative: want the MHz per allocation (default 100)", c.CPU))
	}
	if c.Memory < 0 {
		errs = append(errs, bad("memory", "%d is negative: want the MB per allocation (default 128)", c.Memory))
	}
	if c.JobName != "" && !validJobID(c.JobName) {
		errs = append(errs, bad("job_name", "%q is not a job id: use letters, digits, '-', '_' and '.' only, at most 128", c.JobName))
	}
	if c.RouteURI != "" && !strings.HasPrefix(c.RouteURI, "/") {
		errs = append(errs, bad("route_uri", "%q must start with /", c.RouteURI))
	}
	if c.ServiceProvider != "" && !slices.Contains(ServiceProviders, c.ServiceProvider) {
		errs = append(errs, bad("service_provider", "%q is not %s.%s", c.ServiceProvider, oneOf(ServiceProviders), diag.Suggest(c.ServiceProvider, ServiceProviders)))
	}
	switch {
	case c.Discovery != "" && !slices.Contains(discoveries, c.Discovery):
		errs = append(errs, bad("discovery", "%q is not %s.%s", c.Discovery, oneOf(discoveries), diag.Suggest(c.Discovery, discoveries)))
	case c.Discovery == "consul" && c.ServiceProvider == ServiceProviderNomad:
		errs = append(errs, bad("discovery", "\"consul\" makes APISIX resolve the upstream in Consul, but with service_provider = \"nomad\" "+
			"the service registers in Nomad only: set discovery = \"nodes\" (the upstream then lists the instances Nomad registered), or leave discovery out"))
	}
	if c.ReadyTimeout != "" {
		if d, err := units.ParseDuration(c.ReadyTimeout); err != nil || d <= 0 {
			errs = append(errs, bad("ready_timeout", "%q is not a positive duration such as \"90s\"", c.ReadyTimeout))
		}
	}
	for _, sec := range []struct {
		what, env, file string
		used            bool
	}{
		{"token", c.TokenEnv, c.TokenFile, true},
		{"consul_token", c.ConsulTokenEnv, c.ConsulTokenFile, c.ServiceProvider != ServiceProviderNomad},
		{"apisix_key", c.APISIXKeyEnv, c.APISIXKeyFile, c.Gateway},
	} {
		if sec.used && sec.env != "" && sec.file != "" {
			errs = append(errs, bad(sec.what+"_file", "%s_env and %s_file are both set: choose one", sec.what, sec.what))
		}
	}
	if c.Gateway && c.APISIXControl != "" && c.APISIXControl != "off" {
		if u, err := url.Parse(c.APISIXControl); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, bad("apisix_control", "%q is not http(s)://host:port (APISIX's control API, default http://127.0.0.1:9090) or \"off\"", c.APISIXControl))
		}
	}
	if c.EtcdAddress != "" && !httpURL(c.EtcdAddress) {
		errs = append(errs, bad("etcd_address", "%q is not http(s)://host:port (the client URL of APISIX's etcd, from etcd_address or APISIX_ETCD, e.g. http://127.0.0.1:2379)", c.EtcdAddress))
	}
	if c.GatewayPIDFile != "" && !filepath.IsAbs(c.GatewayPIDFile) {
		errs = append(errs, bad("gateway_pid_file", "%q is not an absolute path (the pid file of APISIX's nginx master, from gateway_pid_file or APISIX_PID_FILE, e.g. /srv/apisix/logs/nginx.pid)", c.GatewayPIDFile))
	}
	return errs
}

// httpURL reports whether s is an http(s) URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// resolve validates c, applies defaults (the environment's first) and
// reads secrets.
func resolve(c *Config) (*settings, error) {
	s := &settings{Config: *c}
	if s.Address == "" {
		s.Address = getenv("NOMAD_ADDR", "http://127.0.0.1:4646")
	}
	if s.Region == "" {
		s.Region = os.Getenv("NOMAD_REGION")
	}
	if s.Namespace == "" {
		s.Namespace = os.Getenv("NOMAD_NAMESPACE")
	}
	if s.ServiceProvider == "" {
		s.ServiceProvider = ServiceProviderConsul
	}
	if s.ConsulAddress == "" && s.useConsul() {
		s.ConsulAddress = os.Getenv("CONSUL_HTTP_ADDR") // empty: the Consul client's default
	}
	if s.Driver == "" {
		s.Driver = "docker"
	}
	if s.CPU == 0 {
		s.CPU = 100
	}
	if s.Memory == 0 {
		s.Memory = 128
	}
	if len(s.Datacenters) == 0 {
		s.Datacenters = []string{"*"}
	}
	if s.Group == "" {
		s.Group = "servers"
	}
	if s.Task == "" {
		s.Task = "web"
	}
	if s.RouteURI == "" {
		s.RouteURI = "/*"
	}
	if s.Discovery == "" {
		s.Discovery = "consul"
		if !s.useConsul() {
			// Without Consul, explicit nodes are the only way APISIX
			// finds the instances.
			s.Discovery = "nodes"
		}
	}
	if s.Gateway && s.APISIXControl == "" {
		s.APISIXControl = getenv("APISIX_CONTROL", "http://127.0.0.1:9090")
	}
	if s.Gateway && s.EtcdAddress == "" {
		s.EtcdAddress = os.Getenv("APISIX_ETCD")
	}
	if s.Gateway && s.GatewayPIDFile == "" {
		s.GatewayPIDFile = os.Getenv("APISIX_PID_FILE")
	}
	errs := s.Config.problems()
	s.ready = 2 * time.Minute
	if d, err := units.ParseDuration(s.ReadyTimeout); err == nil && d > 0 {
		s.ready = d
	}
	var err error
	if s.token, err = secret("token", s.TokenEnv, s.TokenFile, "NOMAD_TOKEN"); err != nil {
		errs = append(errs, err)
	}
	if s.useConsul() {
		if s.consulToken, err = secret("consul_token", s.ConsulTokenEnv, s.ConsulTokenFile, "CONSUL_HTTP_TOKEN"); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Gateway {
		if s.APISIXAdmin == "" {
			s.APISIXAdmin = os.Getenv("APISIX_ADMIN")
		}
		if s.GatewayURL == "" {
			s.GatewayURL = os.Getenv("APISIX_GATEWAY")
		}

		// Missing gateway addresses fail Provision, not New, so that
		// `benchflow render` works without them.
		var missing []string
		if s.APISIXAdmin == "" {
			missing = append(missing, "apisix_admin (or APISIX_ADMIN), e.g. http://127.0.0.1:9180")
		}
		if s.GatewayURL == "" {
			missing = append(missing, "gateway_url (or APISIX_GATEWAY), e.g. http://127.0.0.1:9080")
		}
		if len(missing) > 0 {
			s.gatewayErr = fmt.Errorf("gateway = true needs %s", strings.Join(missing, " and "))
		}
		s.GatewayURL = strings.TrimRight(s.GatewayURL, "/")
		if s.adminKey, err = secret("apisix_key", s.APISIXKeyEnv, s.APISIXKeyFile, "APISIX_ADMIN_KEY"); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// secret reads a token from a file or an environment variable. Errors name
// the attribute and the path, never the value. (problems refuses both set.)
func secret(what, env, file, defEnv string) (string, error) {
	if env != "" && file != "" {
		return "", nil // reported by problems
	}
	if file != "" {
		b, err := userfile.Read(file, userfile.MaxTokenSize)
		if err != nil {
			return "", bad(what+"_file", "%v", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if env == "" {
		env = defEnv
	}
	return os.Getenv(env), nil
}

func validJobID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// serviceName turns an id into a DNS-compatible Consul service name:
// lower case letters, digits and dashes.
func serviceName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	return out
}
