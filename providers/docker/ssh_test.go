package docker

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/docker/dockertest"
	"github.com/benchflow/benchflow/providers/ssh/sshtest"
)

// TestHostAddressErrors: an engine address that is not a URL, has a
// scheme Docker's client does not know, or an ssh:// address Docker's SSH
// helper refuses is an error at host, saying what an address looks like.
func TestHostAddressErrors(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"docker.example.com", "is not an engine address like"},
		{"::bad", "is not an engine address like"},
		{"ftp://10.0.0.5", `unknown scheme "ftp"`},
		{"shh://bench@10.0.0.5", `Did you mean "ssh"`},
		{"ssh://", "ssh host connection is not valid"},
		{"ssh://bench@10.0.0.5?x=1", "ssh host connection is not valid"},
	} {
		cfg := Config{Host: tc.host}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "host") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("host = %q: error %v, want one at host saying %q", tc.host, err, tc.want)
		}
	}
	for _, host := range []string{"unix:///var/run/docker.sock", "tcp://10.0.0.5:2376", "ssh://bench@10.0.0.5", "ssh://10.0.0.5:2222"} {
		cfg := Config{Host: host}
		if err := cfg.Validate(); err != nil {
			t.Errorf("host = %q: %v", host, err)
		}
	}
	s, err := (&Config{Host: "ssh://bench@10.0.0.5:2222"}).validate()
	if err != nil || s.sshHost != "10.0.0.5" || s.bind != "0.0.0.0" {
		t.Errorf("ssh:// host: sshHost %q, bind %q, %v; want 10.0.0.5 and 0.0.0.0 (published on the remote host)", s.sshHost, s.bind, err)
	}
}

// TestSSHEngine drives the engine through Docker's SSH helper: the ssh
// client logs in to a test host (a network namespace running sshd) and
// runs `docker system dial-stdio` there, which reaches this machine's
// engine through its socket (the host shares this machine's files). The
// service's files are copied into the container (a remote engine cannot
// bind-mount them), nginx serves them at the bind address, and afterwards
// nothing is left: no container, no session on the host.
func TestSSHEngine(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("skipping: no ssh client (Debian: openssh-client)")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("skipping: no docker CLI, which `docker system dial-stdio` needs on the host")
	}
	hh := newHarness(t, "nginx")
	host := sshtest.Start(t, 1)[0]
	// OpenSSH looks a host on port 22 up by its bare address.
	known := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(known, []byte(host.Addr+" "+string(ssh.MarshalAuthorizedKey(host.HostKey))), 0o600)
	sshFlags = []string{"-i", host.IdentityFile, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "UserKnownHostsFile=" + known, "-o", "GlobalKnownHostsFile=/dev/null"}
	t.Cleanup(func() { sshFlags = nil })

	// The engine publishes on this machine; the link's address on this
	// side is what the test reaches (on a real remote host, the default
	// bind 0.0.0.0 and the host's address).
	p := hh.provider(Config{Host: "ssh://root@" + host.Addr, Bind: host.Gateway})
	hport := dockertest.FreePort(t)
	dir := t.TempDir()
	conf := `worker_processes 1;
error_log stderr;
events {}
http {
  access_log off;
  server {
    listen 80;
    location / { root /etc/benchflow/html; }
  }
}
`
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
	os.MkdirAll(filepath.Join(dir, "html"), 0o755)
	os.WriteFile(filepath.Join(dir, "html", "index.html"), []byte("copied over ssh\n"), 0o644)
	req := hh.request(providers.ServiceSpec{
		Name:    "nginx",
		Image:   dockertest.Nginx,
		Command: []string{"nginx", "-c", "/etc/benchflow/nginx.conf", "-g", "daemon off;"},
		Dir:     dir,
		Ports:   []providers.Port{{Name: "http", Container: 80, Host: hport}},
	})
	d := hh.provision(p, req)
	if ep := d.Endpoint(); ep.Host != host.Gateway || ep.Port != hport {
		t.Fatalf("endpoint = %+v, want %s:%d", ep, host.Gateway, hport)
	}
	url := "http://" + net.JoinHostPort(host.Gateway, itoa(hport)) + "/index.html"
	if err := waitReady(d, url); err != nil {
		t.Fatal(err)
	}
	if ok, n := load(t, url, 20); ok != 20 || n != 20*int64(len("copied over ssh\n")) {
		t.Errorf("20 GETs: %d ok, %d bytes", ok, n)
	}
	info, err := hh.cli.ContainerInspect(context.Background(), d.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Mounts) != 0 {
		t.Errorf("a remote engine's container has mounts of this machine's files: %+v", info.Mounts)
	}
	log, _ := os.ReadFile(filepath.Join(host.Dir, "sshd.log"))
	if !strings.Contains(string(log), "Accepted publickey for root") {
		t.Errorf("the engine was not reached through the host's sshd:\n%s", log)
	}
	t.Cleanup(func() { // after the teardown (cleanups run last first)
		p.mu.Lock()
		if p.cli != nil {
			p.cli.Close()
		}
		p.mu.Unlock()
		host.WaitEmpty(t)
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
