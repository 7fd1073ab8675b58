package ssh

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/benchflow/benchflow/engine/tailbuf"
	"github.com/benchflow/benchflow/providers"
)

// callTimeout bounds one request to the helper (a cut link is noticed by
// it, as by the keepalive).
const callTimeout = 30 * time.Second

// pingEvery is how often the controller tells the helper it is still
// there (about 120 bytes both ways, the only traffic of the control
// channel while a load runs); the helper's idle time must be well above
// it.
const pingEvery = time.Second

// pingTimeout is how long a ping may go unanswered before the connection
// is taken for dead (and every service on it with it): a cut link fails
// the trial within pingEvery+pingTimeout.
const pingTimeout = 10 * time.Second

// target is what a connection is made from: one provider block's
// settings.
type target struct {
	Provider     string // the block's label, for errors
	Address      string
	Port         int
	User         string
	IdentityFile string
	KnownHosts   string
	Sudo         bool
	Idle         time.Duration
}

func (t target) addr() string { return net.JoinHostPort(t.Address, strconv.Itoa(t.Port)) }

// where names the block and the host in errors.
func (t target) where() string {
	return fmt.Sprintf("provider \"ssh\" %q (%s@%s)", t.Provider, t.User, t.addr())
}

// conn is a connection to a host with its helper running.
type conn struct {
	t      target
	client *gossh.Client
	sess   *gossh.Session
	stdin  io.WriteCloser
	hello  *hello
	bin    string // the copy of benchflow on the host
	bytes  *countingConn

	wmu     sync.Mutex // serializes writes to stdin
	mu      sync.Mutex
	nextID  int
	pending map[int]chan response
	exits   map[int]*exitStatus // processes the helper said ended
	dead    error
	done    chan struct{}
	refs    int
}

var (
	poolMu sync.Mutex
	pool   = map[target]*conn{}
)

// linger is how long a connection no deployment uses stays open: the
// next trial's services (or the version_command before them) reuse it.
var linger = 10 * time.Second

// acquire returns the connection to t's host, connecting and starting the
// helper when there is none; release gives it back.
func acquire(ctx context.Context, t target) (*conn, error) {
	poolMu.Lock()
	defer poolMu.Unlock()
	if c := pool[t]; c != nil && c.err() == nil && c.refs >= 0 {
		c.refs++
		return c, nil
	}
	c, err := dial(ctx, t)
	if err != nil {
		return nil, err
	}
	c.refs = 1
	pool[t] = c
	return c, nil
}

// release gives back a connection; the last user's release closes it
// after linger unless it is acquired again (at once when it is dead).
func (c *conn) release() {
	poolMu.Lock()
	defer poolMu.Unlock()
	c.refs--
	if c.refs > 0 {
		return
	}
	if c.err() != nil {
		if pool[c.t] == c {
			delete(pool, c.t)
		}
		go c.close()
		return
	}
	time.AfterFunc(linger, func() {
		poolMu.Lock()
		if c.refs > 0 {
			poolMu.Unlock()
			return
		}
		c.refs = -1 << 30 // closed: never handed out again
		if pool[c.t] == c {
			delete(pool, c.t)
		}
		poolMu.Unlock()
		c.close()
	})
}

func (c *conn) close() {
	if c.stdin != nil {
		// Never beside a write: x/crypto/ssh's CloseWrite and Write share
		// the channel's EOF flag without a lock. A write blocked by a dead
		// link holds wmu until the connection drops, so after a while the
		// connection is dropped first (the write then fails and lets go).
		locked := make(chan struct{})
		go func() { c.wmu.Lock(); close(locked) }()
		select {
		case <-locked:
		case <-time.After(5 * time.Second):
			c.client.Close()
			<-locked
		}
		c.stdin.Close() // the helper cleans up and exits on EOF
		c.wmu.Unlock()
	}
	if c.sess != nil {
		// Give it the moment it needs, then drop the connection.
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
		}
		c.sess.Close()
	}
	c.client.Close()
}

func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// clientConfig is the SSH client configuration of t: its key or the agent,
// and host keys checked against known_hosts.
func clientConfig(t target) (*gossh.ClientConfig, error) {
	var auth []gossh.AuthMethod
	if t.IdentityFile != "" {
		b, err := os.ReadFile(t.IdentityFile)
		if err != nil {
			return nil, fmt.Errorf("%s: identity_file: %w", t.where(), err)
		}
		signer, err := gossh.ParsePrivateKey(b)
		var pp *gossh.PassphraseMissingError
		if errors.As(err, &pp) {
			return nil, fmt.Errorf("%s: identity_file %s is protected by a passphrase: load it into ssh-agent (ssh-add %s) and leave identity_file unset", t.where(), t.IdentityFile, t.IdentityFile)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: identity_file %s: %w", t.where(), t.IdentityFile, err)
		}
		auth = append(auth, gossh.PublicKeys(signer))
	} else if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		ac, err := net.Dial("unix", sock)
		if err != nil {
			return nil, fmt.Errorf("%s: no identity_file, and ssh-agent at SSH_AUTH_SOCK=%s cannot be reached: %w", t.where(), sock, err)
		}
		auth = append(auth, gossh.PublicKeysCallback(agent.NewClient(ac).Signers))
	} else {
		return nil, fmt.Errorf("%s: no key to log in with: set identity_file, or run ssh-agent (SSH_AUTH_SOCK) with the key loaded", t.where())
	}
	cb, err := knownhosts.New(t.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("%s: known_hosts: %w", t.where(), err)
	}
	cfg := &gossh.ClientConfig{
		User: t.User, Auth: auth, Timeout: 15 * time.Second,
		HostKeyCallback: func(hostname string, remote net.Addr, key gossh.PublicKey) error {
			return hostKeyError(t, cb(hostname, remote, key), key)
		},
	}
	// Ask for the kinds of key known_hosts holds for the host, so a host
	// known by its ed25519 key is not taken for one whose key changed.
	if known := knownKeys(cb, t); len(known) > 0 {
		cfg.HostKeyAlgorithms = known
	}
	return cfg, nil
}

// knownKeys lists the algorithms of the keys known_hosts holds for t.
func knownKeys(cb gossh.HostKeyCallback, t target) []string {
	probe := probeKey{}
	err := cb(t.addr(), &net.TCPAddr{IP: net.ParseIP(t.Address), Port: t.Port}, probe)
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, k := range ke.Want {
		algs := []string{k.Key.Type()}
		if k.Key.Type() == gossh.KeyAlgoRSA {
			algs = []string{gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256, gossh.KeyAlgoRSA}
		}
		for _, a := range algs {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// probeKey is a key no host has.
type probeKey struct{}

func (probeKey) Type() string                                   { return "benchflow-probe" }
func (probeKey) Marshal() []byte                                { return []byte("benchflow-probe") }
func (probeKey) Verify(data []byte, sig *gossh.Signature) error { return errors.New("probe") }

// hostKeyError explains a host key known_hosts does not vouch for.
func hostKeyError(t target, err error, key gossh.PublicKey) error {
	if err == nil {
		return nil
	}
	fp := gossh.FingerprintSHA256(key)
	scan := fmt.Sprintf("ssh-keyscan -p %d %s", t.Port, t.Address)
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &re):
		return fmt.Errorf("host key of %s (%s %s) is marked revoked in %s:%d: refusing to connect", t.addr(), key.Type(), fp, re.Revoked.Filename, re.Revoked.Line)
	case errors.As(err, &ke) && len(ke.Want) == 0:
		return fmt.Errorf("host %s is not in %s: it offered the %s key %s. Check that fingerprint against the host's own (on it: ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub), then add the key: %s >> %s",
			t.addr(), t.KnownHosts, key.Type(), fp, keyFileKind(key.Type()), scan, t.KnownHosts)
	case errors.As(err, &ke):
		w := ke.Want[0]
		return fmt.Errorf("host key of %s CHANGED: %s:%d holds %s %s, the host offered %s %s. Someone may be intercepting the connection, or the host was reinstalled: check the fingerprint on the host (ssh-keygen -lf /etc/ssh/ssh_host_%s_key.pub), then replace that line (%s)",
			t.addr(), w.Filename, w.Line, w.Key.Type(), gossh.FingerprintSHA256(w.Key), key.Type(), fp, keyFileKind(key.Type()), scan)
	}
	return err
}

func keyFileKind(typ string) string {
	switch {
	case strings.Contains(typ, "ed25519"):
		return "ed25519"
	case strings.Contains(typ, "ecdsa"):
		return "ecdsa"
	}
	return "rsa"
}

// dial connects, checks the host's system, puts this binary there and
// starts the helper.
func dial(ctx context.Context, t target) (*conn, error) {
	cfg, err := clientConfig(t)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 15 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", t.addr())
	if err != nil {
		return nil, fmt.Errorf("%s: cannot reach the host: %w", t.where(), err)
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	} else {
		nc.SetDeadline(time.Now().Add(30 * time.Second))
	}
	cc := &countingConn{Conn: nc}
	nc = cc
	sc, chans, reqs, err := gossh.NewClientConn(nc, t.addr(), cfg)
	if err != nil {
		nc.Close()
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("%s: logging in refused (%v): check user and identity_file (or the keys in ssh-agent), and that the public key is in ~%s/.ssh/authorized_keys on the host", t.where(), err, t.User)
		}
		return nil, fmt.Errorf("%s: %w", t.where(), err)
	}
	nc.SetDeadline(time.Time{})
	c := &conn{t: t, client: gossh.NewClient(sc, chans, reqs), pending: map[int]chan response{}, exits: map[int]*exitStatus{}, done: make(chan struct{}), bytes: cc}
	if err := c.startHelper(ctx); err != nil {
		c.client.Close()
		return nil, fmt.Errorf("%s: %w", t.where(), err)
	}
	go c.keepalive()
	return c, nil
}

// run runs a fixed command (no value of the pipeline in it) and returns
// its output.
func (c *conn) run(cmd string) (string, error) {
	s, err := c.client.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return strings.TrimSpace(string(out)), err
}

// unameArch maps this binary's GOOS/GOARCH to `uname -sm`.
func unameArch() string {
	m := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "arm": "armv7l", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
	a := m[runtime.GOARCH]
	if a == "" {
		a = runtime.GOARCH
	}
	return a
}

var selfHash = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
})

// startHelper checks the host's system, copies this binary to its cache
// when it is not there yet and starts `benchflow remote-helper`.
func (c *conn) startHelper(ctx context.Context) error {
	out, err := c.run("uname -sm")
	if err != nil {
		return fmt.Errorf("uname -sm on the host: %v: %s", err, out)
	}
	f := strings.Fields(out)
	wantArch := unameArch()
	if len(f) != 2 || !strings.EqualFold(f[0], runtime.GOOS) || (f[1] != wantArch && !(wantArch == "aarch64" && f[1] == "arm64")) {
		return fmt.Errorf("the host runs %q, and this benchflow is built for %s/%s: it copies itself to the host to drive it, so run benchflow from a machine of the host's system (or build one for it: GOOS=linux GOARCH=… make build)", out, runtime.GOOS, runtime.GOARCH)
	}
	sum, err := selfHash()
	if err != nil {
		return fmt.Errorf("reading this benchflow's own binary: %w", err)
	}
	fc, err := sftp.NewClient(c.client)
	if err != nil {
		return fmt.Errorf("opening SFTP (the host's sshd needs the sftp subsystem): %w", err)
	}
	defer fc.Close()
	home, err := fc.Getwd()
	if err != nil {
		return fmt.Errorf("SFTP: the home folder: %w", err)
	}
	dir := path.Join(home, ".cache", "benchflow", "bin", sum)
	bin := path.Join(dir, "benchflow")
	for attempt := 0; ; attempt++ {
		if _, err := fc.Stat(bin); err != nil {
			if err := upload(fc, dir, bin); err != nil {
				return err
			}
		}
		err := c.launch(ctx, bin)
		if err == nil && c.hello.SHA256 == sum {
			c.bin = bin
			return nil
		}
		if err == nil {
			err = fmt.Errorf("the copy of benchflow at %s on the host has sha256 %s, want %s", bin, c.hello.SHA256, sum)
			c.stopLaunch()
		}
		if attempt == 1 {
			return err
		}
		fc.Remove(bin) // damaged: copy it again
	}
}

// upload copies this binary to bin through a temporary name.
func upload(fc *sftp.Client, dir, bin string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := fc.MkdirAll(dir); err != nil {
		return fmt.Errorf("SFTP: creating %s on the host: %w", dir, err)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := bin + ".tmp-" + hex.EncodeToString(rnd[:])
	dst, err := fc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("SFTP: creating %s on the host: %w", tmp, err)
	}
	if _, err := dst.ReadFrom(src); err != nil {
		dst.Close()
		fc.Remove(tmp)
		return fmt.Errorf("SFTP: copying benchflow to %s on the host (is its disk full?): %w", tmp, err)
	}
	if err := dst.Close(); err != nil {
		fc.Remove(tmp)
		return fmt.Errorf("SFTP: copying benchflow to %s on the host: %w", tmp, err)
	}
	if err := fc.Chmod(tmp, 0o755); err != nil {
		fc.Remove(tmp)
		return err
	}
	if err := fc.PosixRename(tmp, bin); err != nil {
		if err := fc.Rename(tmp, bin); err != nil {
			fc.Remove(tmp)
			return fmt.Errorf("SFTP: renaming %s: %w", tmp, err)
		}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell. Only values of benchflow's own
// making (the binary's path, the owner label) go through it; the
// pipeline's values travel in the protocol.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launch starts the helper and reads its hello.
func (c *conn) launch(ctx context.Context, bin string) error {
	s, err := c.client.NewSession()
	if err != nil {
		return err
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return err
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return err
	}
	var stderr tailbuf.Buffer
	s.Stderr = &stderr
	cmd := "exec " + shellQuote(bin) + " " + HelperCommand + " --owner " + shellQuote(ownerString(providers.SelfOwner())) + " --idle " + c.t.Idle.String()
	if c.t.Sudo {
		cmd = "exec sudo -n " + shellQuote(bin) + " " + HelperCommand + " --owner " + shellQuote(ownerString(providers.SelfOwner())) + " --idle " + c.t.Idle.String()
	}
	if err := s.Start(cmd); err != nil {
		s.Close()
		return fmt.Errorf("starting the helper: %w", err)
	}
	c.sess, c.stdin = s, stdin
	c.done = make(chan struct{})
	c.dead = nil
	go c.readLoop(stdout, s, &stderr)
	r, err := c.call(ctx, &request{Op: opHello})
	if err != nil {
		c.stopLaunch()
		if c.t.Sudo && strings.Contains(stderr.String(), "sudo") {
			return fmt.Errorf("starting the helper with sudo -n (sudo = true needs passwordless sudo for %s on the host): %s", c.t.User, strings.TrimSpace(stderr.String()))
		}
		return fmt.Errorf("starting the helper %s on the host: %w", bin, err)
	}
	c.hello = r.Hello
	if c.hello == nil {
		c.stopLaunch()
		return errors.New("the helper did not say hello")
	}
	return nil
}

func (c *conn) stopLaunch() {
	if c.stdin != nil {
		c.stdin.Close()
	}
	if c.sess != nil {
		c.sess.Close()
	}
	c.sess, c.stdin = nil, nil
}

// readLoop hands each response to its caller; when the session ends it
// fails every pending call.
func (c *conn) readLoop(stdout io.Reader, s *gossh.Session, stderr *tailbuf.Buffer) {
	done := c.done
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r response
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		c.mu.Lock()
		if r.Event == "exit" && r.Exit != nil {
			c.exits[r.PID] = r.Exit
			c.mu.Unlock()
			continue
		}
		ch := c.pending[r.ID]
		delete(c.pending, r.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	werr := s.Wait()
	msg := "the helper's session ended"
	if werr != nil {
		msg += ": " + werr.Error()
	}
	if e := strings.TrimSpace(stderr.String()); e != "" {
		msg += ": " + e
	}
	c.fail(errors.New(msg))
	close(done)
}

// fail marks the connection dead and fails the pending calls.
func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead == nil {
		c.dead = err
	}
	for id, ch := range c.pending {
		ch <- response{ID: id, Error: c.dead.Error()}
		delete(c.pending, id)
	}
}

// exited is how the helper said process pid ended, nil while it runs.
func (c *conn) exited(pid int) *exitStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exits[pid]
}

// call sends a request and waits for its answer (at most callTimeout).
func (c *conn) call(ctx context.Context, r *request) (*response, error) {
	return c.callWithin(ctx, r, callTimeout)
}

// callWithin is call waiting at most timeout; without an answer by then
// the connection is taken for dead.
func (c *conn) callWithin(ctx context.Context, r *request, timeout time.Duration) (*response, error) {
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.dead != nil {
		err := c.dead
		c.mu.Unlock()
		return nil, fmt.Errorf("connection to the host lost: %w", err)
	}
	c.nextID++
	r.ID = c.nextID
	c.pending[r.ID] = ch
	stdin := c.stdin
	c.mu.Unlock()
	b, _ := json.Marshal(r)
	// Writes are serialized apart from mu: a write blocked by a dead link
	// must not keep readLoop or fail from the pending calls.
	werr := make(chan error, 1)
	go func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		_, err := stdin.Write(append(b, '\n'))
		werr <- err
	}()
	var err error
	select {
	case err = <-werr:
	case <-time.After(timeout):
		err = fmt.Errorf("no answer from the host in %s (the link may be down)", timeout)
		c.client.Close()
	}
	if err != nil {
		c.fail(err)
		return nil, fmt.Errorf("connection to the host lost: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case resp := <-ch:
		if resp.Error != "" {
			return &resp, errors.New(resp.Error)
		}
		return &resp, nil
	case <-ctx.Done():
		c.drop(r.ID)
		return nil, ctx.Err()
	case <-t.C:
		c.drop(r.ID)
		err := fmt.Errorf("no answer from the host in %s (the link may be down)", timeout)
		c.fail(err)
		c.client.Close()
		return nil, err
	}
}

func (c *conn) drop(id int) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// keepalive pings the helper so it knows the controller is there, and
// notices a dead link.
func (c *conn) keepalive() {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if _, err := c.callWithin(context.Background(), &request{Op: opPing}, pingTimeout); err != nil && c.err() != nil {
				return
			}
		}
	}
}

// ownerString encodes the controller's identity as the helper records
// it: "host pid start boot".
func ownerString(o providers.Owner) string {
	host := o.Labels()[providers.LabelHost] // [A-Za-z0-9._-] only
	return fmt.Sprintf("%s/%d/%d/%s", host, o.PID, o.Start, o.Boot)
}

// parseOwner reads ownerString back.
func parseOwner(s string) (providers.Owner, bool) {
	f := strings.Split(s, "/")
	if len(f) != 4 {
		return providers.Owner{}, false
	}
	pid, err := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err != nil || err2 != nil {
		return providers.Owner{}, false
	}
	return providers.Owner{Host: f[0], PID: pid, Start: start, Boot: f[3]}, true
}

// countingConn counts the bytes of the SSH connection (the control
// channel's cost: what it adds to the network under test).
type countingConn struct {
	net.Conn
	read, written atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// Bytes is the traffic of the connection so far, both ways.
func (c *countingConn) Bytes() int64 { return c.read.Load() + c.written.Load() }
