package docker

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/go-units"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/providers"
)

// Network modes understood by Config.Network besides a user network name.
const (
	NetworkBridge = "bridge"
	NetworkHost   = "host"
	NetworkNone   = "none"
)

// Pull policies of Config.Pull.
const (
	PullMissing = "missing"
	PullNever   = "never"
	PullAlways  = "always"
)

// DefaultFilesDir is where a service's rendered files folder is mounted
// inside the container (self.dir in templates).
const DefaultFilesDir = "/etc/benchflow"

// DefaultLogTail is how many of the last container log lines Teardown saves.
const DefaultLogTail = "10000"

// Config is the body of a `provider "docker" "<name>" { … }` block.
type Config struct {
	// Network is "bridge" (default: ports published through the engine,
	// i.e. docker-proxy/iptables NAT), "host", "none", or the name of a
	// user network, created for the run when missing and removed after.
	Network string `hcl:"network,optional"`
	// Bind is the host address published ports listen on (default
	// "127.0.0.1": a benchmark target is never exposed by accident).
	Bind string `hcl:"bind,optional"`
	// Pull is "missing" (default), "never" or "always".
	Pull string `hcl:"pull,optional"`
	// CPUs limits the container to that many CPUs (CFS quota), 0 = none.
	CPUs float64 `hcl:"cpus,optional"`
	// CPUSet pins the container to CPUs ("0", "1-3", "0,2").
	CPUSet string `hcl:"cpuset,optional"`
	// Memory is a memory limit ("512MiB", "1g"); "" = none.
	Memory string `hcl:"memory,optional"`
	// Sysctls are namespaced sysctls set in the container
	// ("net.core.somaxconn" = "65535"); net.* needs a non-host network.
	Sysctls map[string]string `hcl:"sysctls,optional"`
	// Ulimits maps a limit name to "soft:hard" or one number for both
	// (nofile = 65535).
	Ulimits map[string]string `hcl:"ulimits,optional"`
	// Host overrides DOCKER_HOST ("unix:///var/run/docker.sock").
	Host string `hcl:"host,optional"`
	// Labels are extra labels for every container and network.
	Labels map[string]string `hcl:"labels,optional"`
	// FilesDir is the container path the service's rendered files folder
	// is mounted at, read-only (default "/etc/benchflow").
	FilesDir string `hcl:"files_dir,optional"`
	// LogTail is how many last lines of the container's logs are saved to
	// the results directory at teardown ("all" for everything; default
	// "10000").
	LogTail string `hcl:"log_tail,optional"`
}

// settings is a validated Config with defaults applied.
type settings struct {
	network  string
	bind     string
	pull     string
	nanoCPUs int64
	cpuset   string
	memory   int64
	sysctls  map[string]string
	ulimits  []*units.Ulimit
	host     string
	// sshHost is the host of an ssh:// engine address: where its
	// published ports are reached.
	sshHost  string
	labels   map[string]string
	filesDir string
	logTail  string
}

// Validate checks c as New will (providers.Validator): each problem is a
// *providers.ConfigError naming the attribute. A network named one or two
// letters away from a mode ("brige") is allowed, as any user network is,
// but reported as a warning with the suggestion.
func (c *Config) Validate() error {
	_, err := c.validate()
	if n := c.Network; n != "" && n != NetworkBridge && n != NetworkHost && n != NetworkNone && err == nil {
		if hint := diag.Suggest(n, []string{NetworkBridge, NetworkHost, NetworkNone}); hint != "" {
			return &providers.ConfigError{Attr: "network", Warning: true,
				Msg: fmt.Sprintf("%q is not a network mode, so it names a user network, created for the run when missing.%s", n, hint)}
		}
	}
	return err
}

// bad is the error of one attribute.
func bad(attr, format string, args ...any) error {
	return &providers.ConfigError{Attr: attr, Msg: fmt.Sprintf(format, args...)}
}

// validate checks c and applies the defaults. Errors name the attribute
// (*providers.ConfigError).
func (c *Config) validate() (*settings, error) {
	s := &settings{
		network:  c.Network,
		bind:     c.Bind,
		pull:     c.Pull,
		cpuset:   c.CPUSet,
		sysctls:  c.Sysctls,
		host:     c.Host,
		labels:   c.Labels,
		filesDir: c.FilesDir,
		logTail:  c.LogTail,
	}
	if s.network == "" {
		s.network = NetworkBridge
	}
	if s.network != NetworkBridge && s.network != NetworkHost && s.network != NetworkNone && !validName(s.network) {
		return nil, bad("network", "%q is not \"bridge\", \"host\", \"none\" or a valid network name (letters, digits, '_', '.', '-')", s.network)
	}
	if err := s.checkHost(); err != nil {
		return nil, err
	}
	if s.bind == "" {
		s.bind = "127.0.0.1"
		if s.sshHost != "" {
			// Published on the remote host, whose loopback this machine
			// cannot reach.
			s.bind = "0.0.0.0"
		}
	}
	if _, err := netip.ParseAddr(s.bind); err != nil {
		return nil, bad("bind", "%q is not an IP address", s.bind)
	}
	switch s.pull {
	case "":
		s.pull = PullMissing
	case PullMissing, PullNever, PullAlways:
	default:
		return nil, bad("pull", "%q is not \"missing\", \"never\" or \"always\".%s", s.pull, diag.Suggest(s.pull, []string{PullMissing, PullNever, PullAlways}))
	}
	if c.CPUs < 0 || math.IsNaN(c.CPUs) || math.IsInf(c.CPUs, 0) {
		return nil, bad("cpus", "%v is not a positive number", c.CPUs)
	}
	s.nanoCPUs = int64(c.CPUs * 1e9)
	if s.cpuset != "" && !validCPUList(s.cpuset) {
		return nil, bad("cpuset", "%q is not a CPU list like \"0\", \"1-3\" or \"0,2\"", s.cpuset)
	}
	if c.Memory != "" {
		m, err := units.RAMInBytes(c.Memory)
		if err != nil || m <= 0 {
			return nil, bad("memory", "%q is not a size like \"512MiB\" or \"1g\"", c.Memory)
		}
		s.memory = m
	}
	for k := range c.Sysctls {
		if k == "" || strings.ContainsAny(k, " =/") {
			return nil, bad("sysctls", "%q is not a sysctl name like \"net.core.somaxconn\"", k)
		}
	}
	if s.network == NetworkHost {
		for k := range c.Sysctls {
			if strings.HasPrefix(k, "net.") {
				return nil, bad("sysctls", "%q cannot be set with network = \"host\" (the container shares the host's network namespace; use a tune step instead)", k)
			}
		}
	}
	names := make([]string, 0, len(c.Ulimits))
	for k := range c.Ulimits {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		v := strings.TrimSpace(c.Ulimits[name])
		if !strings.Contains(v, ":") {
			v = v + ":" + v
		}
		u, err := units.ParseUlimit(name + "=" + v)
		if err != nil {
			return nil, bad("ulimits", "%q = %q: %v", name, c.Ulimits[name], err)
		}
		s.ulimits = append(s.ulimits, u)
	}
	if s.filesDir == "" {
		s.filesDir = DefaultFilesDir
	}
	if !path.IsAbs(s.filesDir) || path.Clean(s.filesDir) == "/" {
		return nil, bad("files_dir", "%q is not an absolute path other than /", s.filesDir)
	}
	s.filesDir = path.Clean(s.filesDir)
	if s.logTail == "" {
		s.logTail = DefaultLogTail
	}
	if s.logTail != "all" {
		n := 0
		if _, err := fmt.Sscanf(s.logTail, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != s.logTail {
			return nil, bad("log_tail", "%q is not a line count or \"all\"", s.logTail)
		}
	}
	for k := range c.Labels {
		if strings.HasPrefix(k, "dev.benchflow.") {
			return nil, bad("labels", "%q is reserved (dev.benchflow.* labels are set by benchflow)", k)
		}
	}
	return s, nil
}

// validName reports whether s is usable as a Docker object name.
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || (r != '_' && r != '.' && r != '-')) {
			return false
		}
	}
	return true
}

// validCPUList reports whether s looks like "0", "1-3" or "0,2-3".
func validCPUList(s string) bool {
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !digits(lo) || (isRange && !digits(hi)) {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// checkHost checks the engine address: a scheme Docker's client knows, and
// for ssh:// one Docker's SSH connection helper accepts.
func (s *settings) checkHost() error {
	if s.host == "" {
		return nil
	}
	const forms = "unix:///var/run/docker.sock, tcp://10.0.0.5:2376 or ssh://10.0.0.2 (ssh:// then [user@]host[:port])"
	u, err := url.Parse(s.host)
	if err != nil || u.Scheme == "" {
		return bad("host", "%q is not an engine address like %s", s.host, forms)
	}
	switch u.Scheme {
	case "unix", "tcp", "http", "https", "npipe", "fd":
	case "ssh":
		if _, err := connhelper.GetConnectionHelper(s.host); err != nil {
			return bad("host", "%q: %v (write ssh:// then [user@]host[:port], with no query)", s.host, err)
		}
		s.sshHost = u.Hostname()
	default:
		return bad("host", "%q: unknown scheme %q: an engine address is %s (npipe://, fd://, http:// and https:// work too).%s",
			s.host, u.Scheme, forms, diag.Suggest(u.Scheme, []string{"unix", "tcp", "ssh"}))
	}
	return nil
}
