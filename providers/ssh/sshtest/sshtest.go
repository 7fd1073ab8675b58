// Package sshtest starts real OpenSSH servers on this machine for tests:
// each in a network namespace of its own (named bfssh-<random>-<n>),
// joined to the root namespace by a veth pair with addresses from
// 10.213.0.0/16, running Debian's /usr/sbin/sshd with a generated host key,
// an authorized test key and a configuration of its own. Tests connect
// from the root namespace as root, as they would to another machine.
//
// Everything is removed by t.Cleanup, also after a failure: every process
// in the namespaces (sshd, its sessions, what they started), the
// namespaces, the veth pairs and the files. Without root the tests skip
// with the reason; under CI=true they fail instead.
package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHD is the OpenSSH server the hosts run.
const SSHD = "/usr/sbin/sshd"

// Host is one OpenSSH server in a network namespace of its own.
type Host struct {
	// NS is the network namespace; Veth the root namespace's end of the
	// link to it (ip link set Veth down cuts the host off).
	NS, Veth string
	// Addr is the host's address; Gateway the root namespace's address
	// on the same link (where the host reaches the controller).
	Addr, Gateway string
	Port          int
	User          string
	// IdentityFile holds the authorized private key (OpenSSH format);
	// KnownHosts lists the host's key as "[Addr]:Port" would be checked.
	IdentityFile, KnownHosts string
	// HostKey is the host's public key.
	HostKey ssh.PublicKey
	// Dir holds the host's files (config, keys, logs).
	Dir string
	// SSHDPid is the listening sshd's pid.
	SSHDPid  int
	sshdDone chan struct{}
	t        testing.TB
}

// Require skips t when this machine cannot start test hosts (not root, no
// sshd, no ip), naming the reason; with CI=true it fails instead.
func Require(t testing.TB) {
	t.Helper()
	var why string
	switch {
	case os.Geteuid() != 0:
		why = "network namespaces and sshd need root"
	case !executable(SSHD):
		why = SSHD + " is not installed (Debian: openssh-server)"
	default:
		if _, err := exec.LookPath("ip"); err != nil {
			why = "ip (iproute2) is not installed"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot start SSH test hosts: %s (CI=true: these tests must run)", why)
	}
	t.Skipf("cannot start SSH test hosts: %s", why)
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Options change the hosts Start makes.
type Options struct {
	// SSHDConfig lines are added to each host's sshd_config ("SetEnv
	// PATH=/x:/usr/bin:/bin" gives the sessions another PATH).
	SSHDConfig []string
}

// Start starts n hosts and registers their removal with t.Cleanup.
func Start(t testing.TB, n int) []*Host {
	t.Helper()
	return StartWith(t, n, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, n int, o Options) []*Host {
	t.Helper()
	Require(t)
	// sshd's privilege separation folder (the package makes it at boot
	// through tmpfiles; a container may not have it).
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("creating /run/sshd: %v", err)
	}
	tag := randHex(3)
	dir := t.TempDir()
	clientKey, clientPub := newKey(t)
	idFile := filepath.Join(dir, "id_ed25519")
	writeFile(t, idFile, clientKey, 0o600)
	var hosts []*Host
	for i := 0; i < n; i++ {
		h := &Host{
			NS: fmt.Sprintf("bfssh-%s-%d", tag, i), Veth: fmt.Sprintf("bfssh-%s-%d", tag, i),
			Port: 22, User: "root", IdentityFile: idFile, Dir: filepath.Join(dir, "host"+strconv.Itoa(i)), t: t,
		}
		if err := os.Mkdir(h.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.remove)
		h.setupNet(t)
		h.startSSHD(t, clientPub, o.SSHDConfig)
		hosts = append(hosts, h)
	}
	return hosts
}

// setupNet makes the namespace, the veth pair and the addresses.
func (h *Host) setupNet(t testing.TB) {
	t.Helper()
	subnet := freeSubnet(t)
	h.Gateway, h.Addr = fmt.Sprintf("10.213.%d.1", subnet), fmt.Sprintf("10.213.%d.2", subnet)
	run(t, "ip", "netns", "add", h.NS)
	run(t, "ip", "link", "add", h.Veth, "type", "veth", "peer", "name", "eth0", "netns", h.NS)
	run(t, "ip", "addr", "add", h.Gateway+"/24", "dev", h.Veth)
	run(t, "ip", "link", "set", h.Veth, "up")
	h.run(t, "ip", "addr", "add", h.Addr+"/24", "dev", "eth0")
	h.run(t, "ip", "link", "set", "eth0", "up")
	h.run(t, "ip", "link", "set", "lo", "up")
}

// freeSubnet picks a third octet no address of this machine uses.
func freeSubnet(t testing.TB) int {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr show: %v", err)
	}
	for tries := 0; tries < 100; tries++ {
		n, _ := rand.Int(rand.Reader, big.NewInt(250))
		s := int(n.Int64()) + 1
		if !bytes.Contains(out, []byte(fmt.Sprintf(" 10.213.%d.", s))) {
			return s
		}
	}
	t.Fatal("no free subnet in 10.213.0.0/16")
	return 0
}

// startSSHD writes the host's key and configuration, checks it with
// sshd -t and starts sshd in the namespace.
func (h *Host) startSSHD(t testing.TB, clientPub ssh.PublicKey, extra []string) {
	t.Helper()
	hostKey, hostPub := newKey(t)
	h.HostKey = hostPub
	keyFile := filepath.Join(h.Dir, "ssh_host_ed25519_key")
	writeFile(t, keyFile, hostKey, 0o600)
	auth := filepath.Join(h.Dir, "authorized_keys")
	writeFile(t, auth, ssh.MarshalAuthorizedKey(clientPub), 0o600)
	cfg := filepath.Join(h.Dir, "sshd_config")
	writeFile(t, cfg, []byte(strings.Join(append([]string{
		"Port " + strconv.Itoa(h.Port),
		"ListenAddress " + h.Addr,
		"HostKey " + keyFile,
		"PidFile " + filepath.Join(h.Dir, "sshd.pid"),
		"AuthorizedKeysFile " + auth,
		"UsePAM no",
		"UseDNS no",
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"Subsystem sftp internal-sftp",
		"LogLevel VERBOSE",
	}, extra...), "\n")+"\n"), 0o600)
	h.KnownHosts = filepath.Join(h.Dir, "known_hosts")
	writeFile(t, h.KnownHosts, []byte(h.KnownHostsLine(hostPub)), 0o600)
	if out, err := exec.Command(SSHD, "-t", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("sshd -t -f %s: %v\n%s", cfg, err, out)
	}
	logf, err := os.Create(filepath.Join(h.Dir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("ip", "netns", "exec", h.NS, SSHD, "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sshd: %v", err)
	}
	h.SSHDPid = cmd.Process.Pid // ip netns exec execs sshd
	h.sshdDone = make(chan struct{})
	go func() { cmd.Wait(); close(h.sshdDone) }()
	// Ready once it accepts a connection and greets.
	addr := net.JoinHostPort(h.Addr, strconv.Itoa(h.Port))
	var last error
	for i := 0; i < 300; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 4)
			_, err = c.Read(b)
			c.Close()
			if err == nil && string(b) == "SSH-" {
				return
			}
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
	t.Fatalf("sshd on %s never answered: %v\n%s", addr, last, log)
}

// KnownHostsLine is a known_hosts line giving key for this host.
func (h *Host) KnownHostsLine(key ssh.PublicKey) string {
	return fmt.Sprintf("[%s]:%d %s", h.Addr, h.Port, ssh.MarshalAuthorizedKey(key))
}

// NewKey generates an ed25519 key pair: the private key in OpenSSH's PEM
// format, and the public key.
func NewKey(t testing.TB) ([]byte, ssh.PublicKey) { return newKey(t) }

func newKey(t testing.TB) ([]byte, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(blk), sp
}

// LinkDown cuts the host off (its end of the link stays up: the host's
// processes see no error, only silence). LinkUp restores it.
func (h *Host) LinkDown(t testing.TB) { t.Helper(); run(t, "ip", "link", "set", h.Veth, "down") }

// LinkUp restores the link LinkDown cut.
func (h *Host) LinkUp(t testing.TB) { t.Helper(); run(t, "ip", "link", "set", h.Veth, "up") }

// Pids lists the processes running in the host's namespace, sshd's
// listener excluded.
func (h *Host) Pids(t testing.TB) []int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", h.NS).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", h.NS, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil && p != h.SSHDPid {
			pids = append(pids, p)
		}
	}
	return pids
}

// Describe names each pid with its command line, for a failure message.
func Describe(pids []int) string {
	var b strings.Builder
	for _, p := range pids {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		fmt.Fprintf(&b, "\n  %d: %s", p, strings.ReplaceAll(strings.TrimRight(string(cl), "\x00"), "\x00", " "))
	}
	return b.String()
}

// WaitEmpty waits until no process but sshd's listener runs in the host's
// namespace (a closing session takes a moment to exit) and fails t,
// listing them, when some remain after a minute.
func (h *Host) WaitEmpty(t testing.TB) {
	t.Helper()
	h.WaitGone(t, "")
}

// WaitGone waits until no process in the host's namespace but sshd's
// listener and those whose command line starts with except ("sshd:", the
// sessions of a cut link, say) runs, and fails t, listing them, when some
// remain after a minute.
func (h *Host) WaitGone(t testing.TB, except string) {
	t.Helper()
	var left []int
	for i := 0; i < 600; i++ {
		left = left[:0]
		for _, p := range h.Pids(t) {
			cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if except == "" || !strings.HasPrefix(string(cl), except) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("processes left on host %s:%s", h.NS, Describe(left))
}

// run runs a command in the host's namespace.
func (h *Host) run(t testing.TB, argv ...string) {
	t.Helper()
	run(t, append([]string{"ip", "netns", "exec", h.NS}, argv...)...)
}

// remove kills every process in the namespace and removes the namespace
// and the link; it reports failures without stopping.
func (h *Host) remove() {
	for round := 0; round < 50; round++ {
		out, err := exec.Command("ip", "netns", "pids", h.NS).Output()
		if err != nil {
			break // no namespace
		}
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, f := range pids {
			if p, err := strconv.Atoi(f); err == nil {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if h.sshdDone != nil {
		select { // reaped, so its pid is gone
		case <-h.sshdDone:
		case <-time.After(10 * time.Second):
		}
	}
	exec.Command("ip", "link", "del", h.Veth).Run()
	if out, err := exec.Command("ip", "netns", "del", h.NS).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("No such file")) {
		h.t.Errorf("removing namespace %s: %v: %s", h.NS, err, out)
	}
}

func run(t testing.TB, argv ...string) {
	t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
}

func writeFile(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ForgetBinary removes, after the test, the copy of exe (a benchflow
// binary, or a test binary acting as one) that the ssh provider puts in
// the hosts' cache (~/.cache/benchflow/bin/<sha256>/ of the login user,
// root here: the hosts share this machine's files), unless it was there
// before the test.
func ForgetBinary(t testing.TB, exe string) {
	t.Helper()
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := sha256.New()
	if _, err := io.Copy(s, f); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".cache", "benchflow", "bin", hex.EncodeToString(s.Sum(nil)))
	if _, err := os.Stat(dir); err == nil {
		return
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
}

// Shape limits the link between the host and the root namespace to
// bitsPerSecond in each direction, with tc's token bucket filter (tbf) on
// both ends of the veth pair: the root namespace's end shapes what goes to
// the host, the host's eth0 what comes from it. It replaces an earlier
// shape; the qdiscs go with the link when the host is removed. tbf and
// htb are what this kernel has (no netem), so the link gets a rate, not a
// delay.
func (h *Host) Shape(t testing.TB, bitsPerSecond int64) {
	t.Helper()
	args := TBF(bitsPerSecond)
	run(t, append([]string{"tc", "qdisc", "replace", "dev", h.Veth, "root"}, args...)...)
	h.run(t, append([]string{"tc", "qdisc", "replace", "dev", "eth0", "root"}, args...)...)
}

// TBF is the argument list of a tbf qdisc (after "tc qdisc replace dev X
// root") limiting a link to bitsPerSecond: a bucket of 10 ms of the rate,
// at least 256 KiB (veth hands tbf 64 KiB GSO packets, and a bucket
// smaller than a packet would stall it), and a queue of 50 ms of the rate.
func TBF(bitsPerSecond int64) []string {
	burst := TBFBurst(bitsPerSecond)
	limit := bitsPerSecond/8/20 + burst
	return []string{"tbf", "rate", strconv.FormatInt(bitsPerSecond, 10) + "bit",
		"burst", strconv.FormatInt(burst, 10), "limit", strconv.FormatInt(limit, 10)}
}

// TBFBurst is the bucket TBF gives a rate, in bytes: what the link may send
// at once beyond the rate.
func TBFBurst(bitsPerSecond int64) int64 {
	burst := bitsPerSecond / 8 / 100
	if burst < 256<<10 {
		burst = 256 << 10
	}
	return burst
}
