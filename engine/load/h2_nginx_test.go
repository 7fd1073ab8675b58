//go:build unix

package load

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeTestCert writes a CA-signed certificate for 127.0.0.1 and
// localhost: ca.pem, cert.pem and key.pem in dir.
func writeTestCert(t *testing.T, dir string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "benchflow test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost", "example.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	for name, blk := range map[string]*pem.Block{
		"ca.pem":   {Type: "CERTIFICATE", Bytes: caDER},
		"cert.pem": {Type: "CERTIFICATE", Bytes: der},
		"key.pem":  {Type: "EC PRIVATE KEY", Bytes: kb},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(blk), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNginxH2 runs Debian's nginx with TLS + HTTP/2 on two ports: the
// first with the default stream limit (128) and a graceful GOAWAY after
// 100 requests per connection (keepalive_requests), the second allowing
// one stream per connection. It serves a 6-byte file and a 1 MiB one.
func startNginxH2(t *testing.T) (dir string, port, port1 int) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin = "/usr/sbin/nginx"; !fileExists(bin) {
			t.Skip("nginx not installed")
		}
	}
	dir = t.TempDir()
	os.Chmod(dir, 0o755)
	writeTestCert(t, dir)
	www := filepath.Join(dir, "www")
	os.Mkdir(www, 0o755)
	os.WriteFile(filepath.Join(www, "6b"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(www, "1m"), []byte(strings.Repeat("x", 1<<20)), 0o644)
	port, port1 = freePort(t), freePort(t)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers must read the test's private temporary folder
	}
	conf := user + fmt.Sprintf(`
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp; proxy_temp_path %[1]s/tmp; fastcgi_temp_path %[1]s/tmp;
  uwsgi_temp_path %[1]s/tmp; scgi_temp_path %[1]s/tmp;
  ssl_certificate %[1]s/cert.pem; ssl_certificate_key %[1]s/key.pem;
  server { listen 127.0.0.1:%[2]d ssl http2; keepalive_requests 100; root %[1]s/www; }
  server { listen 127.0.0.1:%[3]d ssl http2; http2_max_concurrent_streams 1; root %[1]s/www; }
}
`, dir, port, port1)
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	// Output to a file, not a pipe: a worker outliving its master would
	// keep a pipe open and Wait would never return.
	out, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	// A process group of its own: nginx and its workers, nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGQUIT: nginx's graceful stop, which takes its workers with it.
	// Should it hang, its process group is killed, workers included.
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("nginx did not stop within 10 s of SIGQUIT; its process group was killed")
		}
	})
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port1)); err == nil {
			c.Close()
			return dir, port, port1
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
	t.Fatalf("nginx did not start: %s", b)
	return
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestH2Nginx(t *testing.T) {
	dir, port, port1 := startNginxH2(t)
	url := fmt.Sprintf("https://127.0.0.1:%d/6b", port)
	// Verified against the CA, with SNI.
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: url}}, Protocol: ProtoH2,
		Connections: 2, Threads: 1, Streams: 10, Requests: 2000, Timeout: 5 * time.Second,
		CACert: filepath.Join(dir, "ca.pem"), SNI: "example.test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2000 || res.Errors != 0 || res.Status[200] != 2000 {
		t.Fatalf("requests %d errors %d status %v (%s)", res.Requests, res.Errors, res.Status, res.ErrorSummary())
	}
	if res.Protocol != ProtoH2 || res.ALPN != "h2" || res.TLSCipher == "" {
		t.Errorf("protocol %q alpn %q cipher %q", res.Protocol, res.ALPN, res.TLSCipher)
	}
	if res.MaxInFlight <= 1 {
		t.Errorf("at most %d streams in flight per connection with --streams 10: not multiplexed", res.MaxInFlight)
	}
	// keepalive_requests 100: nginx ends each connection with a graceful
	// GOAWAY, the refused streams are sent again, and none is an error.
	if res.Goaways == 0 || res.Reconnects == 0 {
		t.Errorf("goaways %d reconnects %d after 2000 requests with keepalive_requests 100", res.Goaways, res.Reconnects)
	}
	t.Logf("nginx h2: %.0f req/s, up to %d streams in flight, %d GOAWAYs, %d reconnects", res.RPS(), res.MaxInFlight, res.Goaways, res.Reconnects)

	// The wrong name fails verification.
	res, err = Run(context.Background(), Options{Targets: []Target{{URL: url}}, Protocol: ProtoH2,
		Connections: 1, Requests: 2, CACert: filepath.Join(dir, "ca.pem"), SNI: "other.test"})
	if err == nil || !strings.Contains(res.ErrorSample["connect"], "certificate") {
		t.Errorf("SNI other.test: err %v, sample %q", err, res.ErrorSample["connect"])
	}

	// A server allowing one stream per connection is honoured: no resets.
	res, err = Run(context.Background(), Options{Targets: []Target{{URL: fmt.Sprintf("https://127.0.0.1:%d/6b", port1)}},
		Protocol: ProtoH2, Connections: 2, Streams: 10, Requests: 500, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 500 || res.Errors != 0 || res.MaxInFlight != 1 {
		t.Fatalf("limit 1: requests %d errors %v in flight %d", res.Requests, res.ErrorsBy, res.MaxInFlight)
	}

	// 1 MiB bodies flow (WINDOW_UPDATE), several streams at once.
	res, err = Run(context.Background(), Options{Targets: []Target{{URL: fmt.Sprintf("https://127.0.0.1:%d/1m", port)}},
		Protocol: ProtoH2, Connections: 1, Streams: 4, Requests: 40, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 40 || res.Errors != 0 || res.Bytes < 40<<20 {
		t.Fatalf("1 MiB: requests %d errors %d bytes %d", res.Requests, res.Errors, res.Bytes)
	}
}
