package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/docker/dockertest"
)

// harness holds what every integration test needs.
type harness struct {
	t     *testing.T
	cli   *client.Client
	runID string
}

func newHarness(t *testing.T, images ...string) *harness {
	t.Helper()
	cli := dockertest.Client(t)
	dockertest.Images(t, images...)
	h := &harness{t: t, cli: cli, runID: dockertest.RunID(t)}
	// Registered first, so it runs last: after every Teardown.
	t.Cleanup(func() { dockertest.NoLeftovers(t, cli, h.runID) })
	return h
}

func (h *harness) provider(cfg Config) *Provider {
	h.t.Helper()
	p, err := New(&providers.NewRequest{Name: "test", Config: &cfg})
	if err != nil {
		h.t.Fatal(err)
	}
	return p.(*Provider)
}

func (h *harness) request(spec providers.ServiceSpec) *providers.ProvisionRequest {
	return &providers.ProvisionRequest{
		RunID:   h.runID,
		TrialID: "t1",
		Service: spec,
		LogDir:  h.t.TempDir(),
		Logf:    h.t.Logf,
	}
}

// provision provisions and registers a Teardown that must succeed.
func (h *harness) provision(p *Provider, req *providers.ProvisionRequest) *Deployment {
	h.t.Helper()
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	d := dep.(*Deployment)
	h.t.Cleanup(func() {
		if err := d.Teardown(context.Background()); err != nil {
			h.t.Errorf("Teardown: %v", err)
		}
	})
	return d
}

// waitReady polls url until it answers 200, calling Alive between tries so
// a dead container ends the wait at once. Bounded by attempts, not asserted
// on time.
func waitReady(d providers.Deployment, url string) error {
	c := &http.Client{Timeout: time.Second}
	var last error
	for range 300 {
		if err := d.(providers.Liveness).Alive(context.Background()); err != nil {
			return err
		}
		resp, err := c.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s never answered 200: %v", url, last)
}

// load sends n keep-alive GETs one after another and returns the number of
// 200 responses and the body bytes.
func load(t *testing.T, url string, n int) (ok int, bytes int64) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	for range n {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		b, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ok++
		}
		bytes += b
	}
	c.CloseIdleConnections()
	return ok, bytes
}

func byName(ps []providers.Process) map[string][]providers.Process {
	m := map[string][]providers.Process{}
	for _, p := range ps {
		m[p.Name] = append(m[p.Name], p)
	}
	return m
}

func TestBridgePublishesAndMeasures(t *testing.T) {
	h := newHarness(t, "nginx")
	p := h.provider(Config{Labels: map[string]string{"purpose": "test"}})
	// Host port 0: Docker picks a free one and the provider reads it
	// back (no port chosen first that another process could take).
	req := h.request(providers.ServiceSpec{
		Name:  "nginx",
		Image: dockertest.Nginx,
		Ports: []providers.Port{{Name: "http", Container: 80}},
	})
	if !p.PicksHostPort(req.Service.Ports[0]) {
		t.Error("on a bridge network the provider does not let Docker pick the host port")
	}
	d := h.provision(p, req)
	ep := d.Endpoint()
	host := ep.Port
	if ep.Host != "127.0.0.1" || host <= 0 || ep.Ports["http"] != host {
		t.Fatalf("endpoint = %+v, want 127.0.0.1 and the port Docker picked", ep)
	}
	if err := waitReady(d, ep.URL()+"/"); err != nil {
		t.Fatal(err)
	}
	ok, n := load(t, ep.URL()+"/", 300)
	if ok != 300 || n != 300*615 {
		t.Errorf("300 GETs: %d ok, %d bytes; want 300 and %d (nginx's 615-byte page)", ok, n, 300*615)
	}

	// Published on the bind address only, through the engine.
	info, err := h.cli.ContainerInspect(context.Background(), d.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	b := info.HostConfig.PortBindings["80/tcp"]
	if len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != "" && b[0].HostPort != "0" {
		t.Errorf("port bindings = %+v, want 127.0.0.1 with no port chosen before the start", info.HostConfig.PortBindings)
	}
	if pb := info.NetworkSettings.Ports["80/tcp"]; len(pb) == 0 || pb[0].HostPort != fmt.Sprint(host) {
		t.Errorf("Docker published %+v; the endpoint says %d", pb, host)
	}
	for k, want := range map[string]string{providers.LabelManaged: "true", providers.LabelRun: h.runID, providers.LabelTrial: "t1", providers.LabelService: "nginx", "purpose": "test"} {
		if got := info.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	ps, err := d.Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The cgroup read gives what the engine's top gives.
	top, err := d.topProcesses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var fromCgroup []providers.Process
	for _, p := range ps {
		if p.Role == RoleService {
			fromCgroup = append(fromCgroup, p)
		}
	}
	sortByPID := func(a, b providers.Process) int { return a.PID - b.PID }
	slices.SortFunc(top, sortByPID)
	slices.SortFunc(fromCgroup, sortByPID)
	if d.procsFile == "" || !slices.Equal(top, fromCgroup) {
		t.Errorf("cgroup %q gave %+v, docker top %+v", d.procsFile, fromCgroup, top)
	}
	names := byName(ps)
	if len(names["nginx"]) < 2 || names["nginx"][0].Role != RoleService {
		t.Errorf("want nginx master and workers as service processes, got %+v", ps)
	}
	for _, infra := range []string{"docker-proxy", "dockerd", "containerd-shim"} {
		if len(names[infra]) != 1 || names[infra][0].Role != RoleInfra {
			t.Errorf("want one %s infra process, got %+v", infra, ps)
		}
	}
	for _, pr := range names["nginx"] {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pr.PID)); err != nil {
			t.Errorf("nginx pid %d is not a host pid: %v", pr.PID, err)
		}
	}
	if px := names["docker-proxy"]; len(px) == 1 {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", px[0].PID))
		if !strings.Contains(string(cmd), fmt.Sprint(host)) {
			t.Errorf("docker-proxy %d does not forward port %d: %q", px[0].PID, host, cmd)
		}
	}

	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs, err := os.ReadFile(filepath.Join(req.LogDir, "nginx.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(logs), `"GET / HTTP/1.1" 200 615`); got < 300 {
		t.Errorf("saved log has %d access lines, want >= 300", got)
	}
	if _, err := h.cli.ContainerInspect(context.Background(), d.ContainerID()); !client.IsErrNotFound(err) {
		t.Errorf("container still there after Teardown: %v", err)
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
}

func TestHostNetworkServesRenderedConfig(t *testing.T) {
	h := newHarness(t, "nginx")
	p := h.provider(Config{Network: NetworkHost})
	host := dockertest.FreePort(t)
	port := providers.Port{Name: "http", Container: 80, Host: host}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	listen := p.ListenPort(port)
	if listen != host {
		t.Fatalf("ListenPort = %d, want the host port %d", listen, host)
	}
	conf := fmt.Sprintf(`worker_processes 1;
pid /tmp/nginx.pid;
error_log stderr;
events {}
http {
  access_log off;
  server {
    listen 127.0.0.1:%d;
    location / { root %s/html; }
  }
}
`, listen, p.ServiceDir("nginx"))
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
	os.MkdirAll(filepath.Join(dir, "html"), 0o755)
	os.WriteFile(filepath.Join(dir, "html", "index.html"), []byte("hello from host net\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("mounted alone\n"), 0o644)
	req := h.request(providers.ServiceSpec{
		Name:    "nginx",
		Image:   dockertest.Nginx,
		Command: []string{"nginx", "-c", "/etc/benchflow/nginx.conf", "-g", "daemon off;"},
		Dir:     dir,
		Files:   []providers.File{{Name: "extra.txt", HostPath: filepath.Join(dir, "extra.txt"), Mount: "/usr/share/nginx/html/extra.txt"}},
		Ports:   []providers.Port{port},
	})
	d := h.provision(p, req)
	if ep := d.Endpoint(); ep.Host != "127.0.0.1" || ep.Port != host {
		t.Fatalf("endpoint = %+v", ep)
	}
	url := d.Endpoint().URL() + "/index.html"
	if err := waitReady(d, url); err != nil {
		t.Fatal(err)
	}
	ok, n := load(t, url, 300)
	if ok != 300 || n != 300*int64(len("hello from host net\n")) {
		t.Errorf("300 GETs: %d ok, %d bytes", ok, n)
	}
	ps, err := d.Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	names := byName(ps)
	if len(names["docker-proxy"]) != 0 {
		t.Errorf("host network has no docker-proxy, got %+v", names["docker-proxy"])
	}
	if len(names["nginx"]) != 2 {
		t.Errorf("want nginx master + 1 worker, got %+v", ps)
	}
	// Mounts are read-only.
	info, err := h.cli.ContainerInspect(context.Background(), d.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, m := range info.Mounts {
		if m.RW {
			t.Errorf("mount %s is writable", m.Destination)
		}
		targets = append(targets, m.Destination)
	}
	if strings.Join(targets, ",") != "/etc/benchflow,/usr/share/nginx/html/extra.txt" && strings.Join(targets, ",") != "/usr/share/nginx/html/extra.txt,/etc/benchflow" {
		t.Errorf("mounts = %v", targets)
	}
}

func TestUserNetworkCreatedAndRemoved(t *testing.T) {
	h := newHarness(t, "nginx")
	netName := "bf-test-" + h.runID
	p := h.provider(Config{Network: netName})
	host := dockertest.FreePort(t)
	mk := func(svc string, port int) *providers.ProvisionRequest {
		return h.request(providers.ServiceSpec{Name: svc, Image: dockertest.Nginx, Ports: []providers.Port{{Name: "http", Container: 80, Host: port}}})
	}
	d1 := h.provision(p, mk("a", host))
	d2 := h.provision(p, mk("b", 0)) // the engine picks the host port
	if d2.Endpoint().Port == 0 || d2.Endpoint().Port == host {
		t.Errorf("engine-picked port = %d", d2.Endpoint().Port)
	}
	for _, d := range []*Deployment{d1, d2} {
		if err := waitReady(d, d.Endpoint().URL()+"/"); err != nil {
			t.Fatal(err)
		}
	}
	nw, err := h.cli.NetworkInspect(context.Background(), netName, network.InspectOptions{})
	if err != nil {
		t.Fatalf("user network: %v", err)
	}
	if nw.Labels[providers.LabelRun] != h.runID || len(nw.Containers) != 2 {
		t.Errorf("network labels %v, %d containers", nw.Labels, len(nw.Containers))
	}
	if d1.Endpoint().Attrs["container_ip"] == "" || d1.Endpoint().Attrs["network"] != netName {
		t.Errorf("attrs = %v", d1.Endpoint().Attrs)
	}
	if err := d1.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cli.NetworkInspect(context.Background(), netName, network.InspectOptions{}); err != nil {
		t.Errorf("network removed while b still uses it: %v", err)
	}
	if err := d2.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cli.NetworkInspect(context.Background(), netName, network.InspectOptions{}); !client.IsErrNotFound(err) {
		t.Errorf("network still there after the last Teardown: %v", err)
	}
}

func TestContainerThatExitsFailsWithLogs(t *testing.T) {
	h := newHarness(t, "nginx")
	p := h.provider(Config{})
	req := h.request(providers.ServiceSpec{
		Name:    "broken",
		Image:   dockertest.Nginx,
		Command: []string{"nginx", "-c", "/nonexistent/nginx.conf", "-g", "daemon off;"},
		Ports:   []providers.Port{{Name: "http", Container: 80}}, // Docker picks the host port
	})
	dep, err := p.Provision(context.Background(), req)
	if err == nil {
		// Started: the engine's health wait finds it dead through Alive.
		t.Cleanup(func() { dep.Teardown(context.Background()) })
		err = waitReady(dep, dep.Endpoint().URL()+"/")
	}
	if err == nil {
		t.Fatal("a container that exits at once looked healthy")
	}
	msg := err.Error()
	for _, want := range []string{"exit code 1", "/nonexistent/nginx.conf", "No such file or directory", `"broken"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

func TestStartFailureLeavesNothing(t *testing.T) {
	h := newHarness(t, "nginx")
	p := h.provider(Config{})
	req := h.request(providers.ServiceSpec{
		Name:    "nocmd",
		Image:   dockertest.Nginx,
		Command: []string{"/no/such/binary"},
		Ports:   []providers.Port{{Name: "http", Container: 80}}, // Docker picks the host port
	})
	_, err := p.Provision(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "/no/such/binary") || !strings.Contains(err.Error(), "-nocmd") {
		t.Fatalf("Provision error = %v, want one naming the service and the missing binary", err)
	}
	// NoLeftovers runs in cleanup.
}

func TestPullPolicies(t *testing.T) {
	h := newHarness(t)
	req := h.request(providers.ServiceSpec{Name: "x", Image: "benchflow/does-not-exist:never"})
	_, err := h.provider(Config{Pull: PullNever}).Provision(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), `"benchflow/does-not-exist:never"`) || !strings.Contains(err.Error(), `pull = "never"`) {
		t.Errorf("pull = never, missing image: %v", err)
	}
	// No registry answers here: the error names the image.
	req = h.request(providers.ServiceSpec{Name: "x", Image: "registry.invalid/benchflow/none:1"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = h.provider(Config{}).Provision(ctx, req)
	if err == nil || !strings.Contains(err.Error(), `pulling image "registry.invalid/benchflow/none:1"`) {
		t.Errorf("pull from an unreachable registry: %v", err)
	}
	_, err = h.provider(Config{}).Provision(ctx, h.request(providers.ServiceSpec{Name: "x"}))
	if err == nil || !strings.Contains(err.Error(), "needs an image") {
		t.Errorf("no image: %v", err)
	}
	_, err = h.provider(Config{Network: NetworkNone}).Provision(ctx, h.request(providers.ServiceSpec{Name: "x", Image: dockertest.Nginx, Ports: []providers.Port{{Name: "http", Container: 80}}}))
	if err == nil || !strings.Contains(err.Error(), `network = "none"`) {
		t.Errorf("ports with network none: %v", err)
	}
}

func TestLimitsApply(t *testing.T) {
	h := newHarness(t, "nginx")
	p := h.provider(Config{
		CPUs:    0.5,
		CPUSet:  "0",
		Memory:  "64MiB",
		Ulimits: map[string]string{"nofile": "1024:2048"},
		Sysctls: map[string]string{"net.core.somaxconn": "1234"},
	})
	d := h.provision(p, h.request(providers.ServiceSpec{
		Name:  "nginx",
		Image: dockertest.Nginx,
		Env:   map[string]string{"BENCHFLOW_TEST": "yes"},
		Ports: []providers.Port{{Name: "http", Container: 80}}, // Docker picks the host port
	}))
	if err := waitReady(d, d.Endpoint().URL()+"/"); err != nil {
		t.Fatal(err)
	}
	info, err := h.cli.ContainerInspect(context.Background(), d.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	r := info.HostConfig.Resources
	if r.NanoCPUs != 500_000_000 || r.CpusetCpus != "0" || r.Memory != 64<<20 {
		t.Errorf("resources = nano %d cpuset %q memory %d", r.NanoCPUs, r.CpusetCpus, r.Memory)
	}
	// The limits reach the process: read them from the host's /proc.
	pid := info.State.Pid
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(limits), "Max open files            1024                 2048") {
		t.Errorf("nofile not applied:\n%s", limits)
	}
	if !slices.Contains(info.Config.Env, "BENCHFLOW_TEST=yes") {
		t.Errorf("env = %q", info.Config.Env)
	}
	// Sysctls are per network namespace: read it in the container's.
	if nsenter, err := exec.LookPath("nsenter"); err == nil {
		out, err := exec.Command(nsenter, "-t", fmt.Sprint(pid), "-n", "cat", "/proc/sys/net/core/somaxconn").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "1234" {
			t.Errorf("somaxconn in the container = %q (%v), want 1234", out, err)
		}
	}
	if info.HostConfig.Sysctls["net.core.somaxconn"] != "1234" {
		t.Errorf("sysctls = %v", info.HostConfig.Sysctls)
	}
}

// TestCancelledProvisionLeavesNothing cancels Provision at several points
// (before, during and after container creation) and checks that whatever
// was created is removed, either by Provision itself or by Teardown.
func TestCancelledProvisionLeavesNothing(t *testing.T) {
	h := newHarness(t, "nginx")
	netName := "bf-test-cancel-" + h.runID
	for i, delay := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond, 200 * time.Millisecond} {
		p := h.provider(Config{Network: netName})
		req := h.request(providers.ServiceSpec{Name: fmt.Sprintf("s%d", i), Image: dockertest.Nginx, Ports: []providers.Port{{Name: "http", Container: 80}}})
		ctx, cancel := context.WithCancel(context.Background())
		if delay == 0 {
			cancel()
		} else {
			time.AfterFunc(delay, cancel)
		}
		dep, err := p.Provision(ctx, req)
		cancel()
		if err == nil {
			// Ctrl-C after Provision: the engine tears down on a fresh
			// context.
			if err := dep.Teardown(context.Background()); err != nil {
				t.Errorf("delay %v: Teardown: %v", delay, err)
			}
		} else if !errors.Is(err, context.Canceled) {
			t.Logf("delay %v: %v", delay, err)
		}
		left, lerr := dockertest.Leftovers(context.Background(), h.cli, h.runID)
		if lerr != nil {
			t.Fatal(lerr)
		}
		if len(left) > 0 {
			t.Errorf("cancelled after %v (provision err %v): left %v", delay, err, left)
		}
	}
}

func TestGCRemovesCrashedRunLeftovers(t *testing.T) {
	h := newHarness(t, "nginx")
	ctx := context.Background()
	// What a crashed run leaves: a running container and its network. They
	// name this test process as their owner, so that the gc other tests
	// (and runs) start meanwhile keeps them: only the explicit run id
	// below removes them.
	labels := map[string]string{providers.LabelManaged: "true", providers.LabelRun: h.runID}
	providers.AddOwnerLabels(labels)
	nw, err := h.cli.NetworkCreate(ctx, "bf-test-gc-"+h.runID, network.CreateOptions{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.cli.ContainerCreate(ctx, &container.Config{Image: dockertest.Nginx, Labels: labels},
		&container.HostConfig{NetworkMode: container.NetworkMode("bf-test-gc-" + h.runID)}, nil, nil, "bf-test-gc-"+h.runID)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// Something of another run stays.
	other := map[string]string{providers.LabelManaged: "true", providers.LabelRun: h.runID + "-other"}
	providers.AddOwnerLabels(other)
	o, err := h.cli.ContainerCreate(ctx, &container.Config{Image: dockertest.Nginx, Labels: other}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer h.cli.ContainerRemove(ctx, o.ID, container.RemoveOptions{Force: true})

	typ, _ := providers.Lookup("docker")
	removed, err := typ.GC(ctx, &providers.GCRequest{RunID: h.runID})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(removed, "\n")
	if len(removed) != 2 || !strings.Contains(got, "container bf-test-gc-"+h.runID) || !strings.Contains(got, "network bf-test-gc-"+h.runID) {
		t.Errorf("GC removed:\n%s", got)
	}
	if _, err := h.cli.NetworkInspect(ctx, nw.ID, network.InspectOptions{}); !client.IsErrNotFound(err) {
		t.Errorf("network survived GC: %v", err)
	}
	if _, err := h.cli.ContainerInspect(ctx, o.ID); err != nil {
		t.Errorf("GC of run %s removed another run's container: %v", h.runID, err)
	}
}

// TestGCWithoutRunIDKeepsLiveRuns: gc at the start of apply must not remove
// what a run in progress (another benchflow process) created.
func TestGCWithoutRunIDKeepsLiveRuns(t *testing.T) {
	h := newHarness(t, "nginx")
	ctx := context.Background()
	host, _ := os.Hostname()
	// A finished process's pid stands for a crashed run.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprint(cmd.Process.Pid)
	mk := func(name, pid string) string {
		labels := map[string]string{providers.LabelManaged: "true", providers.LabelRun: h.runID, LabelHost: host, LabelPID: pid}
		c, err := h.cli.ContainerCreate(ctx, &container.Config{Image: dockertest.Nginx, Labels: labels}, nil, nil, nil, name+h.runID)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}) })
		return c.ID
	}
	live := mk("bf-test-live-", fmt.Sprint(os.Getpid()))
	crashed := mk("bf-test-crashed-", dead)
	// What GC(ctx, "") does, limited to this test's objects: other runs
	// may be in progress on this engine.
	f := ManagedFilter("")
	f.Add("label", providers.LabelRun+"="+h.runID)
	removed, err := gcFiltered(ctx, h.cli, f, &providers.GCRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(removed, "\n"), "bf-test-crashed-"+h.runID) {
		t.Errorf("GC did not remove the crashed run's container: %v", removed)
	}
	if _, err := h.cli.ContainerInspect(ctx, crashed); !client.IsErrNotFound(err) {
		t.Errorf("crashed run's container survived: %v", err)
	}
	if _, err := h.cli.ContainerInspect(ctx, live); err != nil {
		t.Errorf("GC removed the container of a live run: %v", err)
	}
}
