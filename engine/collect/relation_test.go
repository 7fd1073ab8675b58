package collect

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers"
)

const (
	ourID   = "96b3e2583d6e37e1a394929d11951e261383b21e46ba979dcc08d7fa1bdb1c8c"
	theirID = "feda819692787c8f4394eb7bea45457bd78afd00da984375ca32f861dccc81ab"
	ourFS   = "/var/lib/docker/fuse-overlayfs/4b0bc85fe2f553e7baf896bd9e451559a899de63be465688ef3b580f18b2a2fc"
	theirFS = "/var/lib/docker/fuse-overlayfs/0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d"
)

// machineOf is a machine with our benchflow (pid 10) and a neighbour's
// run beside it, each process using CPU every pass: a container of ours
// and one of theirs with their docker-proxy, shim and fuse-overlayfs
// (command lines as Docker 20.10 starts them), the engine, a second
// benchflow loading another server and a child of ours.
type machineOf struct {
	self, child, otherBF, otherKid, dockerd, kubelet *fakePID
	ourProxy, theirProxy, ourShim, theirShim         *fakePID
	ourFuse, theirFuse, svc                          *fakePID
}

func fuseArgs(dir string) []string {
	return []string{"fuse-overlayfs", "-o", "lowerdir=/var/lib/docker/fuse-overlayfs/l/FPKBGXTOZCN74MFPAHDMQZQXKD,upperdir=" + dir + "/diff,workdir=" + dir + "/work", dir + "/merged"}
}

func proxyArgs(hostPort, ip, cport string) []string {
	return []string{"/usr/sbin/docker-proxy", "-proto", "tcp", "-host-ip", "127.0.0.1", "-host-port", hostPort, "-container-ip", ip, "-container-port", cport}
}

func shimArgs(id string) []string {
	return []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "moby", "-id", id, "-address", "/var/run/docker/containerd/containerd.sock"}
}

func newMachineOf() *machineOf {
	return &machineOf{
		self:       &fakePID{pid: 10, ppid: 1, comm: "benchflow", start: 100, cmdline: []string{"/usr/local/bin/benchflow", "apply", "p.hcl"}},
		child:      &fakePID{pid: 11, ppid: 10, comm: "benchflow", start: 200, cmdline: []string{"/usr/local/bin/benchflow", "agent", "--listen", "127.0.0.1:0"}},
		otherBF:    &fakePID{pid: 20, ppid: 1, comm: "benchflow", start: 100, cmdline: []string{"/usr/local/bin/benchflow", "load", "-c", "4", "-d", "60s", "http://127.0.0.1:18701/"}},
		otherKid:   &fakePID{pid: 21, ppid: 20, comm: "sh", start: 150, cmdline: []string{"sh", "-c", "gzip -9 < /dev/zero"}},
		dockerd:    &fakePID{pid: 5, ppid: 1, comm: "dockerd", start: 50, cmdline: []string{"/usr/sbin/dockerd"}},
		kubelet:    &fakePID{pid: 6, ppid: 1, comm: "kubelet", start: 50, cmdline: []string{"/usr/bin/kubelet"}},
		ourProxy:   &fakePID{pid: 60, ppid: 5, comm: "docker-proxy", start: 100, cmdline: proxyArgs("18080", "172.17.0.2", "80")},
		theirProxy: &fakePID{pid: 61, ppid: 5, comm: "docker-proxy", start: 100, cmdline: proxyArgs("18090", "172.17.0.3", "80")},
		ourShim:    &fakePID{pid: 70, ppid: 1, comm: "containerd-shim", start: 100, cmdline: shimArgs(ourID)},
		theirShim:  &fakePID{pid: 71, ppid: 1, comm: "containerd-shim", start: 100, cmdline: shimArgs(theirID)},
		ourFuse:    &fakePID{pid: 80, ppid: 1, comm: "fuse-overlayfs", start: 100, cmdline: fuseArgs(ourFS)},
		theirFuse:  &fakePID{pid: 81, ppid: 1, comm: "fuse-overlayfs", start: 100, cmdline: fuseArgs(theirFS)},
		svc:        &fakePID{pid: 50, ppid: 70, comm: "nginx", start: 100, cgroup: "/docker/" + ourID, ns: "pid:[4026532184]", cmdline: []string{"nginx", "-g", "daemon off;"}},
	}
}

func (x *machineOf) all() []*fakePID {
	return []*fakePID{x.self, x.child, x.otherBF, x.otherKid, x.dockerd, x.kubelet, x.ourProxy, x.theirProxy,
		x.ourShim, x.theirShim, x.ourFuse, x.theirFuse, x.svc}
}

// run takes 4 passes of 1 s in which every process uses 10 ticks (10% of
// a core) but the neighbour's benchflow, which uses 60.
func (x *machineOf) run(f *fakeProc, s *Sampler) *Explanation {
	f.set(0, 0, x.all()...)
	f.pass(s)
	for range 4 {
		busy := uint64(0)
		for _, p := range x.all() {
			p.utime += 10
			busy += 10
		}
		x.otherBF.utime += 50
		f.set(1, busy+50, x.all()...)
		f.pass(s)
	}
	return f.finish(s)
}

func rolesByPID(ex *Explanation) map[int]string {
	out := map[int]string{}
	for _, p := range ex.Procs {
		out[p.PID] = p.Role
	}
	return out
}

// TestAttributionByRelation: with its container's ports, id and root
// filesystem reported, a run's docker-proxy, shim and fuse-overlayfs are
// its infrastructure and a neighbour's, of the same names, are other;
// the engine is infrastructure of a run with containers; kubelet, with no
// k8s service in the trial, is other; a benchflow that is our child is
// the loader's, another benchflow (and its child) other, named in the
// verdict by pid and command line.
func TestAttributionByRelation(t *testing.T) {
	f := newFakeProc(t)
	x := newMachineOf()
	s := f.samplerWith(10, Config{
		Procs: func(context.Context) []providers.Process {
			return []providers.Process{{PID: 50, Name: "nginx", Role: RoleService}}
		},
		Containers: []providers.Container{{ID: ourID, IP: "172.17.0.2",
			Ports:  []providers.ContainerPort{{Host: 18080, Container: 80}},
			Mounts: []string{ourFS + "/merged", ourFS + "/diff", ourFS + "/work"}}},
	})
	ex := x.run(f, s)
	want := map[int]string{
		10: RoleLoader, 11: RoleLoader, 50: RoleService,
		5: RoleInfra, 60: RoleInfra, 70: RoleInfra, 80: RoleInfra,
		20: RoleOther, 21: RoleOther, 61: RoleOther, 71: RoleOther, 81: RoleOther, 6: RoleOther,
	}
	got := rolesByPID(ex)
	for pid, role := range want {
		if pid == 10 {
			continue // the loader's own rows come from its target, not the machine's
		}
		if got[pid] != role {
			t.Errorf("pid %d: role %q, want %q", pid, got[pid], role)
		}
	}
	b := *ex.Budget
	// 4 infra processes at 10% each; the neighbour's 6 at 10% plus its
	// benchflow's 50% more.
	if b.InfraPct < 39 || b.InfraPct > 41 {
		t.Errorf("infra %.1f%%, want the 40%% of dockerd and our proxy, shim and fuse-overlayfs", b.InfraPct)
	}
	if b.OtherPct < 109 || b.OtherPct > 111 {
		t.Errorf("other %.1f%%, want the neighbour's 110%%", b.OtherPct)
	}
	v := Judge(Evidence{Budget: b, Procs: ex.Procs})
	t.Logf("budget %+v\nverdict %s", b, v)
	if v.Kind != VerdictNoisy || !strings.Contains(v.Evidence, "benchflow 60%") {
		t.Errorf("verdict %s: want noisy, naming the other benchflow by its program name", v)
	}
	if strings.Contains(v.Evidence, "pid") || strings.Contains(v.Evidence, "127.0.0.1") || strings.Contains(v.Evidence, "load -c") {
		t.Errorf("verdict %s: another's pid or command line is written", v)
	}
	checkAddsUp(t, v.Evidence)
}

// TestLocalRunChargedNoDocker: a local-only run (no container) beside a
// neighbour's containers is charged none of Docker's processes: dockerd,
// docker-proxy, containerd-shim and fuse-overlayfs are all other, and
// its infrastructure share is zero.
func TestLocalRunChargedNoDocker(t *testing.T) {
	f := newFakeProc(t)
	x := newMachineOf()
	x.svc.cgroup, x.svc.ns, x.svc.ppid = "", "", 10 // our service: a child of benchflow, on the host
	s := f.samplerWith(10, Config{Procs: func(context.Context) []providers.Process {
		return []providers.Process{{PID: 50, Name: "nginx", Role: RoleService}}
	}})
	ex := x.run(f, s)
	got := rolesByPID(ex)
	for _, pid := range []int{5, 60, 61, 70, 71, 80, 81, 6, 20, 21} {
		if got[pid] != RoleOther {
			t.Errorf("pid %d: role %q, want other in a run without containers", pid, got[pid])
		}
	}
	if got[11] != RoleLoader || got[50] != RoleService {
		t.Errorf("our child %q, our service %q: want loader and service", got[11], got[50])
	}
	if b := ex.Budget; b.InfraPct > 0.01 {
		t.Errorf("infra %.1f%%, want 0: %+v", b.InfraPct, *b)
	}
}

// TestProviderInfraOnlyWhereUsed: a provider type's infrastructure names
// (providers.Type.Infra, passed as Config.InfraNames for a trial that ran
// on it) are infrastructure in that trial; the same kubelet is other in a
// trial without them (TestAttributionByRelation).
func TestProviderInfraOnlyWhereUsed(t *testing.T) {
	f := newFakeProc(t)
	x := newMachineOf()
	s := f.samplerWith(10, Config{InfraNames: []string{"kubelet"}})
	ex := x.run(f, s)
	got := rolesByPID(ex)
	if got[6] != RoleInfra {
		t.Errorf("kubelet: %q, want infra in a trial on a provider that declares it", got[6])
	}
	if got[5] != RoleOther || got[60] != RoleOther {
		t.Errorf("dockerd %q, docker-proxy %q: want other in a trial without containers", got[5], got[60])
	}
}

// TestNamedNeighbourProxyIsOther: a collect step that names docker-proxy
// samples every one, but only the run's counts in its budget (another's is
// other, not service).
func TestNamedNeighbourProxyIsOther(t *testing.T) {
	f := newFakeProc(t)
	x := newMachineOf()
	cfg := Config{Names: []string{"docker-proxy"},
		Containers: []providers.Container{{ID: ourID, IP: "172.17.0.2", Ports: []providers.ContainerPort{{Host: 18080, Container: 80}}}}}
	ms, err := compileNames(cfg.Names)
	if err != nil {
		t.Fatal(err)
	}
	s := f.samplerWith(10, cfg)
	s.matchers = ms
	ex := x.run(f, s)
	b := *ex.Budget
	// Infra: dockerd, our proxy, our shim (by -id): 30%.
	if b.InfraPct < 29 || b.InfraPct > 31 || b.ServicePct > 0.01 {
		t.Errorf("infra %.1f%%, service %.1f%%: want 30%% infra (dockerd, our proxy and shim) and no service", b.InfraPct, b.ServicePct)
	}
}

// TestQuietCheckNamesByName: the quiet check names another's processes
// by program name alone, two of one name added up; their pids and
// command lines are never written.
func TestQuietCheckNamesByName(t *testing.T) {
	f := newFakeProc(t)
	self := &fakePID{pid: os.Getpid(), ppid: 1, comm: "benchflow", start: 100}
	a := &fakePID{pid: 20, ppid: 1, comm: "benchflow", start: 100, cmdline: []string{"benchflow", "load", "http://127.0.0.1:18701/"}}
	b := &fakePID{pid: 30, ppid: 1, comm: "benchflow", start: 100, cmdline: []string{"benchflow", "serve", "--addr", "127.0.0.1:18701"}}
	all := []*fakePID{self, a, b}
	f.set(0, 0, all...)
	quietHook = func() {
		a.utime += 40
		b.utime += 20
		f.set(1, 60, all...)
	}
	defer func() { quietHook = nil }()
	s := f.sampler(os.Getpid(), nil)
	s.cfg.Quiet = 10 * time.Millisecond
	if err := s.quietCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := s.m.quiet
	t.Logf("quiet: %.1f%% (%s)", q.OtherPct, q.Top)
	if want := "benchflow " + fmtPct(q.OtherPct); q.Top != want {
		t.Errorf("quiet top %q, want %q: both benchflows added up under their program name", q.Top, want)
	}
	for _, secret := range []string{"pid", "127.0.0.1", "serve", "load"} {
		if strings.Contains(q.Top, secret) {
			t.Errorf("quiet top %q holds %q of another's command line or pid", q.Top, secret)
		}
	}
}

// TestQuietCheckLeavesOutRunInfra: in the quiet check before a docker
// trial's load, its own fuse-overlayfs and docker-proxy (busy with the
// health checks and the warm-up) are not outside the run; the
// neighbour's are.
func TestQuietCheckLeavesOutRunInfra(t *testing.T) {
	f := newFakeProc(t)
	x := newMachineOf()
	x.self.pid = os.Getpid()
	all := x.all()
	f.set(0, 0, all...)
	quietHook = func() {
		for _, p := range []*fakePID{x.ourFuse, x.ourProxy, x.theirFuse, x.theirProxy} {
			p.utime += 30
		}
		f.set(1, 120, all...)
	}
	defer func() { quietHook = nil }()
	s := f.samplerWith(os.Getpid(), Config{Containers: []providers.Container{{ID: ourID, IP: "172.17.0.2",
		Ports: []providers.ContainerPort{{Host: 18080, Container: 80}}, Mounts: []string{ourFS + "/merged"}}}})
	s.cfg.Quiet = 10 * time.Millisecond
	if err := s.quietCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := s.m.quiet
	t.Logf("quiet: %.1f%% (%s)", q.OtherPct, q.Top)
	// All four used the same CPU: the neighbour's two alone make the
	// total, one half each.
	half := fmtPct(q.OtherPct / 2)
	if want := "docker-proxy " + half + ", fuse-overlayfs " + half; q.Top != want {
		t.Errorf("quiet top %q, want %q: the neighbour's docker-proxy and fuse-overlayfs, not the trial's own", q.Top, want)
	}
}

// TestOwnContainerIsNoGroup: benchflow itself runs in a container (a CI
// job's) with its local service: the other processes of that container
// are not the run's for sharing it, and the run deploys no container, so
// the engine is not its infrastructure.
func TestOwnContainerIsNoGroup(t *testing.T) {
	f := newFakeProc(t)
	x := newMachineOf()
	ci := "/docker/" + theirID
	x.self.cgroup, x.svc.cgroup, x.svc.ns, x.svc.ppid = ci, ci, "", 10
	x.otherBF.cgroup = ci // a neighbour in the same CI container
	s := f.samplerWith(10, Config{Procs: func(context.Context) []providers.Process {
		return []providers.Process{{PID: 50, Name: "nginx", Role: RoleService}}
	}})
	ex := x.run(f, s)
	got := rolesByPID(ex)
	if got[20] != RoleOther || got[5] != RoleOther || got[50] != RoleService {
		t.Errorf("neighbour in our container %q, dockerd %q, service %q: want other, other, service", got[20], got[5], got[50])
	}
	if b := ex.Budget; b.InfraPct > 0.01 {
		t.Errorf("infra %.1f%%, want 0", b.InfraPct)
	}
}
