package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/benchflow/benchflow/engine/units"
	"github.com/benchflow/benchflow/providers"
)

// DefaultStopTimeout is how long Teardown waits after SIGTERM before it
// sends SIGKILL, when the provider block sets no stop_timeout.
const DefaultStopTimeout = 5 * time.Second

// Environment variables set on every service process, in addition to its
// own environment. GC finds leftovers of a crashed run by them.
const (
	EnvRun     = "BENCHFLOW_RUN"
	EnvTrial   = "BENCHFLOW_TRIAL"
	EnvService = "BENCHFLOW_SERVICE"
	// EnvOwner identifies the benchflow process that started the service
	// ("pid:start time"), so GC can tell a crashed run from a live one.
	EnvOwner = "BENCHFLOW_OWNER"
)

// Type is the local provider type, registered in init.
var Type = providers.TypeOf(providers.Spec[Config]{
	Name: "local",
	New: func(name string, c *Config) (providers.Provider, error) {
		return New(name, *c)
	},
	Attrs:  []string{"pid"},
	GC:     GC,
	Agents: true,
})

func init() { providers.Register(Type) }

// Config is the body of a `provider "local" "<name>"` block. Every
// attribute is optional.
type Config struct {
	// WorkDir is the working directory of every service's process; when
	// empty it is the service's folder (where its files were rendered).
	WorkDir string `hcl:"work_dir,optional"`
	// EnvInherit starts the process environment from benchflow's own
	// (default true); with false it holds only the service's env and the
	// BENCHFLOW_* variables.
	EnvInherit *bool `hcl:"env_inherit,optional"`
	// StopTimeout is how long Teardown waits after SIGTERM before SIGKILL,
	// a Go duration ("5s", "500ms"); default DefaultStopTimeout.
	StopTimeout string `hcl:"stop_timeout,optional"`
}

// Local runs services as child processes.
type Local struct {
	name        string
	workDir     string
	envInherit  bool
	stopTimeout time.Duration
}

var (
	_ providers.Provider        = (*Local)(nil)
	_ providers.Deployment      = (*Deployment)(nil)
	_ providers.Liveness        = (*Deployment)(nil)
	_ providers.ProcessReporter = (*Deployment)(nil)
)

// Validate checks c as New will (providers.Validator): each problem is a
// *providers.ConfigError naming the attribute, so the engine reports it
// at its place in the file. work_dir must exist on this machine.
func (c *Config) Validate() error {
	_, err := c.stopTimeout()
	return errors.Join(err, c.checkWorkDir())
}

// stopTimeout is c.StopTimeout parsed, DefaultStopTimeout when unset.
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

// checkWorkDir checks that c.WorkDir, when set, is a directory.
func (c *Config) checkWorkDir() error {
	if c.WorkDir == "" {
		return nil
	}
	st, err := os.Stat(c.WorkDir)
	if err != nil {
		return &providers.ConfigError{Attr: "work_dir", Msg: err.Error()}
	}
	if !st.IsDir() {
		return &providers.ConfigError{Attr: "work_dir", Msg: fmt.Sprintf("%q is not a directory", c.WorkDir)}
	}
	return nil
}

// New builds the provider named name from a decoded config, with the
// checks of Validate.
func New(name string, cfg Config) (*Local, error) {
	l := &Local{name: name, workDir: cfg.WorkDir, envInherit: true}
	if cfg.EnvInherit != nil {
		l.envInherit = *cfg.EnvInherit
	}
	var err error
	if l.stopTimeout, err = cfg.stopTimeout(); err != nil {
		return nil, fmt.Errorf("local provider %q: %w", name, err)
	}
	if err := cfg.checkWorkDir(); err != nil {
		return nil, fmt.Errorf("local provider %q: %w", name, err)
	}
	return l, nil
}

// Provision starts req.Service.Command (an argv, run without a shell) in a
// process group of its own and returns once the process has started; the
// engine then waits for health, asking Alive whether the process died.
func (l *Local) Provision(ctx context.Context, req *providers.ProvisionRequest) (providers.Deployment, error) {
	spec := req.Service
	name := spec.Name
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting service %q: %w", name, err)
	}
	if (len(spec.Command) == 0 || spec.Command[0] == "") && spec.Image != "" {
		return nil, fmt.Errorf("starting service %q: no command: the local provider runs a command on this host, and image %q is only used by container providers (docker, k8s, nomad); set command = [\"program\", \"arg\", …]", name, spec.Image)
	}
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return nil, fmt.Errorf("starting service %q: no command: the local provider runs the service's command as a process on this host; set command = [\"program\", \"arg\", …]", name)
	}
	if spec.Replicas > 1 {
		return nil, fmt.Errorf("starting service %q: replicas = %d: the local provider runs one process per service", name, spec.Replicas)
	}
	d := &Deployment{
		name:        name,
		stopTimeout: l.stopTimeout,
		logf:        req.Logf,
		done:        make(chan struct{}),
	}
	if d.logf == nil {
		d.logf = func(string, ...any) {}
	}
	d.endpoint = providers.Endpoint{Scheme: "http", Host: "127.0.0.1", Ports: map[string]int{}}
	for i, p := range spec.Ports {
		if i == 0 {
			d.endpoint.Port = p.Host
		}
		if p.Name != "" {
			d.endpoint.Ports[p.Name] = p.Host
		}
	}

	dir := spec.Dir
	if l.workDir != "" {
		dir = l.workDir
	}
	if dir != "" {
		// Checked here: the kernel would report a missing folder as a
		// missing program.
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("starting service %q: working directory: %w", name, err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("starting service %q: working directory %q is not a directory", name, dir)
		}
	}
	env := l.environ(req)
	path, err := lookPath(spec.Command[0], env)
	if err != nil {
		return nil, fmt.Errorf("starting service %q: %w", name, err)
	}
	logDir := req.LogDir
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "benchflow-local-"); err != nil {
			return nil, fmt.Errorf("starting service %q: creating a log folder: %w", name, err)
		}
		d.tmpLogDir = logDir
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("starting service %q: creating the log folder: %w", name, err)
	}
	stdout, err := d.openLog(&d.stdout, logDir, ".stdout.log")
	if err != nil {
		d.removeTmp()
		return nil, fmt.Errorf("starting service %q: %w", name, err)
	}
	defer stdout.Close()
	stderr, err := d.openLog(&d.stderr, logDir, ".stderr.log")
	if err != nil {
		d.removeTmp()
		return nil, fmt.Errorf("starting service %q: %w", name, err)
	}
	defer stderr.Close()

	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string(nil), spec.Command...),
		Env:    env,
		Dir:    dir,
		Stdout: stdout,
		Stderr: stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	started := make(chan error, 1)
	go d.run(cmd, started)
	if err := <-started; err != nil {
		d.removeTmp()
		return nil, fmt.Errorf("starting service %q: %w", name, err)
	}
	d.cmd = cmd
	d.pid = cmd.Process.Pid
	d.endpoint.Attrs = map[string]string{"pid": strconv.Itoa(d.pid)}
	d.logf("started %s: pid %d: %s", name, d.pid, strings.Join(spec.Command, " "))
	return d, nil
}

// run starts cmd and waits for it on a goroutine locked to its OS thread:
// Pdeathsig fires when the thread that forked the child exits, and the Go
// runtime may end an unlocked thread at any time (golang/go#27505).
func (d *Deployment) run(cmd *exec.Cmd, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		started <- err
		return
	}
	started <- nil
	d.waitErr = cmd.Wait()
	d.state = cmd.ProcessState
	close(d.done)
}

// environ is the process environment: benchflow's own (when inherited),
// then the service's env in sorted order, then the BENCHFLOW_* markers.
// Later entries win.
func (l *Local) environ(req *providers.ProvisionRequest) []string {
	var env []string
	if l.envInherit {
		env = os.Environ()
	}
	keys := make([]string, 0, len(req.Service.Env))
	for k := range req.Service.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+req.Service.Env[k])
	}
	return append(env, EnvRun+"="+req.RunID, EnvTrial+"="+req.TrialID, EnvService+"="+req.Service.Name, EnvOwner+"="+owner)
}

// lookPath resolves a command name without a slash along the PATH of the
// process environment (the service may set its own PATH), with the error
// exec.Command gives: exec: "ngnix": executable file not found in $PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil // absolute, or relative to the working directory
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			if !filepath.IsAbs(p) {
				if abs, err := filepath.Abs(p); err == nil {
					p = abs
				}
			}
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}
