// Package ssh is the ssh provider: services run as processes on another
// machine reached over SSH, so the server runs on one host and the load
// comes from another, without a cluster.
//
// The remote side is benchflow itself. On the first service of a trial the
// provider connects (host keys always checked against known_hosts), checks
// the host's `uname -sm`, copies its own binary to
// ~/.cache/benchflow/bin/<sha256>/benchflow on the host over SFTP (once:
// it is reused while its sha256 matches) and runs `benchflow
// remote-helper` in an SSH session; the controller drives it over the
// session's stdin and stdout (protocol.go). The helper writes the
// service's files into a fresh per-run folder, starts the command directly
// (no shell) in a session of its own with the BENCHFLOW_* markers, reports
// its exit, stops its process group and removes the folder. When the
// session ends, or nothing is heard from the controller for idle_timeout
// (a cut link), the helper stops and removes everything it started itself.
package ssh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchflow/benchflow/engine/units"
	"github.com/benchflow/benchflow/providers"
)

// Defaults of the provider block.
const (
	DefaultPort        = 22
	DefaultDir         = "/tmp"
	DefaultIdleTimeout = 60 * time.Second
	DefaultStopTimeout = 5 * time.Second
)

// Type is the ssh provider type, registered in init.
var Type = providers.TypeOf(providers.Spec[Config]{
	Name: "ssh",
	New: func(name string, c *Config) (providers.Provider, error) {
		return New(name, *c)
	},
	Attrs:  []string{"pid", "host", "dir"},
	GC:     GC,
	Agents: true,
	Grant:  Grant,
	Remote: remote,
})

func init() { providers.Register(Type) }

// Config is the body of a `provider "ssh" "<name>"` block.
type Config struct {
	// Address is the host's name or IP address (required): where
	// benchflow logs in, and where health checks, service.<name>.url and
	// loads reach the services.
	Address string `hcl:"address,optional"`
	// Addresses are the hosts load agents run on (an agents block naming
	// this provider), spread in turn; default [address]. Services run on
	// address (or the first of addresses).
	Addresses []string `hcl:"addresses,optional"`
	// Port is sshd's port (default 22).
	Port int `hcl:"port,optional"`
	// User logs in (default: the user running benchflow).
	User string `hcl:"user,optional"`
	// IdentityFile is the private key (OpenSSH format, no passphrase);
	// when unset the keys of ssh-agent (SSH_AUTH_SOCK) are offered.
	IdentityFile string `hcl:"identity_file,optional"`
	// KnownHosts is the known_hosts file the host's key is checked
	// against (default ~/.ssh/known_hosts). It is always checked.
	KnownHosts string `hcl:"known_hosts,optional"`
	// Sudo runs the helper (and so the services) through `sudo -n`.
	Sudo bool `hcl:"sudo,optional"`
	// Dir is the folder on the host the per-run folders are made in
	// (default /tmp).
	Dir string `hcl:"dir,optional"`
	// StopTimeout is how long teardown waits after SIGTERM before SIGKILL.
	StopTimeout string `hcl:"stop_timeout,optional"`
	// IdleTimeout is how long the helper on the host waits without word
	// from benchflow (a cut link) before it stops every service it
	// started and exits (default 60s).
	IdleTimeout string `hcl:"idle_timeout,optional"`
}

// Validate checks c as New will; it contacts nothing.
func (c *Config) Validate() error {
	_, err := c.target("")
	return err
}

// target is c with its defaults, checked.
func (c *Config) target(name string) (target, error) {
	t := target{Provider: name, Address: c.Address, Port: c.Port, User: c.User, IdentityFile: c.IdentityFile, KnownHosts: c.KnownHosts, Sudo: c.Sudo, Idle: DefaultIdleTimeout}
	var errs []error
	if strings.TrimSpace(c.Address) == "" && len(c.Addresses) == 0 {
		errs = append(errs, &providers.ConfigError{Attr: "address", Msg: "the host's name or IP address is required: address = \"10.0.0.2\" (or addresses = [\"10.0.0.3\", …] for load agents)"})
	} else if strings.ContainsAny(c.Address, " /@") {
		errs = append(errs, &providers.ConfigError{Attr: "address", Msg: fmt.Sprintf("%q is not a host name or address (set the user with user = \"…\" and the port with port = …)", c.Address)})
	}
	for _, a := range c.Addresses {
		if strings.TrimSpace(a) == "" || strings.ContainsAny(a, " /@") {
			errs = append(errs, &providers.ConfigError{Attr: "addresses", Msg: fmt.Sprintf("%q is not a host name or address", a)})
		}
	}
	if t.Address == "" && len(c.Addresses) > 0 {
		t.Address = c.Addresses[0]
	}
	if t.Port == 0 {
		t.Port = DefaultPort
	} else if t.Port < 1 || t.Port > 65535 {
		errs = append(errs, &providers.ConfigError{Attr: "port", Msg: fmt.Sprintf("%d is not a TCP port (1–65535)", t.Port)})
	}
	if t.User == "" {
		if u, err := user.Current(); err == nil {
			t.User = u.Username
		}
	}
	if t.IdentityFile != "" {
		t.IdentityFile = expandHome(t.IdentityFile)
		if _, err := os.Stat(t.IdentityFile); err != nil {
			errs = append(errs, &providers.ConfigError{Attr: "identity_file", Msg: err.Error()})
		}
	}
	if t.KnownHosts == "" {
		t.KnownHosts = "~/.ssh/known_hosts"
	}
	t.KnownHosts = expandHome(t.KnownHosts)
	if _, err := os.Stat(t.KnownHosts); err != nil {
		errs = append(errs, &providers.ConfigError{Attr: "known_hosts", Msg: fmt.Sprintf("%v: host keys are always checked; record the host's key first: ssh-keyscan -p %d %s >> %s", err, t.Port, t.Address, t.KnownHosts)})
	}
	if c.Dir != "" && !path.IsAbs(c.Dir) {
		errs = append(errs, &providers.ConfigError{Attr: "dir", Msg: fmt.Sprintf("%q: an absolute path on the host is required", c.Dir)})
	}
	for _, d := range []struct {
		attr, v string
		dst     *time.Duration
	}{{"idle_timeout", c.IdleTimeout, &t.Idle}} {
		if d.v == "" {
			continue
		}
		v, err := units.ParseDuration(d.v)
		if err != nil {
			errs = append(errs, &providers.ConfigError{Attr: d.attr, Msg: err.Error()})
		} else if v < pingTimeout+5*pingEvery {
			errs = append(errs, &providers.ConfigError{Attr: d.attr, Msg: fmt.Sprintf("%s is too short: benchflow tells the helper it is there every %s and gives up on it after %s without an answer; give at least %s", v, pingEvery, pingTimeout, pingTimeout+5*pingEvery)})
		} else {
			*d.dst = v
		}
	}
	if _, err := c.stopTimeout(); err != nil {
		errs = append(errs, err)
	}
	return t, errors.Join(errs...)
}

func (c *Config) stopTimeout() (time.Duration, error) {
	if c.StopTimeout == "" {
		return DefaultStopTimeout, nil
	}
	d, err := units.ParseDuration(c.StopTimeout)
	if err != nil {
		return 0, &providers.ConfigError{Attr: "stop_timeout", Msg: err.Error()}
	}
	return d, nil
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}

// Provider runs the services of one trial on one host.
type Provider struct {
	name        string
	cfg         Config
	t           target
	runDir      string // <dir>/benchflow-run-<random>: this trial's folder
	stopTimeout time.Duration

	mu      sync.Mutex
	made    bool // runDir exists on the host
	users   int  // deployments using runDir
	c       *conn
	journal string // the state file that names the host for gc
}

var (
	_ providers.Provider        = (*Provider)(nil)
	_ providers.ServiceDirer    = (*Provider)(nil)
	_ providers.VersionRunner   = (*Provider)(nil)
	_ providers.Describer       = (*Provider)(nil)
	_ providers.Deployment      = (*Deployment)(nil)
	_ providers.Liveness        = (*Deployment)(nil)
	_ providers.VersionReporter = (*Deployment)(nil)
	_ providers.ProcessReporter = (*Deployment)(nil)
)

// New builds the provider named name; it contacts nothing.
func New(name string, cfg Config) (*Provider, error) {
	t, err := cfg.target(name)
	if err != nil {
		return nil, fmt.Errorf("ssh provider %q: %w", name, err)
	}
	st, _ := cfg.stopTimeout()
	dir := cfg.Dir
	if dir == "" {
		dir = DefaultDir
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	return &Provider{name: name, cfg: cfg, t: t, stopTimeout: st, runDir: path.Join(dir, runFolderPrefix+hex.EncodeToString(rnd[:]))}, nil
}

// ServiceDir is the service's folder on the host: self.dir.
func (p *Provider) ServiceDir(service string) string { return path.Join(p.runDir, fileName(service)) }

// Describe is the line `benchflow plan` prints.
func (p *Provider) Describe() string {
	return fmt.Sprintf("process on %s@%s over SSH, files in %s/…, reached at %s", p.t.User, p.t.addr(), path.Dir(p.runDir), p.t.Address)
}

// RunVersion runs a service's version_command on the host.
func (p *Provider) RunVersion(ctx context.Context, argv []string) (string, error) {
	c, err := acquire(ctx, p.t)
	if err != nil {
		return "", err
	}
	defer c.release()
	r, err := c.call(ctx, &request{Op: opVersion, Argv: argv})
	if r == nil {
		return "", err
	}
	if err != nil {
		return string(r.Data), fmt.Errorf("on %s: %w", p.t.Address, err)
	}
	return string(r.Data), nil
}

// Provision connects (once per host and trial), writes the service's files
// into its folder on the host and starts its command there.
func (p *Provider) Provision(ctx context.Context, req *providers.ProvisionRequest) (providers.Deployment, error) {
	spec := req.Service
	name := spec.Name
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return nil, fmt.Errorf("starting service %q: no command: the ssh provider runs the service's command as a process on %s; set command = [\"program\", \"arg\", …]", name, p.t.Address)
	}
	if spec.Replicas > 1 {
		return nil, fmt.Errorf("starting service %q: replicas = %d: the ssh provider runs one process per service", name, spec.Replicas)
	}
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := p.recordHost(); err != nil {
		// Not fatal (a read-only state folder, in reproduce's sandbox):
		// the helper still cleans up when the connection ends, and gc
		// with the pipeline FILE still finds the host.
		logf("ssh provider %q: recording %s in the state folder for gc: %v", p.name, p.t.addr(), err)
	}
	c, err := acquire(ctx, p.t)
	if err != nil {
		return nil, fmt.Errorf("starting service %q: %w", name, err)
	}
	d := &Deployment{p: p, c: c, name: name, logf: logf, dir: p.ServiceDir(name), logDir: req.LogDir}
	d.endpoint = providers.Endpoint{Scheme: "http", Host: p.t.Address, Ports: map[string]int{}}
	for i, pt := range spec.Ports {
		if i == 0 {
			d.endpoint.Port = pt.Host
		}
		if pt.Name != "" {
			d.endpoint.Ports[pt.Name] = pt.Host
		}
	}
	fail := func(err error) (providers.Deployment, error) {
		d.Teardown(context.Background())
		return nil, fmt.Errorf("starting service %q on %s: %w", name, p.t.where(), err)
	}
	marker := map[string]string{EnvRun: req.RunID, EnvTrial: req.TrialID, EnvService: name}
	p.mu.Lock()
	p.users++
	made := p.made
	p.mu.Unlock()
	d.used = true
	if !made {
		if _, err := c.call(ctx, &request{Op: opMkdir, Path: p.runDir, Mode: 0o755, Marker: marker}); err != nil {
			return fail(fmt.Errorf("creating the run folder %s: %w", p.runDir, err))
		}
		p.mu.Lock()
		p.made = true
		p.mu.Unlock()
	}
	if _, err := c.call(ctx, &request{Op: opMkdir, Path: d.dir, Mode: 0o755}); err != nil {
		return fail(fmt.Errorf("creating the service folder %s: %w", d.dir, err))
	}
	for _, f := range spec.Files {
		b, err := os.ReadFile(f.HostPath)
		if err != nil {
			return fail(err)
		}
		if _, err := c.call(ctx, &request{Op: opWrite, Path: path.Join(d.dir, f.Name), Data: b, Mode: f.Mode}); err != nil {
			return fail(fmt.Errorf("writing file %q: %w", f.Name, err))
		}
	}
	d.logPrefix = path.Join(p.runDir, fileName(name))
	r, err := c.call(ctx, &request{Op: opStart, Argv: spec.Command, Env: spec.Env, Dir: d.dir, Marker: marker, Log: d.logPrefix})
	if err != nil {
		if r != nil && r.NotFound {
			return fail(fmt.Errorf("command %q not found on the host (as user %s; install it there, or give its full path)", spec.Command[0], p.t.User))
		}
		return fail(err)
	}
	d.pid = r.PID
	d.endpoint.Attrs = map[string]string{"pid": strconv.Itoa(d.pid), "host": p.t.Address, "dir": d.dir}
	logf("started %s on %s: pid %d: %s", name, p.t.addr(), d.pid, strings.Join(spec.Command, " "))
	return d, nil
}

// Deployment is one service process on a host.
type Deployment struct {
	p         *Provider
	c         *conn
	name      string
	logf      func(string, ...any)
	dir       string
	logPrefix string
	logDir    string
	endpoint  providers.Endpoint
	pid       int
	used      bool

	teardown    sync.Once
	teardownErr error

	procsOnce sync.Once // Processes (collect.go)
	procs     []providers.Process
}

// Endpoint is the host's address on the service's first port.
func (d *Deployment) Endpoint() providers.Endpoint { return d.endpoint }

// Alive returns nil while the service's process runs on the host, and
// its exit status with the last lines of its output once it has exited.
// It sends nothing: the helper reports an exit the moment it happens, and
// the keepalive (every second) notices a connection that died.
func (d *Deployment) Alive(ctx context.Context) error {
	if d.pid == 0 {
		return fmt.Errorf("service %q was never started", d.name)
	}
	st := d.c.exited(d.pid)
	if st == nil {
		if err := d.c.err(); err != nil {
			return fmt.Errorf("service %q on %s: lost the connection to the host: %w", d.name, d.p.t.Address, err)
		}
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "service %q (pid %d on %s) exited: %s", d.name, d.pid, d.p.t.Address, st.Status)
	if st.Code == 0 {
		b.WriteString("; a service must stay in the foreground (nginx: -g 'daemon off;')")
	}
	if len(st.Tail) == 0 {
		b.WriteString("; it printed nothing on stdout or stderr")
	} else {
		fmt.Fprintf(&b, "; last lines of %s on the host:", st.Log)
		for _, l := range st.Tail {
			b.WriteString("\n    " + l)
		}
	}
	return errors.New(b.String())
}

// PlatformVersions records the host in the manifest: its address, kernel,
// system, CPU, cores and memory.
func (d *Deployment) PlatformVersions(ctx context.Context) map[string]string {
	m := map[string]string{"ssh_host": d.p.t.User + "@" + d.p.t.addr()}
	if rtt, err := medianConnect(ctx, d.p.t.addr(), 5); err == nil {
		m["rtt_us"] = strconv.FormatInt(rtt.Microseconds(), 10)
	}
	var ip string
	if a, ok := d.c.client.RemoteAddr().(*net.TCPAddr); ok {
		ip = a.IP.String()
	}
	r, err := d.c.call(ctx, &request{Op: opEnv, IP: ip})
	if err != nil || r.Env == nil {
		return m
	}
	e := r.Env
	m["host_name"], m["host_kernel"], m["host_os"], m["host_cpu"] = e.Hostname, e.Kernel, e.OS, e.CPU
	m["host_cores"] = strconv.Itoa(e.Cores)
	m["host_memory_mb"] = strconv.FormatInt(e.MemoryMB, 10)
	for k, v := range e.Sysctls {
		m["host_sysctl."+k] = v
	}
	e.NIC.record(m, "host_nic")
	// This machine's end of the path: the interface of the connection's
	// local address.
	if a, ok := d.c.client.LocalAddr().(*net.TCPAddr); ok {
		nicOf(a.IP.String()).record(m, "local_nic")
	}
	return m
}

// medianConnect is the median time of n TCP connects to addr: the round
// trip between this machine and the host (sshd's port answers the SYN
// itself; nothing of the service is touched).
func medianConnect(ctx context.Context, addr string, n int) (time.Duration, error) {
	var ds []time.Duration
	var d net.Dialer
	for i := 0; i < n; i++ {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		start := time.Now()
		c, err := d.DialContext(cctx, "tcp", addr)
		el := time.Since(start)
		cancel()
		if err != nil {
			return 0, err
		}
		c.Close()
		ds = append(ds, el)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

// Teardown stops the service's process group (SIGTERM, stop_timeout,
// SIGKILL), copies its output into the log folder, removes its folder
// (and the run folder with the trial's last service) and releases the
// connection.
func (d *Deployment) Teardown(ctx context.Context) error {
	d.teardown.Do(func() { d.teardownErr = d.stop(ctx) })
	return d.teardownErr
}

func (d *Deployment) stop(ctx context.Context) error {
	var errs []error
	if d.pid != 0 {
		r, err := d.c.call(ctx, &request{Op: opStop, PID: d.pid, StopMS: d.p.stopTimeout.Milliseconds()})
		if err != nil {
			errs = append(errs, fmt.Errorf("stopping service %q on %s: %w (the helper there stops it when it hears nothing for %s; or run benchflow gc)", d.name, d.p.t.Address, err, d.p.t.Idle))
		} else if len(r.Left) > 0 {
			errs = append(errs, fmt.Errorf("stopping service %q on %s: still running after SIGKILL: %s", d.name, d.p.t.Address, strings.Join(r.Left, ", ")))
		} else {
			d.logf("stopped %s on %s", d.name, d.p.t.Address)
		}
		d.copyLogs(ctx)
	}
	if d.used {
		d.p.mu.Lock()
		d.p.users--
		last := d.p.users == 0 && d.p.made
		if last {
			d.p.made = false
		}
		d.p.mu.Unlock()
		if last && d.c.err() == nil {
			if _, err := d.c.call(ctx, &request{Op: opRemove, Path: d.p.runDir}); err != nil {
				errs = append(errs, fmt.Errorf("removing %s on %s: %w", d.p.runDir, d.p.t.Address, err))
			}
		}
	}
	d.c.release()
	return errors.Join(errs...)
}

// copyLogs copies the service's output from the host into the log folder.
func (d *Deployment) copyLogs(ctx context.Context) {
	if d.logDir == "" || d.logPrefix == "" || d.c.err() != nil {
		return
	}
	for _, suffix := range []string{".stdout.log", ".stderr.log"} {
		r, err := d.c.call(ctx, &request{Op: opRead, Path: d.logPrefix + suffix})
		if err != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(d.logDir, fileName(d.name)+suffix), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			continue
		}
		f.Write(r.Data)
		f.Close()
	}
}

// fileName makes a service name safe as a file name.
func fileName(s string) string {
	if s == "" {
		return "service"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
