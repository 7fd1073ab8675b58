package nomad

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
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
	// RouteURI is the route's uri (default "/*").
	RouteURI string `hcl:"route_uri,optional"`
	// Discovery is "consul" (default: the upstream names the Consul
	// service, APISIX resolves it) or "nodes" (explicit nodes taken from
	// Consul when the service is healthy).
	Discovery string `hcl:"discovery,optional"`
	// ReadyTimeout bounds scheduling, health and gateway waits (default
	// "2m").
	ReadyTimeout string `hcl:"ready_timeout,optional"`
}

// Drivers the provider knows how to configure.
var Drivers = []string{"docker", "exec", "raw_exec"}

// settings is a validated Config with defaults applied and secrets read.
type settings struct {
	Config
	ready       time.Duration
	token       string // Nomad ACL token
	consulToken string
	adminKey    string
	gatewayErr  error // gateway = true without the APISIX addresses
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// resolve validates c, applies defaults and reads secrets.
func resolve(c *Config) (*settings, error) {
	s := &settings{Config: *c}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if s.Address == "" {
		s.Address = getenv("NOMAD_ADDR", "http://127.0.0.1:4646")
	}
	if s.Region == "" {
		s.Region = os.Getenv("NOMAD_REGION")
	}
	if s.Namespace == "" {
		s.Namespace = os.Getenv("NOMAD_NAMESPACE")
	}
	if s.ConsulAddress == "" {
		s.ConsulAddress = os.Getenv("CONSUL_HTTP_ADDR") // empty: the Consul client's default
	}
	if s.Driver == "" {
		s.Driver = "docker"
	}
	if !contains(Drivers, s.Driver) {
		bad("driver %q: want one of %s", s.Driver, strings.Join(Drivers, ", "))
	}
	if s.Count < 0 {
		bad("count = %d: must not be negative", s.Count)
	}
	if s.CPU < 0 || s.Memory < 0 {
		bad("cpu and memory must not be negative")
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
	if s.JobName != "" && !validJobID(s.JobName) {
		bad("job_name %q: use letters, digits, '-', '_' and '.' only", s.JobName)
	}
	if s.RouteURI == "" {
		s.RouteURI = "/*"
	}
	if !strings.HasPrefix(s.RouteURI, "/") {
		bad("route_uri %q: must start with /", s.RouteURI)
	}
	if s.Discovery == "" {
		s.Discovery = "consul"
	}
	if s.Discovery != "consul" && s.Discovery != "nodes" {
		bad("discovery %q: want \"consul\" or \"nodes\"", s.Discovery)
	}
	s.ready = 2 * time.Minute
	if s.ReadyTimeout != "" {
		d, err := time.ParseDuration(s.ReadyTimeout)
		if err != nil || d <= 0 {
			bad("ready_timeout %q: want a positive duration such as \"90s\"", s.ReadyTimeout)
		} else {
			s.ready = d
		}
	}
	var err error
	if s.token, err = secret("token", s.TokenEnv, s.TokenFile, "NOMAD_TOKEN"); err != nil {
		errs = append(errs, err)
	}
	if s.consulToken, err = secret("consul_token", s.ConsulTokenEnv, s.ConsulTokenFile, "CONSUL_HTTP_TOKEN"); err != nil {
		errs = append(errs, err)
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
		if s.APISIXControl == "" {
			s.APISIXControl = getenv("APISIX_CONTROL", "http://127.0.0.1:9090")
		}
		if s.APISIXControl != "off" {
			if u, err := url.Parse(s.APISIXControl); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("apisix_control %q: want http(s)://host:port (APISIX's control API, default http://127.0.0.1:9090) or \"off\"", s.APISIXControl)
			}
		}
		if s.adminKey, err = secret("apisix_key", s.APISIXKeyEnv, s.APISIXKeyFile, "APISIX_ADMIN_KEY"); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	return s, nil
}

// secret reads a token from a file or an environment variable. Errors name
// the variable or path, never the value.
func secret(what, env, file, defEnv string) (string, error) {
	if env != "" && file != "" {
		return "", fmt.Errorf("%s_env and %s_file are both set: choose one", what, what)
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("reading %s_file: %w", what, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if env == "" {
		env = defEnv
	}
	return os.Getenv(env), nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
