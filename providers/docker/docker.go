package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/providers"
)

// TypeName is the provider type name used in pipelines.
const TypeName = "docker"

// cleanupTimeout bounds the removal of what a failed or cancelled Provision
// created, on a context detached from the cancelled one.
const cleanupTimeout = 30 * time.Second

// Type is the docker provider type, registered in init.
var Type = providers.TypeOf(providers.Spec[Config]{
	Name:  TypeName,
	New:   newFromConfig,
	GC:    GC,
	Grant: Grant,
	Attrs: []string{"container_id", "container_name", "container_ip", "network"},
})

func init() { providers.Register(Type) }

var (
	_ providers.Provider        = (*Provider)(nil)
	_ providers.ListenPorter    = (*Provider)(nil)
	_ providers.ServiceDirer    = (*Provider)(nil)
	_ providers.Deployment      = (*Deployment)(nil)
	_ providers.Liveness        = (*Deployment)(nil)
	_ providers.ProcessReporter = (*Deployment)(nil)
)

// Provider runs services as containers of one Docker engine with one
// configuration (one `provider "docker" "<name>"` block).
type Provider struct {
	name string
	s    *settings

	mu  sync.Mutex
	cli *client.Client
	// The user network (Config.Network not bridge/host/none), shared by
	// every deployment of this provider and removed with the last one
	// when this provider created it.
	netRefs  int
	netID    string
	netOwned bool
}

// New builds a provider from a request whose Config is a decoded *Config
// (nil means all defaults): Type.New. It does not contact the engine.
func New(req *providers.NewRequest) (providers.Provider, error) { return Type.New(req) }

// newFromConfig builds a provider from a decoded config.
func newFromConfig(name string, cfg *Config) (providers.Provider, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, fmt.Errorf("configuring docker provider %q: %w", name, err)
	}
	return &Provider{name: name, s: s}, nil
}

// sshFlags are added to the ssh client's command line for an ssh:// host
// (tests name a key and a known_hosts file; users configure ~/.ssh/config).
var sshFlags []string

// newClient connects to host, or to the engine the environment names
// (DOCKER_HOST, DOCKER_API_VERSION, …) when host is empty.
//
// An ssh:// host goes through Docker's own SSH connection helper (the
// docker CLI's connhelper): it runs this machine's ssh client, which runs
// `docker system dial-stdio` on the host, so that host needs the docker
// CLI and this machine OpenSSH's ssh with a key that logs in.
func newClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if strings.HasPrefix(host, "ssh://") {
		h, err := connhelper.GetConnectionHelperWithSSHOpts(host, sshFlags)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", providers.ErrUnavailable, host, err)
		}
		opts = append(opts, client.WithHost(h.Host), client.WithDialContext(h.Dialer))
	} else if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: creating Docker client: %v", providers.ErrUnavailable, err)
	}
	return cli, nil
}

func (p *Provider) client() (*client.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cli == nil {
		cli, err := newClient(p.s.host)
		if err != nil {
			return nil, err
		}
		p.cli = cli
	}
	return p.cli, nil
}

// unavailable marks errors that mean the engine cannot be reached.
func unavailable(err error) error {
	if err != nil && client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%w: %v", providers.ErrUnavailable, err)
	}
	return err
}

// ListenPort is the port the service listens on inside the container: the
// host port with network = "host", else the container port (or the host
// port when the pipeline gave no container port).
func (p *Provider) ListenPort(port providers.Port) int {
	if p.s.network == NetworkHost || port.Container == 0 {
		return port.Host
	}
	return port.Container
}

// PicksHostPort: on a bridge network the engine publishes a container
// port on host port 0 and Docker picks a free one, read back after the
// start (no choose-then-bind race); with network = "host" the service
// binds the host port itself.
func (p *Provider) PicksHostPort(port providers.Port) bool {
	return p.s.network != NetworkHost && port.Container != 0
}

// ServiceDir is where the service's rendered files are mounted in the
// container (Config.FilesDir); self.dir in templates.
func (p *Provider) ServiceDir(service string) string { return p.s.filesDir }

// Provision pulls the image if the pull policy says so, creates the user
// network if needed, and creates and starts the container. It returns once
// the container runs; the engine then waits for health, calling Alive. On
// error, or when ctx is cancelled midway, everything it created is removed.
func (p *Provider) Provision(ctx context.Context, req *providers.ProvisionRequest) (providers.Deployment, error) {
	// Errors name the container or image; the engine adds the service
	// and provider names.
	d, err := p.provision(ctx, req)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// provision checks the service, pulls its image, and creates and starts
// its container: the network (acquireNetwork), the container's
// configuration (containerConfig), its published ports (publish), then
// create, start and inspect (start). On error, the deferred teardown
// removes whatever was created.
func (p *Provider) provision(ctx context.Context, req *providers.ProvisionRequest) (d *Deployment, err error) {
	spec := &req.Service
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if spec.Image == "" {
		return nil, errors.New("the docker provider needs an image (set image in the service block)")
	}
	if spec.Replicas > 1 {
		return nil, fmt.Errorf("replicas = %d: the docker provider runs one container per service (use k8s or nomad for replicas)", spec.Replicas)
	}
	if p.s.network == NetworkNone && len(spec.Ports) > 0 {
		return nil, fmt.Errorf("port %q cannot be reached: network = \"none\" gives the container no network", spec.Ports[0].Name)
	}
	cli, err := p.client()
	if err != nil {
		return nil, err
	}
	if err := p.ensureImage(ctx, cli, spec.Image, logf); err != nil {
		return nil, err
	}

	d = &Deployment{
		p:       p,
		cli:     cli,
		service: spec.Name,
		name:    containerName(req.RunID, req.TrialID, spec.Name),
		logDir:  req.LogDir,
		logTail: p.s.logTail,
		network: p.s.network,
		local:   isLocal(cli.DaemonHost()),
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			if terr := d.teardown(cctx, false); terr != nil {
				err = errors.Join(err, terr)
			}
		}
	}()

	if err := p.acquireNetwork(ctx, cli, req); err != nil {
		return d, err
	}
	d.netAcquired = p.isUserNetwork()

	cfg, hc, err := p.containerConfig(req)
	if err != nil {
		return d, err
	}
	if p.s.sshHost != "" {
		d.copies = fileCopies(spec, p.s.filesDir)
	}
	if err := d.publish(spec.Ports, cfg, hc); err != nil {
		return d, err
	}
	var nc *network.NetworkingConfig
	if d.netAcquired {
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			p.s.network: {Aliases: []string{spec.Name}},
		}}
	}
	if err := d.start(ctx, cfg, hc, nc, logf); err != nil {
		return d, err
	}
	if len(spec.Ports) > 0 {
		d.endpoint.Port = d.endpoint.Ports[spec.Ports[0].Name]
	}
	d.endpoint.Attrs = map[string]string{
		"container_id":   d.id,
		"container_name": d.name,
		"container_ip":   d.containerIP,
		"network":        p.s.network,
	}
	logf("docker: started %s (%.12s) at %s", d.name, d.id, d.endpoint.URL())
	return d, nil
}

// containerConfig is the container of req's service without its ports:
// image, command, environment, labels (the provider's and benchflow's),
// network mode, limits, and the mounts of the files folder and of each
// file with a mount path of its own.
func (p *Provider) containerConfig(req *providers.ProvisionRequest) (*container.Config, *container.HostConfig, error) {
	spec := &req.Service
	labels := map[string]string{}
	for k, v := range p.s.labels {
		labels[k] = v
	}
	labels[providers.LabelManaged] = "true"
	labels[providers.LabelRun] = req.RunID
	labels[providers.LabelTrial] = req.TrialID
	labels[providers.LabelService] = spec.Name
	providers.AddOwnerLabels(labels)

	cfg := &container.Config{
		Image:        spec.Image,
		Env:          envList(spec.Env),
		Labels:       labels,
		ExposedPorts: nat.PortSet{},
	}
	if len(spec.Command) > 0 {
		cfg.Cmd = spec.Command
	}
	hc := &container.HostConfig{
		NetworkMode:  container.NetworkMode(p.s.network),
		PortBindings: nat.PortMap{},
		Sysctls:      p.s.sysctls,
		Resources: container.Resources{
			NanoCPUs:   p.s.nanoCPUs,
			CpusetCpus: p.s.cpuset,
			Memory:     p.s.memory,
			Ulimits:    p.s.ulimits,
		},
	}
	if spec.Dir != "" {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: spec.Dir, Target: p.s.filesDir, ReadOnly: true})
	}
	if p.s.sshHost != "" {
		// A remote engine cannot see this machine's files: they are
		// copied into the container before it starts (copies).
		hc.Mounts = nil
	}
	for _, f := range spec.Files {
		if f.Mount == "" {
			continue
		}
		if !strings.HasPrefix(f.Mount, "/") {
			return nil, nil, fmt.Errorf("file %q: mount %q is not an absolute path", f.Name, f.Mount)
		}
		src := f.HostPath
		if src == "" {
			src = filepath.Join(spec.Dir, f.Name)
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: f.Mount, ReadOnly: true})
	}
	return cfg, hc, nil
}

// publish starts d's endpoint and publishes ports on the provider's bind
// address (a container port exposed and bound to the host port, or to
// one the engine picks when it is 0), or, with network = "host", records
// the host port the service listens on.
func (d *Deployment) publish(ports []providers.Port, cfg *container.Config, hc *container.HostConfig) error {
	s := d.p.s
	d.endpoint = providers.Endpoint{Scheme: "http", Host: reachableHost(s.bind), Ports: map[string]int{}}
	if s.network == NetworkHost {
		d.endpoint.Host = "127.0.0.1"
	}
	if s.sshHost != "" {
		// The engine runs on the host of its ssh:// address: its ports
		// are reached there (or at bind, when that names an address).
		if a, err := netip.ParseAddr(s.bind); s.network == NetworkHost || err != nil || a.IsUnspecified() || a.IsLoopback() {
			d.endpoint.Host = s.sshHost
		}
	}
	for _, port := range ports {
		if port.Host < 0 || port.Host > 65535 || port.Container < 0 || port.Container > 65535 {
			return fmt.Errorf("port %q: %d/%d is out of range", port.Name, port.Host, port.Container)
		}
		switch s.network {
		case NetworkHost:
			n := port.Host
			if n == 0 {
				n = port.Container
			}
			if n == 0 {
				return fmt.Errorf("port %q has no number: with network = \"host\" the service listens on the host port", port.Name)
			}
			d.endpoint.Ports[port.Name] = n
		default:
			cport := port.Container
			if cport == 0 {
				cport = port.Host
			}
			if cport == 0 {
				return fmt.Errorf("port %q has neither a container nor a host port", port.Name)
			}
			key := nat.Port(strconv.Itoa(cport) + "/tcp")
			cfg.ExposedPorts[key] = struct{}{}
			hp := ""
			if port.Host != 0 {
				hp = strconv.Itoa(port.Host)
			}
			hc.PortBindings[key] = append(hc.PortBindings[key], nat.PortBinding{HostIP: s.bind, HostPort: hp})
			d.published = append(d.published, publishedPort{name: port.Name, container: key, host: port.Host})
		}
	}
	return nil
}

// start creates and starts the container, then reads back what the engine
// chose: the init pid, the container's IP and the host ports it published.
func (d *Deployment) start(ctx context.Context, cfg *container.Config, hc *container.HostConfig, nc *network.NetworkingConfig, logf func(string, ...any)) error {
	logf("docker: creating container %s from %s (network %s)", d.name, cfg.Image, d.network)
	// Created on a context that a Ctrl-C does not cut short, so the id of
	// what the engine created is always known and the deferred cleanup
	// removes it; the cancellation is honoured right after.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	created, err := d.cli.ContainerCreate(cctx, cfg, hc, nc, nil, d.name)
	cancel()
	if err != nil {
		return fmt.Errorf("creating container %s: %w", d.name, unavailable(err))
	}
	d.id = created.ID
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.copyFiles(ctx); err != nil {
		return err
	}
	for _, w := range created.Warnings {
		logf("docker: %s: %s", d.name, w)
	}
	if err := d.cli.ContainerStart(ctx, d.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("starting container %s: %w%s", d.name, unavailable(err), d.tailNote(ctx))
	}
	info, err := d.cli.ContainerInspect(ctx, d.id)
	if err != nil {
		return fmt.Errorf("inspecting container %s: %w", d.name, unavailable(err))
	}
	if err := d.exitError(ctx, info); err != nil {
		return err
	}
	if info.State != nil {
		d.initPID = info.State.Pid
	}
	d.mounts = rootfsDirs(info.GraphDriver.Data)
	if info.NetworkSettings == nil {
		return nil
	}
	for _, ep := range info.NetworkSettings.Networks {
		if ep != nil && ep.IPAddress != "" {
			d.containerIP = ep.IPAddress
			break
		}
	}
	for i, pp := range d.published {
		for _, b := range info.NetworkSettings.Ports[pp.container] {
			if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
				d.published[i].host = n
				break
			}
		}
		if d.published[i].host == 0 {
			return fmt.Errorf("port %q: the engine published %s on no host port", pp.name, pp.container)
		}
		d.endpoint.Ports[pp.name] = d.published[i].host
	}
	return nil
}

// ensureImage applies the pull policy to ref.
func (p *Provider) ensureImage(ctx context.Context, cli *client.Client, ref string, logf func(string, ...any)) error {
	_, err := cli.ImageInspect(ctx, ref)
	present := err == nil
	if err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("inspecting image %q: %w", ref, unavailable(err))
	}
	switch {
	case p.s.pull == PullNever && !present:
		return fmt.Errorf("image %q is not on the engine and pull = \"never\" (build it locally, e.g. `make images` for benchflow/*:local, or set pull = \"missing\")", ref)
	case p.s.pull == PullNever, p.s.pull == PullMissing && present:
		return nil
	}
	logf("docker: pulling %s", ref)
	rc, err := cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pulling image %q (pull = %q): %w", ref, p.s.pull, unavailable(err))
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("pulling image %q: reading progress: %w", ref, err)
		}
		if m.Error != nil {
			return fmt.Errorf("pulling image %q (pull = %q): %s", ref, p.s.pull, m.Error.Message)
		}
	}
	return nil
}

func (p *Provider) isUserNetwork() bool {
	n := p.s.network
	return n != NetworkBridge && n != NetworkHost && n != NetworkNone
}

// acquireNetwork creates the user network on first use (or adopts one that
// already exists, which is then left in place).
func (p *Provider) acquireNetwork(ctx context.Context, cli *client.Client, req *providers.ProvisionRequest) error {
	if !p.isUserNetwork() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.netRefs > 0 {
		p.netRefs++
		return nil
	}
	list, err := cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("name", p.s.network))})
	if err != nil {
		return fmt.Errorf("listing networks: %w", unavailable(err))
	}
	for _, n := range list {
		if n.Name == p.s.network {
			p.netID, p.netOwned, p.netRefs = n.ID, false, 1
			return nil
		}
	}
	labels := map[string]string{}
	for k, v := range p.s.labels {
		labels[k] = v
	}
	labels[providers.LabelManaged] = "true"
	labels[providers.LabelRun] = req.RunID
	providers.AddOwnerLabels(labels)
	// As with containers: created on a context a Ctrl-C does not cut
	// short, then removed at once if ctx ended meanwhile.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	created, err := cli.NetworkCreate(cctx, p.s.network, network.CreateOptions{Driver: "bridge", Labels: labels})
	if err != nil {
		return fmt.Errorf("creating network %q: %w", p.s.network, unavailable(err))
	}
	if err := ctx.Err(); err != nil {
		if rerr := cli.NetworkRemove(cctx, created.ID); rerr != nil {
			return errors.Join(err, fmt.Errorf("removing network %q: %w", p.s.network, rerr))
		}
		return err
	}
	p.netID, p.netOwned, p.netRefs = created.ID, true, 1
	return nil
}

// releaseNetwork drops one reference and removes the network with the last
// one when this provider created it.
func (p *Provider) releaseNetwork(ctx context.Context, cli *client.Client) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.netRefs == 0 {
		return nil
	}
	p.netRefs--
	if p.netRefs > 0 || !p.netOwned {
		return nil
	}
	id := p.netID
	p.netID, p.netOwned = "", false
	if err := cli.NetworkRemove(ctx, id); err != nil && !client.IsErrNotFound(err) {
		return fmt.Errorf("removing network %q: %w", p.s.network, err)
	}
	return nil
}

type publishedPort struct {
	name      string
	container nat.Port
	host      int
}

// Deployment is one running container.
type Deployment struct {
	p           *Provider
	cli         *client.Client
	service     string
	id          string // container id ("" before create)
	name        string
	network     string
	netAcquired bool
	local       bool       // the engine runs on this machine (its pids are ours)
	copies      []fileCopy // files copied in before the start (a remote engine)
	containerIP string
	published   []publishedPort
	endpoint    providers.Endpoint
	logDir      string
	logTail     string

	once    sync.Once
	downErr error

	initPID   int // host pid of the container's first process
	procMu    sync.Mutex
	procsFile string              // the container's cgroup.procs, once found
	infra     []providers.Process // docker-proxy, dockerd, shim, once found
	mounts    []string            // host dirs of its root filesystem (GraphDriver)
}

var _ providers.ContainerReporter = (*Deployment)(nil)
var _ providers.HostPortPicker = (*Provider)(nil)

// Containers reports the container with its address, published ports
// and root filesystem directories, by which the machine accounting tells
// this run's docker-proxy, containerd-shim and fuse-overlayfs from
// another's.
func (d *Deployment) Containers() []providers.Container {
	if d.id == "" {
		return nil
	}
	c := providers.Container{ID: d.id, IP: d.containerIP, Mounts: append([]string(nil), d.mounts...)}
	for _, p := range d.published {
		if p.host != 0 {
			c.Ports = append(c.Ports, providers.ContainerPort{Host: p.host, Container: p.container.Int()})
		}
	}
	return []providers.Container{c}
}

// rootfsDirs picks the directories of a container's root filesystem out
// of the engine's GraphDriver data (MergedDir, UpperDir, WorkDir of
// overlay2 and fuse-overlayfs): the mount point a FUSE driver serves.
func rootfsDirs(data map[string]string) []string {
	var out []string
	for _, k := range []string{"MergedDir", "UpperDir", "WorkDir"} {
		if v := data[k]; v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Endpoint is where the service answers from the host: the bind address (or
// 127.0.0.1) and the published (bridge) or listening (host) port.
func (d *Deployment) Endpoint() providers.Endpoint { return d.endpoint }

// ContainerID is the id of the container.
func (d *Deployment) ContainerID() string { return d.id }

// ContainerName is the name of the container: bf-<run>-<trial>-<service>.
func (d *Deployment) ContainerName() string { return d.name }

// Teardown saves the container's logs to the log directory, removes the
// container (and its anonymous volumes) and releases the user network. Only
// the first call does anything.
func (d *Deployment) Teardown(ctx context.Context) error {
	d.once.Do(func() { d.downErr = d.teardown(ctx, true) })
	return d.downErr
}

func (d *Deployment) teardown(ctx context.Context, saveLogs bool) error {
	var errs []error
	if d.id != "" {
		if d.logDir != "" {
			if err := d.saveLogs(ctx); err != nil && (saveLogs || !client.IsErrNotFound(err)) {
				errs = append(errs, err)
			}
		}
		err := d.cli.ContainerRemove(ctx, d.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", d.name, err))
		}
	}
	if d.netAcquired {
		d.netAcquired = false
		if err := d.p.releaseNetwork(ctx, d.cli); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tearing down %q: %w", d.service, err)
	}
	return nil
}

// saveLogs writes the last LogTail lines of the container's output, stdout
// and stderr interleaved with timestamps, to LogDir/<service>.log (through
// a temporary file renamed into place).
func (d *Deployment) saveLogs(ctx context.Context) error {
	rc, err := d.cli.ContainerLogs(ctx, d.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Tail: d.logTail})
	if err != nil {
		return fmt.Errorf("reading logs of %s: %w", d.name, err)
	}
	defer rc.Close()
	if err := os.MkdirAll(d.logDir, 0o755); err != nil {
		return fmt.Errorf("saving logs of %s: %w", d.name, err)
	}
	dst := filepath.Join(d.logDir, d.service+".log")
	// The temporary file is recorded before it is made (gc removes a
	// killed run's).
	err = scratch.Machine().WriteFile(dst, 0o600, func(f *os.File) error {
		_, err := stdcopy.StdCopy(f, f, rc)
		return err
	})
	if err != nil {
		return fmt.Errorf("saving logs of %s: %w", d.name, err)
	}
	return nil
}

// Alive returns nil while the container runs, and an error quoting its exit
// code and last log lines once it stopped.
func (d *Deployment) Alive(ctx context.Context) error {
	info, err := d.cli.ContainerInspect(ctx, d.id)
	if err != nil {
		if client.IsErrNotFound(err) {
			return fmt.Errorf("container %s of %q is gone", d.name, d.service)
		}
		return fmt.Errorf("inspecting container %s: %w", d.name, unavailable(err))
	}
	return d.exitError(ctx, info)
}

// exitError describes a container that is not running, or returns nil.
func (d *Deployment) exitError(ctx context.Context, info container.InspectResponse) error {
	st := info.State
	if st == nil || st.Running || st.Restarting {
		return nil
	}
	msg := fmt.Sprintf("container %s of %q is %s with exit code %d", d.name, d.service, st.Status, st.ExitCode)
	if st.OOMKilled {
		msg += " (killed: out of memory)"
	}
	if st.Error != "" {
		msg += ": " + st.Error
	}
	return errors.New(msg + d.tailNote(ctx))
}

// lastLogLines is how many lines of output an error quotes.
const lastLogLines = 20

// tailNote returns the container's last log lines formatted for an error,
// or "" when there are none.
func (d *Deployment) tailNote(ctx context.Context) string {
	if d.id == "" {
		return ""
	}
	rc, err := d.cli.ContainerLogs(ctx, d.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(lastLogLines)})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, io.LimitReader(rc, 64<<10)); err != nil && buf.Len() == 0 {
		return ""
	}
	out := strings.TrimRight(buf.String(), "\n")
	if out == "" {
		return "; the container wrote no output"
	}
	return "; last output lines:\n" + out
}

// containerName builds a valid, unique container name.
func containerName(runID, trialID, service string) string {
	parts := []string{"bf"}
	for _, s := range []string{runID, trialID, service} {
		if s = sanitize(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "-")
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	// Deterministic order for inspection and tests.
	sortStrings(out)
	return out
}

// reachableHost turns a bind address into one the host can connect to.
func reachableHost(bind string) string {
	a, err := netip.ParseAddr(bind)
	switch {
	case err != nil:
		return "127.0.0.1"
	case a.IsUnspecified() && a.Is4():
		return "127.0.0.1"
	case a.IsUnspecified():
		return "::1"
	}
	return bind
}

// isLocal reports whether the engine at host runs on this machine, so its
// pids are this machine's pids.
func isLocal(host string) bool {
	return host == "" || strings.HasPrefix(host, "unix://")
}

// fileCopy is a file or folder of this machine copied into the container
// (a remote engine cannot bind-mount it).
type fileCopy struct{ src, dst string }

// fileCopies are the files folder and the files with a mount path of
// their own, as containerConfig would mount them.
func fileCopies(spec *providers.ServiceSpec, filesDir string) []fileCopy {
	var out []fileCopy
	if spec.Dir != "" {
		out = append(out, fileCopy{spec.Dir, filesDir})
	}
	for _, f := range spec.Files {
		if f.Mount == "" {
			continue
		}
		src := f.HostPath
		if src == "" {
			src = filepath.Join(spec.Dir, f.Name)
		}
		out = append(out, fileCopy{src, f.Mount})
	}
	return out
}

// copyFiles copies d.copies into the created container, as one tar
// archive extracted at "/" (with their modes; owned by root).
func (d *Deployment) copyFiles(ctx context.Context) error {
	if len(d.copies) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, c := range d.copies {
		err := filepath.WalkDir(c.src, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(c.src, p)
			name := strings.TrimPrefix(filepath.ToSlash(filepath.Join(c.dst, rel)), "/")
			switch {
			case info.IsDir():
				return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(info.Mode().Perm()), ModTime: info.ModTime()})
			case info.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(info.Mode().Perm()), Size: int64(len(b)), ModTime: info.ModTime()}); err != nil {
					return err
				}
				_, err = tw.Write(b)
				return err
			}
			return nil // sockets, links: not files a service reads
		})
		if err != nil {
			return fmt.Errorf("copying %s into container %s: %w", c.src, d.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := d.cli.CopyToContainer(ctx, d.id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("copying the service's files into container %s on %s: %w", d.name, d.p.s.host, unavailable(err))
	}
	return nil
}
