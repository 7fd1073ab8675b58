package nomad

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/providers"
)

// burnerRequest is a service whose task burns a core: /bin/sh under the
// name nomadburner (its comm), spinning; its health check is TCP, which
// the Consul fake passes without connecting.
func burnerRequest(t *testing.T) (*providers.ProvisionRequest, string) {
	t.Helper()
	burner := filepath.Join(t.TempDir(), "nomadburner")
	if err := os.Symlink("/bin/sh", burner); err != nil {
		t.Fatal(err)
	}
	return &providers.ProvisionRequest{
		RunID: testRunID, TrialID: "t0001",
		Service: providers.ServiceSpec{
			Name:    "web",
			Command: []string{burner, "-c", "while :; do :; done"},
			Ports:   []providers.Port{{Name: "http"}},
			Health:  providers.Health{TCP: true, PortName: "http", Interval: time.Second},
		},
		Logf: t.Logf,
	}, "nomadburner"
}

// TestProcessesAreTheService: on a one-host Nomad (the fake's client is
// this machine and runs raw_exec tasks for real) the task's process is
// reported as the service, so a collect step's whole-machine accounting
// counts its CPU as the service's — not as another process's, which made
// every trial "noisy" and its start busy.
func TestProcessesAreTheService(t *testing.T) {
	st := newStack(t)
	st.Nomad.RunRawExec = true
	c := gatewayConfig(st)
	c.Gateway, c.Count = false, 1
	req, name := burnerRequest(t)
	dep, err := newProvider(t, c).Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	// The task: the fake's child (no executor between) named nomadburner.
	burnPID := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, ppid, ok := readStat("/proc", pid); ok && comm == name && ppid == os.Getpid() {
			burnPID = pid
		}
	}
	if burnPID == 0 {
		t.Fatalf("no process %s among this process's children", name)
	}
	procs := func(context.Context) []providers.Process { return nil }
	if pr, ok := dep.(providers.ProcessReporter); !ok {
		t.Error("a nomad deployment reports no processes (providers.ProcessReporter)")
	} else {
		ps, err := pr.Processes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []providers.Process{{PID: burnPID, Name: name, Role: "service"}}
		if d := cmp.Diff(want, ps); d != "" {
			t.Errorf("processes (-want +got):\n%s", d)
		}
		procs = func(ctx context.Context) []providers.Process {
			ps, _ := pr.Processes(ctx)
			return ps
		}
	}
	s, err := collect.Start(context.Background(), collect.Config{
		Step: "load", Interval: 200 * time.Millisecond, Machine: true, Quiet: 300 * time.Millisecond,
		Procs: procs,
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	rows, _, _ := s.Stop()
	ex := s.Explain()
	t.Logf("quiet %+v; budget %+v", ex.Quiet, ex.Budget)
	if ex.Quiet == nil || strings.Contains(ex.Quiet.Top, name) {
		t.Errorf("the quiet check counted the service's task as outside the run: %+v", ex.Quiet)
	}
	n := 0
	for _, r := range rows {
		if r.PID == burnPID {
			n++
			if r.Role != "service" {
				t.Errorf("row of the task at %.1f s has role %q, want service", r.T, r.Role)
			}
		}
	}
	if n == 0 {
		t.Errorf("no row of the task (pid %d)", burnPID)
	}
	for _, p := range ex.Procs {
		if p.PID == burnPID && p.Role != "service" {
			t.Errorf("the task in the budget: %+v, want role service", p)
		}
	}
	// The burner is the only service process; on a busy shared machine
	// it may get little of a core, but never none.
	if ex.Budget == nil || ex.Budget.ServicePct < 1 {
		t.Errorf("budget %+v: the task's CPU is not the service's", ex.Budget)
	}
}

// TestProcessesOfAnotherMachine: allocations whose client node is another
// machine (its unique.hostname is not this host's) are not reported: their
// pids are that machine's.
func TestProcessesOfAnotherMachine(t *testing.T) {
	st := newStack(t)
	st.Nomad.RunRawExec = true
	st.Nomad.NodeHostname = "client-elsewhere"
	c := gatewayConfig(st)
	c.Gateway, c.Count = false, 1
	req, _ := burnerRequest(t)
	dep, err := newProvider(t, c).Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	pr, ok := dep.(providers.ProcessReporter)
	if !ok {
		t.Fatal("a nomad deployment reports no processes (providers.ProcessReporter)")
	}
	if ps, err := pr.Processes(context.Background()); err != nil || len(ps) != 0 {
		t.Errorf("processes of a remote client: %+v, %v; want none", ps, err)
	}
}

// TestTaskProcessesAddTheExecutor: a task's top process's parent is the
// Nomad executor that runs it (role infra); the task's own children are
// the service's; pids not on this machine, init and benchflow itself are
// left out.
func TestTaskProcessesAddTheExecutor(t *testing.T) {
	root := t.TempDir()
	for _, p := range []struct {
		pid, ppid int
		comm      string
	}{
		{1, 0, "systemd"}, {40, 1, "nomad"}, {41, 40, "nomad"}, {42, 41, "nginx"}, {43, 42, "nginx"},
		{50, 1, "benchflow"}, {51, 50, "benchflow"}, {60, 1, "nomad"}, {61, 60, "my server"},
	} {
		dir := filepath.Join(root, fmt.Sprint(p.pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 100 1000 10\n", p.pid, p.comm, p.ppid, p.pid, p.pid)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 42 and 43: a task run by executor 41; 51: a task whose parent is
	// benchflow (self); 61: a task whose executor 60 is also a task
	// pid's parent; 99: gone.
	got := taskProcesses(root, []int{43, 42, 51, 61, 99}, "service", 50)
	want := []providers.Process{
		{PID: 41, Name: "nomad", Role: "infra"},
		{PID: 42, Name: "nginx", Role: "service"},
		{PID: 43, Name: "nginx", Role: "service"},
		{PID: 51, Name: "benchflow", Role: "service"},
		{PID: 60, Name: "nomad", Role: "infra"},
		{PID: 61, Name: "my server", Role: "service"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("processes (-want +got):\n%s", d)
	}
}

// TestTaskProcessesListedExecutor: Nomad 1.6.5 on cgroup v1 lists the
// executor among a raw_exec task's pids (it runs in the task's cgroup):
// as recorded on a real client, pids [executor, sh, sleep] with the
// executor's parent the client agent. The executor is infrastructure, the
// task's processes the service's, and the agent is not added; a service
// that is itself named nomad (not an executor) stays the service's.
func TestTaskProcessesListedExecutor(t *testing.T) {
	root := t.TempDir()
	for _, p := range []struct {
		pid, ppid int
		comm      string
		cmdline   []string
	}{
		{30259, 1, "nomad", []string{"/opt/nomad", "agent", "-dev"}},
		{28812, 30259, "nomad", []string{"/opt/nomad", "executor", `{"LogFile":"/x/executor.out"}`}},
		{28821, 28812, "sh", []string{"/bin/sh", "-c", "sleep 40 & wait"}},
		{28822, 28821, "sleep", []string{"sleep", "40"}},
		{70, 30259, "nomad", []string{"/opt/nomad", "executor", "{}"}},
		{71, 70, "nomad", []string{"/usr/local/bin/nomad", "agent", "-config", "x.hcl"}},
	} {
		dir := filepath.Join(root, fmt.Sprint(p.pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 100 1000 10\n", p.pid, p.comm, p.ppid, p.pid, p.pid)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(p.cmdline, "\x00")+"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One allocation's task (executor 28812 listed), and one whose
	// service is a nomad agent under test (71), its executor 70 listed.
	got := taskProcesses(root, []int{28821, 28822, 28812, 70, 71}, "service", 1234)
	want := []providers.Process{
		{PID: 70, Name: "nomad", Role: "infra"},
		{PID: 71, Name: "nomad", Role: "service"},
		{PID: 28812, Name: "nomad", Role: "infra"},
		{PID: 28821, Name: "sh", Role: "service"},
		{PID: 28822, Name: "sleep", Role: "service"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("processes (-want +got):\n%s", d)
	}
}

// TestProcessesOfAnUnreadableNode: a node that cannot be read (here
// unknown; with ACLs, a token without node:read) is not taken for this
// machine, is asked about once, and is not an error at every sample.
func TestProcessesOfAnUnreadableNode(t *testing.T) {
	st := newStack(t)
	p := newProvider(t, gatewayConfig(st))
	nc, err := p.nomadClient()
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	d := &Deployment{p: p, nomad: nc, allocs: []allocAddr{{id: "6c1f0e3a-0000-4000-8000-000000000009", node: "00000000-0000-4000-8000-00000000dead"}},
		logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	for range 2 {
		if ps, err := d.Processes(context.Background()); err != nil || len(ps) != 0 {
			t.Errorf("processes %+v, %v; want none and no error", ps, err)
		}
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "cannot tell whether node 00000000 is this machine") {
		t.Errorf("logged %q, want one line saying the node could not be read", logged)
	}
}

// TestProcessesOfDockerTasks: the docker driver lists no pids in the
// allocation stats (the fake's in-process tasks list none either), so the
// task is found by its container: the one holding a process whose
// environment has the allocation's NOMAD_ALLOC_ID. Its processes are the
// service's, the containerd-shim above them infrastructure; benchflow's
// own container, another allocation's, and a variable that merely ends
// in NOMAD_ALLOC_ID are not it. Once found, the container is kept.
func TestProcessesOfDockerTasks(t *testing.T) {
	st := newStack(t)
	c := gatewayConfig(st)
	c.Gateway, c.Count, c.Driver = false, 1, "docker"
	req := request(t)
	req.Service.Image, req.Service.Command = "nginx:1.27", nil
	dep, err := newProvider(t, c).Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	d := dep.(*Deployment)
	alloc := d.allocs[0].id
	const (
		self  = "1111111111111111111111111111111111111111111111111111111111111111"
		ours  = "96b3e2583d6e37e1a394929d11951e261383b21e46ba979dcc08d7fa1bdb1c8c"
		other = "2222222222222222222222222222222222222222222222222222222222222222"
	)
	root := t.TempDir()
	write := func(pid, name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("self", "cgroup", "0::/docker/"+self+"\n")
	for _, p := range []struct {
		pid, ppid             int
		comm, cgroup, environ string
	}{
		// Listed first (directory order), so a wrong match would win.
		{10, 1, "benchflow", "/docker/" + self, "NOMAD_ALLOC_ID=" + alloc + "\x00"},
		{20, 1, "containerd-shim", "/system.slice/containerd.service", ""},
		{21, 20, "nginx", "/nomad.slice/docker-" + ours + ".scope", "PATH=/usr/bin\x00NOMAD_ALLOC_ID=" + alloc + "\x00NOMAD_TASK_NAME=web\x00"},
		{22, 21, "nginx", "/nomad.slice/docker-" + ours + ".scope", ""}, // environ unreadable
		{15, 20, "redis", "/nomad.slice/docker-" + other + ".scope", "XNOMAD_ALLOC_ID=" + alloc + "\x00NOMAD_ALLOC_ID=5d2c0000-0000-4000-8000-000000000001\x00"},
	} {
		write(fmt.Sprint(p.pid), "stat", fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 100 1000 10\n", p.pid, p.comm, p.ppid, p.pid, p.pid))
		write(fmt.Sprint(p.pid), "cgroup", "0::"+p.cgroup+"\n")
		if p.environ != "" {
			write(fmt.Sprint(p.pid), "environ", p.environ)
		}
	}
	old := procfs.Root
	procfs.Root = root
	defer func() { procfs.Root = old }()
	want := []providers.Process{
		{PID: 20, Name: "containerd-shim", Role: "infra"},
		{PID: 21, Name: "nginx", Role: "service"},
		{PID: 22, Name: "nginx", Role: "service"},
	}
	for i := range 2 {
		ps, err := d.Processes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, ps); d != "" {
			t.Errorf("call %d: processes (-want +got):\n%s", i+1, d)
		}
		// Found once: the master's environment is no longer needed.
		if err := os.Remove(filepath.Join(root, "21", "environ")); err != nil && i == 0 {
			t.Fatal(err)
		}
	}
}

// The gateway on this machine (APISIX on a plain nginx is named "nginx",
// like a service under test) is reported as infrastructure by the socket
// it listens on; one on another address is left out.
func TestGatewayProcessesByListeningSocket(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	gw := exec.Command("python3", "-c", `
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
sys.stdin.read()
`)
	stdin, _ := gw.StdinPipe()
	out, _ := gw.StdoutPipe()
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); gw.Wait() }()
	line, _ := bufio.NewReader(out).ReadString('\n')
	port := strings.TrimSpace(line)

	d := &Deployment{p: &Provider{s: &settings{Config: Config{Gateway: true, GatewayURL: "http://127.0.0.1:" + port}}}}
	ps := d.gatewayProcesses()
	if len(ps) != 1 || ps[0].PID != gw.Process.Pid || ps[0].Role != roleInfra || ps[0].Name == "" {
		t.Fatalf("gatewayProcesses = %+v, want the listener pid %d as infra", ps, gw.Process.Pid)
	}
	for _, u := range []string{"http://10.1.2.3:" + port, "http://example.invalid:" + port} {
		d.p.s.GatewayURL = u
		if ps := d.gatewayProcesses(); len(ps) != 0 {
			t.Errorf("gateway %s (not this machine's loopback) reported %+v", u, ps)
		}
	}
	d.p.s.Gateway, d.p.s.GatewayURL = false, "http://127.0.0.1:"+port
	if ps := d.gatewayProcesses(); len(ps) != 0 {
		t.Errorf("without gateway = true: %+v", ps)
	}
}

// Where the gateway's open files cannot be read (reproduce's sandbox has
// no capabilities), its socket names no process: the master is found by
// gateway_pid_file and its workers below it. Without the file the trial's
// log says which setting finds them; a stale file is a located error.
func TestGatewayProcessesByPIDFile(t *testing.T) {
	root := t.TempDir()
	boot := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", fmt.Sprintf("cpu  1 2 3 4\nbtime %d\n", boot.Unix()))
	// 127.0.0.1:9080 listening (0A), socket inode 777; no process's fd
	// folder is readable, as in the sandbox.
	write("net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		"   0: 0100007F:237C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0 100 0 0 10 0\n")
	for pid, st := range map[int]struct {
		comm          string
		ppid, started int
	}{500: {"nginx", 1, 10}, 501: {"nginx", 500, 11}, 502: {"nginx", 500, 11}, 600: {"python3", 1, 50}} {
		write(fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (%s) S %d 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, st.comm, st.ppid, st.started*100))
	}
	old := procfs.Root
	procfs.Root = root
	defer func() { procfs.Root = old }()

	pidFile := filepath.Join(t.TempDir(), "nginx.pid")
	if err := os.WriteFile(pidFile, []byte("500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := boot.Add(12 * time.Second)
	if err := os.Chtimes(pidFile, at, at); err != nil {
		t.Fatal(err)
	}
	var logged []string
	d := &Deployment{p: &Provider{s: &settings{Config: Config{Gateway: true, GatewayURL: "http://127.0.0.1:9080"}}},
		logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}

	// Without the pid file nothing is found, and the log says why.
	if ps := d.gatewayProcesses(); len(ps) != 0 {
		t.Fatalf("gatewayProcesses without a pid file = %+v, want none (no readable socket)", ps)
	}
	if err := d.checkGateway(); err != nil {
		t.Fatal(err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "127.0.0.1:9080") || !strings.Contains(logged[0], "gateway_pid_file (or APISIX_PID_FILE)") {
		t.Errorf("log = %q, want one line naming the gateway's address and gateway_pid_file", logged)
	}

	d.p.s.GatewayPIDFile = pidFile
	want := []providers.Process{
		{PID: 500, Name: "nginx", Role: roleInfra},
		{PID: 501, Name: "nginx", Role: roleInfra},
		{PID: 502, Name: "nginx", Role: roleInfra},
	}
	if diff := cmp.Diff(want, d.gatewayProcesses()); diff != "" {
		t.Errorf("gatewayProcesses with the pid file (-want +got):\n%s", diff)
	}
	logged = nil
	if err := d.checkGateway(); err != nil || len(logged) != 0 {
		t.Errorf("checkGateway with the pid file: %v, log %q; want neither", err, logged)
	}

	// A file naming a process that started after it was written: refused.
	if err := os.WriteFile(pidFile, []byte("600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(pidFile, at, at); err != nil {
		t.Fatal(err)
	}
	err := d.checkGateway()
	if err == nil || !strings.Contains(err.Error(), "gateway_pid_file (or APISIX_PID_FILE)") || !strings.Contains(err.Error(), pidFile) {
		t.Errorf("checkGateway with a stale pid file: %v, want an error naming the setting and %s", err, pidFile)
	}
	if ps := d.gatewayProcesses(); len(ps) != 0 {
		t.Errorf("gatewayProcesses with a stale pid file = %+v, want none", ps)
	}
}
