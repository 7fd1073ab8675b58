package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// A collect step samples every ssh host the trial runs on (its services'
// hosts, and the hosts of the agents of the load it watches) the way it
// samples this machine: the helper on the host runs the same sampler
// (engine/collect) on the host's /proc from collect_start to
// collect_stop, and returns the rows, the CPU budget and the quiet check
// in collect_stop's answer. Nothing crosses the link while the load runs
// but the keepalive ping.

// collectSpec is the part of a collect.Config that travels to the host.
type collectSpec struct {
	Step          string        `json:"step"`
	Interval      time.Duration `json:"interval"`
	Names         []string      `json:"names,omitempty"`
	System        bool          `json:"system,omitempty"`
	Network       bool          `json:"network,omitempty"`
	Machine       bool          `json:"machine,omitempty"`
	Threshold     float64       `json:"threshold,omitempty"`
	Quiet         time.Duration `json:"quiet,omitempty"`
	BusyThreshold float64       `json:"busy_threshold,omitempty"`
	InfraNames    []string      `json:"infra_names,omitempty"`
	Host          string        `json:"host"`
	// Run is the run whose processes (those the helper started with its
	// BENCHFLOW_RUN) are the run's on the host: services, and agents
	// (BENCHFLOW_SERVICE agent-…) as the loader.
	Run string `json:"run"`
	// Foreign are processes of the run on other hosts that share this
	// host's kernel (providers.Process.Host).
	Foreign []providers.Process `json:"foreign,omitempty"`
	// PageRows is the rows of each kind per collect_stop answer.
	PageRows int `json:"page_rows"`
}

// collected is what collect_stop returns.
type collected struct {
	Processes []results.ProcessSample `json:"processes,omitempty"`
	System    []results.SystemSample  `json:"system,omitempty"`
	Network   []results.NetSample     `json:"network,omitempty"`
	Budget    *results.CPUBudget      `json:"budget,omitempty"`
	Quiet     *results.QuietCheck     `json:"quiet,omitempty"`
	Procs     []collect.ProcCPU       `json:"procs,omitempty"`
	Cores     int                     `json:"cores"`
	// More says rows are left: ask again with Offset the rows' count so
	// far (an answer stays well under the controller's line limit).
	More bool `json:"more,omitempty"`
}

// pageRows bounds the rows of each kind in one collect_stop answer: a
// few MB of JSON, under the 16 MiB line the controller reads.
var pageRows = 20000

// sampling is one sampler running in the helper.
type sampling struct {
	s      *collect.Sampler
	cancel context.CancelFunc
	res    *collected // once stopped: everything, handed out in pages
	page   int        // rows of each kind per answer
}

// collectStart starts a sampler of this host for spec.
func (h *helper) collectStart(ctx context.Context, spec *collectSpec) (int, error) {
	if spec == nil {
		return 0, errors.New("collect_start: no collect step")
	}
	run := spec.Run
	procs := func(context.Context) []providers.Process {
		h.mu.Lock()
		var leaders []*child
		var pids []int
		for pid, c := range h.procs {
			select {
			case <-c.done:
				continue
			default:
			}
			if c.run == run {
				leaders = append(leaders, c)
				pids = append(pids, pid)
			}
		}
		h.mu.Unlock()
		out := append([]providers.Process(nil), spec.Foreign...)
		for i, c := range leaders {
			role := collect.RoleService
			if strings.HasPrefix(c.service, "agent-") {
				role = collect.RoleLoader
			}
			for _, p := range groupOf(pids[i]) {
				out = append(out, providers.Process{PID: p.pid, Name: p.comm, Role: role})
			}
		}
		return out
	}
	cfg := collect.Config{
		Step: spec.Step, Interval: spec.Interval, Names: spec.Names, Procs: procs,
		System: spec.System, Network: spec.Network, Machine: spec.Machine, Threshold: spec.Threshold,
		InfraNames: spec.InfraNames, Quiet: spec.Quiet, BusyThreshold: spec.BusyThreshold,
		Host: spec.Host, Helper: true,
	}
	if cfg.Quiet > 0 {
		cfg.RunProcs = procs
	}
	// The sampler outlives this request: it ends with collect_stop, or
	// with the helper.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s, err := collect.Start(sctx, cfg)
	if err != nil {
		cancel()
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.samplers == nil {
		h.samplers = map[int]*sampling{}
	}
	h.nextSamp++
	page := spec.PageRows
	if page <= 0 {
		page = pageRows
	}
	h.samplers[h.nextSamp] = &sampling{s: s, cancel: cancel, page: page}
	return h.nextSamp, nil
}

// collectStop ends sampler id and returns what it sampled from row
// offset on, at most pageRows rows of each kind; the sampler is
// forgotten with its last page.
func (h *helper) collectStop(id, offset int) (*collected, error) {
	h.mu.Lock()
	sp := h.samplers[id]
	h.mu.Unlock()
	if sp == nil {
		return nil, fmt.Errorf("no sampler %d here", id)
	}
	if sp.res == nil {
		ps, ss, ns := sp.s.Stop()
		sp.cancel()
		c := &collected{Processes: ps, System: ss, Network: ns, Cores: runtime.NumCPU()}
		if ex := sp.s.Explain(); ex != nil {
			c.Budget, c.Quiet, c.Procs = ex.Budget, ex.Quiet, ex.Procs
		}
		sp.res = c
	}
	all := sp.res
	n := sp.page
	page := &collected{Cores: all.Cores, Processes: window(all.Processes, offset, n), System: window(all.System, offset, n), Network: window(all.Network, offset, n)}
	if offset == 0 {
		page.Budget, page.Quiet, page.Procs = all.Budget, all.Quiet, all.Procs
	}
	end := offset + n
	page.More = end < len(all.Processes) || end < len(all.System) || end < len(all.Network)
	if !page.More {
		h.mu.Lock()
		delete(h.samplers, id)
		h.mu.Unlock()
	}
	return page, nil
}

// window is rows[offset:offset+n], clipped.
func window[T any](rows []T, offset, n int) []T {
	if offset >= len(rows) {
		return nil
	}
	return rows[offset:min(len(rows), offset+n)]
}

// stopSamplers ends every sampler (the helper is ending).
func (h *helper) stopSamplers() {
	h.mu.Lock()
	sps := h.samplers
	h.samplers = nil
	h.mu.Unlock()
	for _, sp := range sps {
		if sp.res == nil {
			sp.s.Stop()
			sp.cancel()
		}
	}
}

// bootID is this kernel's boot id, or "".
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// The controller's side.

var (
	_ collect.HostSampler = (*Deployment)(nil)
	_ collect.HostSampler = (*Provider)(nil)
)

// SampledHosts is the service's host: its address, as the host column
// names it.
func (d *Deployment) SampledHosts() []string { return []string{d.p.t.Address} }

// SampleHost starts sampling the service's host for a collect step.
func (d *Deployment) SampleHost(ctx context.Context, host string, cfg collect.Config, run string, foreign []providers.Process) (collect.HostRun, error) {
	return d.p.sampleHost(ctx, cfg, run, foreign)
}

// SampledHosts are the hosts the provider's agents run on (addresses,
// or address).
func (p *Provider) SampledHosts() []string {
	if len(p.cfg.Addresses) > 0 {
		return append([]string(nil), p.cfg.Addresses...)
	}
	return []string{p.t.Address}
}

// SampleHost starts sampling one of the agents' hosts for a collect step.
func (p *Provider) SampleHost(ctx context.Context, host string, cfg collect.Config, run string, foreign []providers.Process) (collect.HostRun, error) {
	if host == p.t.Address {
		return p.sampleHost(ctx, cfg, run, foreign)
	}
	c := p.cfg
	c.Address, c.Addresses = host, nil
	hp, err := New(p.name, c)
	if err != nil {
		return nil, err
	}
	return hp.sampleHost(ctx, cfg, run, foreign)
}

func (p *Provider) sampleHost(ctx context.Context, cfg collect.Config, run string, foreign []providers.Process) (collect.HostRun, error) {
	c, err := acquire(ctx, p.t)
	if err != nil {
		return nil, err
	}
	spec := &collectSpec{Step: cfg.Step, Interval: cfg.Interval, Names: cfg.Names, System: cfg.System, Network: cfg.Network,
		Machine: cfg.Machine, Threshold: cfg.Threshold, Quiet: cfg.Quiet, BusyThreshold: cfg.BusyThreshold,
		InfraNames: cfg.InfraNames, Host: p.t.Address, Run: run, PageRows: pageRows}
	if c.sameKernel() {
		spec.Foreign = foreign
	}
	// The quiet check runs before the answer.
	r, err := c.callWithin(ctx, &request{Op: opCollectStart, Collect: spec}, pingTimeout+cfg.Quiet)
	if err != nil {
		c.release()
		return nil, fmt.Errorf("collect %q on %s: %w", cfg.Step, p.t.Address, err)
	}
	return &hostRun{c: c, id: r.Sampler, host: p.t.Address, step: cfg.Step, page: spec.PageRows}, nil
}

// hostRun is a sampler running on a host.
type hostRun struct {
	c    *conn
	id   int
	host string
	step string
	page int // rows of each kind per answer
	once sync.Once
	res  *collect.HostResult
	err  error
}

// Stop ends the sampler on the host and returns what it sampled.
func (r *hostRun) Stop(ctx context.Context) (*collect.HostResult, error) {
	r.once.Do(func() {
		defer r.c.release()
		var got *collected
		for offset := 0; ; offset += r.page {
			resp, err := r.c.call(ctx, &request{Op: opCollectStop, Sampler: r.id, Offset: offset})
			if err != nil {
				r.err = fmt.Errorf("collect %q on %s: %w", r.step, r.host, err)
				return
			}
			page := resp.Collected
			if page == nil {
				r.err = fmt.Errorf("collect %q on %s: the helper returned nothing", r.step, r.host)
				return
			}
			if got == nil {
				got = page
			} else {
				got.Processes = append(got.Processes, page.Processes...)
				got.System = append(got.System, page.System...)
				got.Network = append(got.Network, page.Network...)
			}
			if !page.More {
				break
			}
		}
		hr := &collect.HostResult{Host: r.host, Cores: got.Cores, Processes: got.Processes, System: got.System, Network: got.Network,
			SharesKernel: r.c.sameKernel()}
		if got.Budget != nil || got.Quiet != nil {
			hr.Explanation = &collect.Explanation{Budget: got.Budget, Quiet: got.Quiet, Procs: got.Procs}
		}
		r.res = hr
	})
	return r.res, r.err
}

// Processes reports the service's processes only when its host shares
// this machine's kernel (sshtest's hosts, a container here): then this
// machine's collect sees them, and must count them as the run's, with
// Host set so it leaves their rows to the host's own sampler. Asked once
// (a service keeps its processes), so the load window carries no request.
func (d *Deployment) Processes(ctx context.Context) ([]providers.Process, error) {
	if d.pid == 0 || !d.c.sameKernel() {
		return nil, nil
	}
	d.procsOnce.Do(func() {
		r, err := d.c.call(ctx, &request{Op: opProcs, PID: d.pid})
		if err != nil {
			return
		}
		for _, p := range r.Procs {
			d.procs = append(d.procs, providers.Process{PID: p.PID, Name: p.Comm, Role: collect.RoleService, Host: d.p.t.Address})
		}
	})
	return d.procs, nil
}

// sameKernel reports a host that runs on this machine's kernel.
func (c *conn) sameKernel() bool {
	if c.hello == nil || c.hello.BootID == "" {
		return false
	}
	return c.hello.BootID == bootID()
}

// nicInfo is the network interface that holds an address: the NIC that
// carries the traffic between two hosts.
type nicInfo struct {
	Name      string
	Driver    string // ethtool's driver (veth, virtio_net, mlx5_core, …)
	SpeedMbps int64  // /sys/class/net/<if>/speed; 0 when unreadable (veth, down)
	MTU       int64
}

// nicOf finds the interface holding ip on this machine, with what
// /sys/class/net and ethtool say of it; nil when none holds it.
func nicOf(ip string) *nicInfo {
	want := net.ParseIP(ip)
	if want == nil {
		return nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(want) {
				return describeNIC(i.Name, int64(i.MTU))
			}
		}
	}
	return nil
}

func describeNIC(name string, mtu int64) *nicInfo {
	n := &nicInfo{Name: name, MTU: mtu}
	dir := filepath.Join("/sys/class/net", name)
	if b, err := os.ReadFile(filepath.Join(dir, "speed")); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 {
			n.SpeedMbps = v
		}
	}
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		if d, err := unix.IoctlGetEthtoolDrvinfo(fd, name); err == nil {
			n.Driver = unix.ByteSliceToString(d.Driver[:])
		}
		unix.Close(fd)
	}
	if n.Driver == "" {
		if l, err := os.Readlink(filepath.Join(dir, "device", "driver")); err == nil {
			n.Driver = filepath.Base(l)
		}
	}
	return n
}

// record adds the NIC to a manifest's versions under prefix ("host_nic").
func (n *nicInfo) record(m map[string]string, prefix string) {
	if n == nil {
		return
	}
	m[prefix] = n.Name
	if n.Driver != "" {
		m[prefix+"_driver"] = n.Driver
	}
	if n.SpeedMbps > 0 {
		m[prefix+"_speed_mbps"] = strconv.FormatInt(n.SpeedMbps, 10)
	}
	if n.MTU > 0 {
		m[prefix+"_mtu"] = strconv.FormatInt(n.MTU, 10)
	}
}

// sshServerIP is the host's own address of the SSH connection the helper
// runs in (sshd's SSH_CONNECTION: client ip, port, server ip, port).
func sshServerIP() string {
	f := strings.Fields(os.Getenv("SSH_CONNECTION"))
	if len(f) == 4 {
		return f[2]
	}
	return ""
}
