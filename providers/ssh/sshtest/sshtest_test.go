package sshtest_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/benchflow/benchflow/providers/ssh/sshtest"
)

// TestHostAnswers logs in to a test host with its key, checking its host
// key against the known_hosts file, and runs a command there; after the
// test nothing of it is left (checked by the cleanup of TestCleanup).
func TestHostAnswers(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	key, err := os.ReadFile(h.IdentityFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := knownhosts.New(h.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)), &ssh.ClientConfig{
		User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Output("ip -4 -o addr show dev eth0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), h.Addr+"/24") {
		t.Errorf("the session does not run in the host's namespace: %s", out)
	}
}

// TestCleanup checks that a host's namespace and link are gone after its
// test.
func TestCleanup(t *testing.T) {
	var h *sshtest.Host
	t.Run("host", func(t *testing.T) { h = sshtest.Start(t, 1)[0] })
	if h == nil {
		t.Skip("no host started")
	}
	if _, err := os.Stat("/run/netns/" + h.NS); !os.IsNotExist(err) {
		t.Errorf("namespace %s left: %v", h.NS, err)
	}
	if _, err := net.InterfaceByName(h.Veth); err == nil {
		t.Errorf("link %s left", h.Veth)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(h.SSHDPid)); err == nil {
		t.Errorf("sshd %d left", h.SSHDPid)
	}
}
