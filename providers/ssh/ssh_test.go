package ssh

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers"
	gossh "golang.org/x/crypto/ssh"

	"github.com/benchflow/benchflow/providers/ssh/sshtest"
)

// provider builds the provider of a `provider "ssh" "server"` block for h.
func provider(t *testing.T, h *sshtest.Host, edit func(*Config)) *Provider {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sshtest.ForgetBinary(t, exe)
	c := Config{Address: h.Addr, Port: h.Port, User: h.User, IdentityFile: h.IdentityFile, KnownHosts: h.KnownHosts}
	if edit != nil {
		edit(&c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	p, err := New("server", c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// spec is a service running argv with files written from the map.
func spec(t *testing.T, name string, argv []string, files map[string]string, port int) *providers.ProvisionRequest {
	t.Helper()
	dir := t.TempDir()
	s := providers.ServiceSpec{Name: name, Command: argv, Dir: dir}
	for n, data := range files {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Files = append(s.Files, providers.File{Name: n, HostPath: p, Mode: 0o644})
	}
	if port != 0 {
		s.Ports = []providers.Port{{Name: "http", Host: port}}
	}
	return &providers.ProvisionRequest{RunID: "20261207T000000Z-test", TrialID: "t1", Service: s, LogDir: t.TempDir(), Logf: t.Logf}
}

func nginxConf(dir, addr string, port int) string {
	return fmt.Sprintf(`worker_processes 1;
daemon off;
user root;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  server { listen %[2]s:%[3]d; location / { return 200 "hello\n"; } }
}
`, dir, addr, port)
}

// TestNginxOnHost runs nginx on a host over SSH, reaches it at the host's
// address across the link, and checks that teardown leaves nothing: no
// process in the host's namespace but its sshd, no run folder.
func TestNginxOnHost(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, nil)
	dir := p.ServiceDir("web")
	req := spec(t, "web", []string{"/usr/sbin/nginx", "-c", dir + "/nginx.conf", "-e", dir + "/error.log"},
		map[string]string{"nginx.conf": nginxConf(dir, h.Addr, 8080)}, 8080)
	ctx := context.Background()
	// version_command runs on the host (sshd sets SSH_CONNECTION there).
	v, err := p.RunVersion(ctx, []string{"/bin/sh", "-c", "echo $SSH_CONNECTION; /usr/sbin/nginx -v"})
	if err != nil || !strings.Contains(v, h.Addr+" 22") || !strings.Contains(v, "nginx version") {
		t.Errorf("version_command on the host: %q, %v", v, err)
	}
	dep, err := p.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	torn := false
	defer func() {
		if !torn {
			dep.Teardown(context.Background())
		}
	}()
	ep := dep.Endpoint()
	if ep.Host != h.Addr || ep.Port != 8080 || ep.Attrs["dir"] != dir {
		t.Errorf("endpoint %+v, want %s:8080 and dir %s", ep, h.Addr, dir)
	}
	var body string
	for i := 0; i < 200; i++ {
		if err := dep.(providers.Liveness).Alive(ctx); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(ep.URL() + "/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if body != "hello\n" {
		t.Fatalf("GET %s/: %q, want hello", ep.URL(), body)
	}
	pv := dep.(providers.VersionReporter).PlatformVersions(ctx)
	if pv["host_kernel"] == "" || pv["host_cores"] == "" || pv["rtt_us"] == "" || !strings.Contains(pv["ssh_host"], h.Addr) {
		t.Errorf("host environment %v: want kernel, cores and the host", pv)
	}
	if pids := h.Pids(t); !slicesContains(pids, dep.(*Deployment).pid) {
		t.Errorf("the service's pid %d is not in the host's namespace:%s", dep.(*Deployment).pid, sshtest.Describe(pids))
	}
	torn = true
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.WaitEmpty(t)
	if _, err := os.Stat(p.runDir); !os.IsNotExist(err) {
		t.Errorf("run folder %s left on the host: %v", p.runDir, err)
	}
	if b, err := os.ReadFile(filepath.Join(req.LogDir, "web.stderr.log")); err != nil {
		t.Errorf("the service's output was not copied back: %v", err)
	} else {
		t.Logf("stderr: %s", b)
	}
}

// provisionErr provisions a service that must fail, and checks that
// nothing is left on the host.
func provisionErr(t *testing.T, h *sshtest.Host, p *Provider, req *providers.ProvisionRequest) error {
	t.Helper()
	dep, err := p.Provision(context.Background(), req)
	if err == nil {
		dep.Teardown(context.Background())
		t.Fatal("Provision succeeded")
	}
	h.WaitEmpty(t)
	if _, serr := os.Stat(p.runDir); !os.IsNotExist(serr) {
		t.Errorf("run folder %s left: %v", p.runDir, serr)
	}
	return err
}

func wantAll(t *testing.T, err error, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q\nlacks %q", err, s)
		}
	}
}

// TestHostKeys: a host missing from known_hosts, or with another key
// there, is refused with the key's fingerprint and the line to check it.
func TestHostKeys(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	fp := strings.TrimSpace(fingerprint(h))
	req := spec(t, "web", []string{"/bin/true"}, nil, 0)

	empty := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(empty, nil, 0o600)
	err := provisionErr(t, h, provider(t, h, func(c *Config) { c.KnownHosts = empty }), req)
	wantAll(t, err, "is not in "+empty, fp, fmt.Sprintf("ssh-keyscan -p 22 %s", h.Addr), `provider "ssh" "server"`)

	_, other := sshtest.NewKey(t)
	changed := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(changed, []byte(h.KnownHostsLine(other)), 0o600)
	err = provisionErr(t, h, provider(t, h, func(c *Config) { c.KnownHosts = changed }), req)
	wantAll(t, err, "CHANGED", fp, changed+":1", "ssh-keyscan -p 22 "+h.Addr)
}

// TestWrongKey: a key the host does not accept, and a user it does not
// know, are refused naming the provider block.
func TestWrongKey(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	key, _ := sshtest.NewKey(t)
	kf := filepath.Join(t.TempDir(), "id")
	os.WriteFile(kf, key, 0o600)
	req := spec(t, "web", []string{"/bin/true"}, nil, 0)
	err := provisionErr(t, h, provider(t, h, func(c *Config) { c.IdentityFile = kf }), req)
	wantAll(t, err, `provider "ssh" "server"`, "logging in refused", "identity_file")
	err = provisionErr(t, h, provider(t, h, func(c *Config) { c.User = "nosuchuser" }), req)
	wantAll(t, err, `provider "ssh" "server"`, "nosuchuser@"+h.Addr, "logging in refused")
}

// TestCommandNotFound names the command and the host.
func TestCommandNotFound(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	err := provisionErr(t, h, provider(t, h, nil), spec(t, "web", []string{"ngnix", "-g", "daemon off;"}, nil, 0))
	wantAll(t, err, `command "ngnix" not found on the host`, h.Addr, `service "web"`)
}

// TestServiceDies: Alive reports the exit status and the last lines of
// its output.
func TestServiceDies(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, nil)
	dep, err := p.Provision(context.Background(), spec(t, "web", []string{"/bin/sh", "-c", "echo no config here >&2; exit 3"}, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	var aerr error
	for i := 0; i < 600 && aerr == nil; i++ {
		aerr = dep.(providers.Liveness).Alive(context.Background())
		time.Sleep(20 * time.Millisecond)
	}
	if aerr == nil {
		t.Fatal("Alive never reported the exit")
	}
	wantAll(t, aerr, "exit status 3", "no config here", h.Addr)
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.WaitEmpty(t)
}

// TestShellMetacharacters: argv, environment values and file names reach
// the host as they are, never through a shell.
func TestShellMetacharacters(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, nil)
	canary := filepath.Join(t.TempDir(), "pwned")
	evil := fmt.Sprintf("a'b\"c; touch %[1]s; $(touch %[1]s) `touch %[1]s` | touch %[1]s && x", canary)
	req := spec(t, "web", []string{"/usr/bin/printf", "%s|%s", evil, "${EVIL}"}, map[string]string{"f": "x"}, 0)
	req.Service.Env = map[string]string{"EVIL": evil}
	dep, err := p.Provision(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; i++ {
		if dep.(providers.Liveness).Alive(context.Background()) != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(req.LogDir, "web.stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != evil+"|${EVIL}" {
		t.Errorf("printf printed %q, want %q", out, evil+"|${EVIL}")
	}
	if _, err := os.Stat(canary); err == nil {
		t.Errorf("a shell ran the argument: %s exists", canary)
	}
	h.WaitEmpty(t)
}

// TestLinkCut: with the link down the controller's calls fail with the
// reason, and the helper, hearing nothing, stops the service itself.
func TestLinkCut(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, func(c *Config) { c.IdleTimeout = "15s" })
	dep, err := p.Provision(context.Background(), spec(t, "web", []string{"/bin/sleep", "600"}, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := dep.(providers.Liveness).Alive(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.LinkDown(t)
	linkUp := false
	defer func() {
		if !linkUp {
			h.LinkUp(t)
		}
	}()
	// The keepalive notices within pingEvery+pingTimeout.
	var aerr error
	for i := 0; i < 1200 && aerr == nil; i++ {
		aerr = dep.(providers.Liveness).Alive(context.Background())
		time.Sleep(50 * time.Millisecond)
	}
	if aerr == nil {
		t.Fatal("Alive reported the service alive for a minute across a cut link")
	}
	wantAll(t, aerr, "lost the connection to the host", "no answer from the host")
	terr := dep.Teardown(context.Background())
	if terr == nil {
		t.Fatal("Teardown reported success across a cut link")
	}
	wantAll(t, terr, "benchflow gc")
	// On the host: the helper stops the service once idle_timeout passes
	// (sshd's session notices the connection is gone when the link is up).
	h.WaitGone(t, "sshd:")
	h.LinkUp(t)
	linkUp = true
	h.WaitEmpty(t)
	if _, err := os.Stat(p.runDir); !os.IsNotExist(err) {
		t.Errorf("run folder %s left: %v", p.runDir, err)
	}
}

// TestGC: gc reaches the host recorded in the state folder, finds the
// run's service by its markers (sleep) and by its working folder (nginx
// rewrites its environment), stops them and removes the run folder.
// (Named by run id: a leftover whose helper is gone would also be stopped
// by any local gc running on this shared machine, so the test could not
// tell who stopped it.)
func TestGC(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	t.Setenv("BENCHFLOW_STATE_DIR", t.TempDir())
	ctx := context.Background()
	p := provider(t, h, nil)
	req := spec(t, "sleeper", []string{"/bin/sleep", "600"}, nil, 0)
	d1, err := p.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Teardown(ctx)
	dir := p.ServiceDir("web")
	d2, err := p.Provision(ctx, spec(t, "web", []string{"/usr/sbin/nginx", "-c", dir + "/nginx.conf", "-e", dir + "/error.log"},
		map[string]string{"nginx.conf": nginxConf(dir, h.Addr, 8080)}, 8080))
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Teardown(ctx)
	for i := 0; i < 600 && !hasComm(t, h, "nginx"); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	removed, err := GC(ctx, &providers.GCRequest{RunID: req.RunID})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(removed, "\n")
	t.Logf("removed:\n%s", all)
	for _, want := range []string{`(sleep) of service "sleeper"`, `(nginx) of service "web"`, "folder " + p.runDir} {
		if !strings.Contains(all, want) {
			t.Errorf("gc did not remove %s", want)
		}
	}
	if _, err := os.Stat(p.runDir); !os.IsNotExist(err) {
		t.Errorf("run folder %s left: %v", p.runDir, err)
	}
	for _, pid := range []int{d1.(*Deployment).pid, d2.(*Deployment).pid} {
		if slicesContains(h.Pids(t), pid) {
			t.Errorf("service process %d still runs after gc", pid)
		}
	}
	d1.Teardown(ctx)
	d2.Teardown(ctx)
	h.WaitEmpty(t)
}

func hasComm(t *testing.T, h *sshtest.Host, comm string) bool {
	for _, p := range h.Pids(t) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if strings.TrimSpace(string(b)) == comm {
			return true
		}
	}
	return false
}

// TestValidate: the block's errors name their attribute.
func TestValidate(t *testing.T) {
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, nil, 0o600)
	err := (&Config{Port: 70000, KnownHosts: kh, Dir: "tmp", IdleTimeout: "1s"}).Validate()
	attrs, _ := providers.ConfigErrors(err)
	got := map[string]bool{}
	for _, a := range attrs {
		got[a.Attr] = true
	}
	for _, a := range []string{"address", "port", "dir", "idle_timeout"} {
		if !got[a] {
			t.Errorf("no error for %s in %v", a, err)
		}
	}
	err = (&Config{Address: "10.0.0.2", KnownHosts: filepath.Join(t.TempDir(), "none")}).Validate()
	wantAll(t, err, "known_hosts", "ssh-keyscan -p 22 10.0.0.2")
}

// fingerprint is the SHA256 fingerprint of h's host key.
func fingerprint(h *sshtest.Host) string { return gossh.FingerprintSHA256(h.HostKey) }

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestOtherArchitecture: a host whose `uname -sm` is not this binary's
// system is refused before anything is copied there.
func TestOtherArchitecture(t *testing.T) {
	fake := t.TempDir()
	os.WriteFile(filepath.Join(fake, "uname"), []byte("#!/bin/sh\necho Linux riscv64\n"), 0o755)
	h := sshtest.StartWith(t, 1, sshtest.Options{SSHDConfig: []string{"SetEnv PATH=" + fake + ":/usr/sbin:/usr/bin:/sbin:/bin"}})[0]
	err := provisionErr(t, h, provider(t, h, nil), spec(t, "web", []string{"/bin/true"}, nil, 0))
	wantAll(t, err, `the host runs "Linux riscv64"`, "built for linux/", `provider "ssh" "server"`)
}

// TestUnreachable: nothing listening at the port is a located error.
func TestUnreachable(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	err := provisionErr(t, h, provider(t, h, func(c *Config) { c.Port = 2222 }), spec(t, "web", []string{"/bin/true"}, nil, 0))
	wantAll(t, err, `provider "ssh" "server"`, h.Addr+":2222", "cannot reach the host", "connection refused")
}

// TestAgent logs in with the key held by ssh-agent when no identity_file
// is set.
func TestAgent(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	agentBin, err := exec.LookPath("ssh-agent")
	if err != nil {
		t.Skip("no ssh-agent (openssh-client)")
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agentCmd := exec.Command(agentBin, "-D", "-a", sock)
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { agentCmd.Process.Kill(); agentCmd.Wait() }()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	add := exec.Command("ssh-add", h.IdentityFile)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	p := provider(t, h, func(c *Config) { c.IdentityFile = "" })
	dep, err := p.Provision(context.Background(), spec(t, "web", []string{"/bin/sleep", "60"}, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.WaitEmpty(t)
}

// TestSudo runs the helper, and so the service, through sudo -n.
func TestSudo(t *testing.T) {
	if _, err := exec.LookPath("sudo"); err != nil {
		t.Skip("no sudo on this machine")
	}
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, func(c *Config) { c.Sudo = true })
	dep, err := p.Provision(context.Background(), spec(t, "web", []string{"/bin/sleep", "60"}, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*Deployment)
	cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d.c.hello.PID))
	parent := ""
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.c.hello.PID)); err == nil {
		f := strings.Fields(string(st))
		pp, _ := os.ReadFile(fmt.Sprintf("/proc/%s/comm", f[3]))
		parent = strings.TrimSpace(string(pp))
	}
	if parent != "sudo" {
		t.Errorf("the helper (%q) is not sudo's child (parent %q)", cl, parent)
	}
	if err := dep.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.WaitEmpty(t)
}

// TestControlTraffic: while a service runs and nothing is asked of the
// host, the control channel carries only the keepalive — bounded by the
// number of pings that can fall in the window, whatever the machine's
// speed (a slow machine pings less, never more).
func TestControlTraffic(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	p := provider(t, h, nil)
	dep, err := p.Provision(context.Background(), spec(t, "web", []string{"/bin/sleep", "60"}, nil, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Teardown(context.Background())
	c := dep.(*Deployment).c
	start, b0 := time.Now(), c.bytes.Bytes()
	for i := 0; i < 30; i++ { // the engine's liveness checks, which send nothing
		if err := dep.(providers.Liveness).Alive(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	el, n := time.Since(start), c.bytes.Bytes()-b0
	pings := int64(el/pingEvery) + 2
	t.Logf("%d bytes in %s (%.0f B/s), at most %d pings", n, el.Round(time.Millisecond), float64(n)/el.Seconds(), pings)
	if limit := pings * 512; n > limit {
		t.Errorf("the control channel carried %d bytes in %s, more than %d pings of 512 bytes", n, el, pings)
	}
}
