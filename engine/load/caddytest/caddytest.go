//go:build unix

package caddytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// Version is the Caddy release the tests are written against; build.sh
// builds it.
const Version = "v2.11.9"

// Env names the Caddy binary; CacheEnv the folder build.sh builds into
// (default DefaultCache).
const (
	Env          = "BENCHFLOW_CADDY"
	CacheEnv     = "BENCHFLOW_CADDY_CACHE"
	DefaultCache = "/var/cache/benchflow-caddy"
)

// How to get Caddy, for the skip and failure messages.
const howTo = "build it with engine/load/testdata/caddy/build.sh (or `make caddy`): the tests find it in the build cache, or set " + Env + " to the path it prints"

// The bodies Caddy serves: Small at / and /6b, Large at /64k.
var (
	Small = []byte("hello\n")
	Large = bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16)
)

var (
	versionsMu sync.Mutex
	versions   = map[string]string{}
)

// Binary returns the Caddy binary and its version: BENCHFLOW_CADDY, else
// caddy in the build cache, else caddy on PATH. Without one the test
// skips saying how to build it, except under CI=true, where it fails.
// A binary that does not run, or (under CI) is not Version, fails.
func Binary(t testing.TB) (path, version string) {
	t.Helper()
	path = os.Getenv(Env)
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		cache = DefaultCache
	}
	if path == "" {
		if p := filepath.Join(cache, "caddy"); isExec(p) {
			path = p
		} else if p, err := exec.LookPath("caddy"); err == nil {
			path = p
		}
	}
	if path == "" {
		msg := "Caddy not found (no " + Env + ", no caddy in " + cache + " or on PATH): " + howTo
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: CI must run the real-Caddy tests; .ci/run builds it)")
		}
		t.Skip(msg)
	}
	versionsMu.Lock()
	defer versionsMu.Unlock()
	if v, ok := versions[path]; ok {
		return path, v
	}
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v (is %s a Caddy binary? %s)", path, err, path, howTo)
	}
	version = strings.Fields(string(out) + " unknown")[0]
	if version != Version {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is Caddy %s, want %s: %s", path, version, Version, howTo)
		}
		t.Logf("%s is Caddy %s; the tests are written against %s", path, version, Version)
	}
	versions[path] = version
	return path, version
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Server is a running Caddy.
type Server struct {
	URL         string // https://127.0.0.1:PORT, no trailing slash
	Port        int    // the TCP port (HTTP/1.1, h2) and the UDP port (h3)
	Dir         string // its Caddyfile, certificate, logs and storage
	CAFile      string // PEM: the CA that signed Caddy's certificate
	OtherCAFile string // PEM: a CA that did not
	Version     string // `caddy version`'s first field
	Pid         int
	accessLog   string
}

// Start starts Caddy on a free loopback port with a generated Caddyfile
// (admin off, no redirects, a certificate for 127.0.0.1 and localhost
// signed by a CA of the test's own, everything under t.TempDir()) and
// waits until it answers over HTTP/1.1 and HTTP/3. When the test ends
// Caddy is stopped by its pid (SIGTERM, then SIGKILL of its process group
// if it has not exited within 10 s, which fails the test).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, version := Binary(t)
	dir := t.TempDir()
	s := &Server{Dir: dir, Version: version, CAFile: filepath.Join(dir, "ca.pem"), OtherCAFile: filepath.Join(dir, "other-ca.pem"),
		accessLog: filepath.Join(dir, "access.log")}
	caPool := writeCerts(t, dir)
	www := filepath.Join(dir, "www")
	for _, f := range []struct {
		name string
		body []byte
	}{{"index.html", Small}, {"6b", Small}, {"64k", Large}} {
		if err := os.MkdirAll(www, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(www, f.name), f.body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The port is free when chosen, but another process may take it before
	// Caddy binds it: then Caddy exits saying so and a new port is tried.
	for attempt := 1; ; attempt++ {
		err := s.launch(t, bin, caPool)
		if err == nil {
			return s
		}
		if attempt < 3 && errors.Is(err, errPortTaken) {
			t.Logf("Caddy could not bind port %d (taken since it was chosen), trying another: %v", s.Port, err)
			continue
		}
		t.Fatalf("Caddy %s on port %d: %v\n%s", version, s.Port, err, s.Stderr())
	}
}

// errPortTaken: Caddy exited because its port was in use.
var errPortTaken = errors.New("the port was taken")

// launch runs Caddy on a newly chosen free port, registers its stop, and
// waits until it is ready; an error when it exited or did not answer.
func (s *Server) launch(t testing.TB, bin string, caPool *x509.CertPool) error {
	t.Helper()
	dir := s.Dir
	s.Port = pickPort(t)
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", s.Port)
	conf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(conf, []byte(caddyfile(dir, s.Port)), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "caddy.log")
	var logStart int64 // where this attempt's part of caddy.log starts
	if fi, err := os.Stat(logFile); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(bin, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Dir = dir
	// Caddy's data and config folders (certificates, autosave) inside
	// the test's folder, not the user's home.
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	// Output to a file, not a pipe: Wait then never waits on a reader.
	out, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own, so that a hung Caddy can be killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	pid := cmd.Process.Pid
	s.Pid = pid
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	ready := false
	t.Cleanup(func() {
		select {
		case <-exited:
			if ready {
				t.Errorf("Caddy (pid %d) exited before the test ended: %s", pid, s.Stderr())
			}
			return
		default:
		}
		// SIGTERM: Caddy's graceful stop (grace_period 1s in the Caddyfile).
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
			t.Errorf("Caddy (pid %d) did not stop within 10 s of SIGTERM; its process group was killed", pid)
		}
	})
	if err := s.waitReady(caPool, exited); err != nil {
		select {
		case <-exited:
			b, _ := os.ReadFile(out.Name())
			l, _ := os.ReadFile(logFile)
			if int64(len(l)) >= logStart {
				b = append(b, l[logStart:]...)
			}
			if bytes.Contains(b, []byte("address already in use")) {
				return fmt.Errorf("%w: %v", errPortTaken, err)
			}
		default:
		}
		return err
	}
	ready = true
	return nil
}

// Stderr is Caddy's own output (its log goes to caddy.log).
func (s *Server) Stderr() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "stderr"))
	l, _ := os.ReadFile(filepath.Join(s.Dir, "caddy.log"))
	return string(b) + string(l)
}

// caddyfile serves www on 127.0.0.1:port over HTTP/1.1, h2 and h3, with
// the test's certificate, an access log in JSON, and nothing else: no
// admin endpoint, no redirect listener, no ACME, no trust store changes.
func caddyfile(dir string, port int) string {
	return fmt.Sprintf(`{
	admin off
	persist_config off
	auto_https disable_redirects
	skip_install_trust
	storage file_system %[1]s/storage
	grace_period 1s
	servers {
		protocols h1 h2 h3
	}
	log {
		output file %[1]s/caddy.log
		level INFO
	}
}

https://127.0.0.1:%[2]d, https://localhost:%[2]d {
	bind 127.0.0.1
	tls %[1]s/cert.pem %[1]s/key.pem
	log {
		output file %[1]s/access.log
		format json
	}
	root * %[1]s/www
	file_server
}
`, dir, port)
}

// waitReady polls until Caddy answers / over HTTP/1.1 (TLS, verified)
// and over HTTP/3, for up to 20 s each.
func (s *Server) waitReady(pool *x509.CertPool, exited <-chan struct{}) error {
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}, Timeout: 2 * time.Second}
	h3 := &http3.Transport{TLSClientConfig: cfg}
	defer h3.Close()
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{{"HTTP/1.1", h1.Transport}, {"HTTP/3", h3}} {
		var last error
		deadline := time.Now().Add(20 * time.Second)
		for {
			select {
			case <-exited:
				return errors.New("Caddy exited")
			default:
			}
			if last = get(c.rt, s.URL+"/"); last == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no answer over %s within 20 s: %w", c.name, last)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

func get(rt http.RoundTripper, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || !bytes.Equal(b, Small) {
		return fmt.Errorf("status %d, body %q, want 200 and %q", resp.StatusCode, b, Small)
	}
	return nil
}

// Entry is one line of Caddy's access log.
type Entry struct {
	Request struct {
		Proto  string `json:"proto"` // "HTTP/1.1", "HTTP/2.0", "HTTP/3.0"
		Method string `json:"method"`
		URI    string `json:"uri"`
		TLS    struct {
			Proto string `json:"proto"` // the ALPN: "http/1.1", "h2", "h3"
		} `json:"tls"`
	} `json:"request"`
	Status int   `json:"status"`
	Size   int64 `json:"size"` // body bytes written
}

// Access reads Caddy's access log so far.
func (s *Server) Access(t testing.TB) []Entry {
	t.Helper()
	f, err := os.Open(s.accessLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var es []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			break // a line being written
		}
		es = append(es, e)
	}
	return es
}

// AccessSince returns the access log's entries after the first since,
// waiting up to 10 s for there to be at least n (Caddy logs a request
// once its handler returned, which can be after the client has the
// response): fewer is not an error here, the caller compares.
func (s *Server) AccessSince(t testing.TB, since, n int) []Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		es := s.Access(t)
		if len(es) < since {
			t.Fatalf("the access log shrank to %d entries (had %d)", len(es), since)
		}
		if len(es)-since >= n || time.Now().After(deadline) {
			// One more short look: entries beyond n would be extra requests.
			time.Sleep(100 * time.Millisecond)
			return s.Access(t)[since:]
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pickPort chooses Caddy's port (a variable for the test of the retry).
var pickPort = freePort

// freePort is a port free on 127.0.0.1 for both TCP and UDP at the time
// of the call.
func freePort(t testing.TB) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP on 127.0.0.1 in 50 tries")
	return 0
}

// writeCerts writes ca.pem and cert.pem + key.pem (for 127.0.0.1 and
// localhost, signed by that CA), and other-ca.pem, a CA that signed
// nothing here; it returns a pool of the first CA.
func writeCerts(t testing.TB, dir string) *x509.CertPool {
	t.Helper()
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, key, der
	}
	ca, caKey, caDER := newCA("benchflow caddytest CA")
	_, _, otherDER := newCA("benchflow caddytest other CA")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, blk := range map[string]*pem.Block{
		"ca.pem":       {Type: "CERTIFICATE", Bytes: caDER},
		"other-ca.pem": {Type: "CERTIFICATE", Bytes: otherDER},
		"cert.pem":     {Type: "CERTIFICATE", Bytes: der},
		"key.pem":      {Type: "EC PRIVATE KEY", Bytes: kb},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}
