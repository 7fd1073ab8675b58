package nomad

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/hostproc"
)

var (
	_ providers.ProcessReporter = (*Deployment)(nil)
	_ providers.ProcessReporter = (*agentJob)(nil)
)

// Roles of the processes Processes reports (providers.Process.Role).
const (
	roleService = "service"
	roleInfra   = "infra"
	roleLoader  = "loader"
)

// statsTimeout bounds each client call of Processes (the engine calls it
// at every sample).
const statsTimeout = 2 * time.Second

// Processes reports, when the Nomad client running the job's allocations
// is this machine, the processes of their tasks — role "service" (role
// "loader" for a job of load agents) — and the Nomad executor that runs
// each task, role "infra". The task processes are what the client lists
// per task in GET /v1/client/allocation/:id/stats (TaskResourceUsage.Pids:
// the raw_exec and exec drivers' executor lists the task's cgroup). The
// docker driver lists none: an allocation without pids is then found by
// its container (containerPIDs). A client is
// this machine when its node's unique.hostname attribute is this host's
// name (asked once per node, GET /v1/node/:id, which needs node:read with
// Nomad ACLs); allocations on other nodes, or on a node that cannot be
// read, are skipped, as their pids may be another machine's. The executor
// is the parent of a task's processes (named "nomad", like the client
// agent and its logmon, which engine/collect counts as infrastructure by
// name, as it does consul).
func (d *Deployment) Processes(ctx context.Context) ([]providers.Process, error) {
	role := roleService
	if d.agentStep != "" {
		role = roleLoader
	}
	var pids []int
	var errs []error
	for _, a := range d.allocs {
		local, err := d.localNode(ctx, a.node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !local {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, statsTimeout)
		st, err := d.nomad.Allocations().Stats(&napi.Allocation{ID: a.id}, (&napi.QueryOptions{}).WithContext(sctx))
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the processes of allocation %s: %w", short(a.id), err))
			continue
		}
		listed := 0
		for _, tu := range st.Tasks {
			if tu == nil {
				continue
			}
			for s := range tu.Pids {
				if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
					pids = append(pids, pid)
					listed++
				}
			}
		}
		if listed == 0 && len(st.Tasks) > 0 {
			pids = append(pids, d.containerPIDs(a.id)...)
		}
	}
	gw := d.gatewayProcesses()
	if len(errs) > 0 && len(pids) == 0 && len(gw) == 0 {
		// Nothing could be read: say why. A partial answer is returned
		// without error: it is worth more to the accounting than none.
		return nil, errors.Join(errs...)
	}
	return append(taskProcesses(procfs.Root, pids, role, os.Getpid()), gw...), nil
}

// gatewayLocal returns the gateway's loopback address and port, or ok =
// false when there is no gateway or it is not on this machine.
func (d *Deployment) gatewayLocal() (ip net.IP, port int, ok bool) {
	if d.p == nil || !d.p.s.Gateway || d.p.s.GatewayURL == "" {
		return nil, 0, false
	}
	u, err := url.Parse(d.p.s.GatewayURL)
	if err != nil {
		return nil, 0, false
	}
	ip = net.ParseIP(u.Hostname())
	if u.Hostname() == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip == nil || !ip.IsLoopback() {
		return nil, 0, false
	}
	port, _ = strconv.Atoi(u.Port())
	if port == 0 {
		port = 80
		if u.Scheme == "https" {
			port = 443
		}
	}
	return ip, port, true
}

// gatewayPIDs returns the pids of the local gateway's processes: those
// listening on its port, the master named by gateway_pid_file, and
// every process below them, sorted, each once. pidErr is why the pid
// file named no process (nil when none is set or it did).
func (d *Deployment) gatewayPIDs() (pids []int, pidErr error) {
	ip, port, ok := d.gatewayLocal()
	if !ok {
		return nil, nil
	}
	pids, _ = hostproc.Listeners(ip, port)
	if f := d.p.s.GatewayPIDFile; f != "" {
		pid, err := hostproc.PIDFile(procfs.Root, f)
		if err != nil {
			pidErr = err
		} else if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	// And what the listeners forked: nginx's workers hold the socket too,
	// but run as another user whose open files a sandboxed reproduce (no
	// capabilities) cannot read; they are found below their master.
	pids = append(pids, hostproc.Descendants(procfs.Root, pids)...)
	sort.Ints(pids)
	return slices.Compact(pids), pidErr
}

// checkGateway is called once the gateway routes to the service: a pid
// file that names no process is an error (its CPU would count as
// another program's), and a local gateway whose processes cannot be
// found is said in the trial's log, with the setting that finds them.
func (d *Deployment) checkGateway() error {
	ip, port, ok := d.gatewayLocal()
	if !ok {
		return nil
	}
	pids, err := d.gatewayPIDs()
	if err != nil {
		return fmt.Errorf("gateway_pid_file (or APISIX_PID_FILE): %w; it should name the pid file of APISIX's nginx master (logs/nginx.pid under APISIX's prefix), whose CPU then counts as infrastructure", err)
	}
	if len(pids) == 0 && d.logf != nil {
		d.logf("apisix: no process found listening on %s (their open files cannot be read here, e.g. in reproduce's sandbox): "+
			"its CPU counts as other programs'; set gateway_pid_file (or APISIX_PID_FILE) to APISIX's logs/nginx.pid",
			net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	}
	return nil
}

// gatewayProcesses reports, with gateway = true and a gateway_url on a
// loopback address, the processes listening on its port — APISIX's nginx
// master and workers — as infrastructure. APISIX on a plain nginx shows
// as "nginx", the name a service under test may have too, so it is found
// by its listening socket rather than by name. A gateway on another
// address is another machine's (or unknown) and is left out.
//
// Where the listeners' open files cannot be read — inside reproduce's
// sandbox, which has no capabilities, neither the root master's nor the
// workers' are — the master is found by its pid file (gateway_pid_file,
// APISIX_PID_FILE) instead, and the workers below it.
func (d *Deployment) gatewayProcesses() []providers.Process {
	pids, _ := d.gatewayPIDs()
	var out []providers.Process
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue // a gateway served by this process (the fake's)
		}
		if name := hostproc.Comm(pid); name != "" {
			out = append(out, providers.Process{PID: pid, Name: name, Role: roleInfra})
		}
	}
	return out
}

// taskProcesses turns the task pids the client listed into processes
// with their names, leaving out those that are not on this machine, and
// adds the parent of each task's top process — the Nomad executor — as
// infrastructure, unless it is self (a client embedded in this process,
// as the fake is) or init. An executor listed among the pids is
// infrastructure too: Nomad 1.6.5 on cgroup v1 starts the executor in the
// task's cgroup (freezer /nomad/<id>), so the client lists it with the
// task (`nomad executor {…}`, parent the client agent); its parent, the
// agent, is then not added (collect counts it by name).
func taskProcesses(root string, pids []int, role string, self int) []providers.Process {
	in := map[int]bool{}
	for _, p := range pids {
		in[p] = true
	}
	var out []providers.Process
	parents := map[int]bool{}
	for p := range in {
		comm, ppid, ok := readStat(root, p)
		if !ok {
			continue // ended, or not a process of this machine
		}
		if isExecutor(root, p, comm) {
			out = append(out, providers.Process{PID: p, Name: comm, Role: roleInfra})
			continue
		}
		out = append(out, providers.Process{PID: p, Name: comm, Role: role})
		if !in[ppid] && ppid > 1 && ppid != self {
			parents[ppid] = true
		}
	}
	for p := range parents {
		if comm, _, ok := readStat(root, p); ok {
			out = append(out, providers.Process{PID: p, Name: comm, Role: roleInfra})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// isExecutor reports whether pid is a Nomad executor: named nomad, run as
// `nomad executor …` (root/PID/cmdline).
func isExecutor(root string, pid int, comm string) bool {
	if comm != "nomad" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	args := strings.Split(string(b), "\x00")
	return len(args) > 1 && args[1] == "executor"
}

// readStat reads a process's comm and parent from root/PID/stat; ok is
// false when the process is gone or its stat cannot be parsed.
func readStat(root string, pid int) (comm string, ppid int, ok bool) {
	st, err := hostproc.ReadStat(root, pid)
	if err != nil {
		return "", 0, false
	}
	return st.Comm, st.PPID, true
}

// localNode reports whether the client node id runs on this machine: its
// unique.hostname attribute (Nomad's fingerprint of os.Hostname) is this
// host's name. The answer is kept for the deployment's life.
func (d *Deployment) localNode(ctx context.Context, id string) (bool, error) {
	d.procMu.Lock()
	defer d.procMu.Unlock()
	if v, ok := d.nodeLocal[id]; ok {
		return v, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return false, fmt.Errorf("reading this host's name: %w", err)
	}
	nctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	node, _, err := d.nomad.Nodes().Info(id, (&napi.QueryOptions{}).WithContext(nctx))
	if d.nodeLocal == nil {
		d.nodeLocal = map[string]bool{}
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// Asked once: a token without node:read would fail at every
		// sample.
		d.nodeLocal[id] = false
		d.logf("nomad: cannot tell whether node %s is this machine (reading it: %v): collect steps do not count its allocations' processes as the service's", short(id), err)
		return false, nil
	}
	local := node.Attributes["unique.hostname"] == host
	d.nodeLocal[id] = local
	if !local {
		d.logf("nomad: allocations on node %s (%s) run on another machine: collect steps do not count their processes as the service's", node.Name, node.Attributes["unique.hostname"])
	}
	return local, nil
}

// Processes are the agents' processes (role "loader": they are the load
// generator), for collect steps: Deployment.Processes without the
// executors, since the engine counts every process an agent group reports
// as the loader's (the executors count as infrastructure by their name).
func (g *agentJob) Processes(ctx context.Context) ([]providers.Process, error) {
	pr, ok := g.dep.(providers.ProcessReporter)
	if !ok {
		return nil, nil
	}
	ps, err := pr.Processes(ctx)
	return slices.DeleteFunc(ps, func(p providers.Process) bool { return p.Role != roleLoader }), err
}

// containerIDRe finds a container id (64 hex digits) in a cgroup path:
// /docker/<id>, …/docker-<id>.scope, the nomad.slice/docker-<id>.scope
// Nomad's docker driver uses with cgroups v2.
var containerIDRe = regexp.MustCompile(`[0-9a-f]{64}`)

// containerPIDs lists the processes of the container that runs an
// allocation's task, for drivers whose stats list no pids (docker). Nomad
// sets NOMAD_ALLOC_ID in every task's environment: the container is the
// one (named in /proc/PID/cgroup) with a process whose environ holds the
// allocation's id — readable by root or the user the tasks run as;
// otherwise nothing is found. The container's id is kept once found; its
// processes are then those whose cgroup names it.
func (d *Deployment) containerPIDs(allocID string) []int {
	d.procMu.Lock()
	cid := d.allocContainer[allocID]
	d.procMu.Unlock()
	pids, err := procfs.PIDs("")
	if err != nil {
		return nil
	}
	// benchflow's own container (benchflow and the client in one
	// container) is not the task's: the whole machine would be the
	// service.
	selfCG, _ := procfs.Cgroup(procfs.Self)
	self := containerIDRe.FindString(selfCG)
	type proc struct {
		pid int
		cid string
	}
	var procs []proc
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		cg, err := procfs.Cgroup(pid)
		if err != nil {
			continue
		}
		if id := containerIDRe.FindString(cg); id != "" && id != self {
			procs = append(procs, proc{pid, id})
		}
	}
	if cid == "" {
		want := []byte("NOMAD_ALLOC_ID=" + allocID + "\x00")
		for _, p := range procs {
			env, err := os.ReadFile(procfs.Path(p.pid, "environ"))
			if err == nil && (bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
				cid = p.cid
				break
			}
		}
		if cid == "" {
			return nil
		}
		d.procMu.Lock()
		if d.allocContainer == nil {
			d.allocContainer = map[string]string{}
		}
		d.allocContainer[allocID] = cid
		d.procMu.Unlock()
	}
	var out []int
	for _, p := range procs {
		if p.cid == cid {
			out = append(out, p.pid)
		}
	}
	return out
}
