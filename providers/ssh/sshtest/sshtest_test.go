package sshtest_test

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

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

// TestShapeBoundsTransfer shapes a host's link to 50 Mbit/s and moves as
// much as it can each way for two seconds: the bytes that arrive never
// exceed the rate over the time they took, plus the bucket, with half the
// rate again of margin. A busy machine only moves fewer bytes; an unshaped
// veth moves gigabytes a second and fails it.
func TestShapeBoundsTransfer(t *testing.T) {
	h := sshtest.Start(t, 1)[0]
	const rate = 50_000_000
	h.Shape(t, rate)
	out, err := exec.Command("ip", "netns", "exec", h.NS, "tc", "qdisc", "show", "dev", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tbf") {
		t.Fatalf("no tbf on the host's eth0: %v: %s", err, out)
	}
	for _, dir := range []string{"to the host", "from the host"} {
		t.Run(dir, func(t *testing.T) {
			ln, err := net.Listen("tcp", net.JoinHostPort(h.Gateway, "0"))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			// The host's side in bash (/dev/tcp): it sends zeros, or
			// copies what it receives to its stdout, read here.
			script := "exec 3<>/dev/tcp/" + h.Gateway + "/" + port + "; exec head -c 1000000000 /dev/zero >&3"
			if dir == "to the host" {
				script = "exec 3<>/dev/tcp/" + h.Gateway + "/" + port + "; exec cat <&3"
			}
			cmd := exec.Command("ip", "netns", "exec", h.NS, "timeout", "60", "bash", "-c", script)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var src io.Reader = c
			if dir == "to the host" {
				src = stdout
				go func() { // send until the connection closes
					buf := make([]byte, 64<<10)
					for {
						if _, err := c.Write(buf); err != nil {
							return
						}
					}
				}()
			}
			start := time.Now()
			deadline := start.Add(2 * time.Second)
			var n int64
			buf := make([]byte, 64<<10)
			for time.Now().Before(deadline) {
				if f, ok := src.(interface{ SetReadDeadline(time.Time) error }); ok {
					f.SetReadDeadline(deadline)
				}
				k, err := src.Read(buf)
				n += int64(k)
				if err != nil {
					break
				}
			}
			elapsed := time.Since(start)
			// The host's side cannot have sent before the connection
			// existed, so elapsed covers every byte counted; the bucket
			// and the kernel's buffers on the host's side (bytes that
			// crossed the link before start) are allowed for.
			bound := int64(float64(rate)/8*elapsed.Seconds()*1.5) + sshtest.TBFBurst(rate) + 8<<20
			t.Logf("%s: %d bytes in %v (%.1f Mbit/s; bound %d bytes)", dir, n, elapsed, float64(n)*8/elapsed.Seconds()/1e6, bound)
			if n > bound {
				t.Errorf("%d bytes crossed a 50 Mbit/s link in %v: more than %d; the link is not shaped", n, elapsed, bound)
			}
			if n == 0 {
				t.Errorf("nothing crossed the shaped link in %v", elapsed)
			}
		})
	}
}
