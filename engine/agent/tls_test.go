package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPKI writes a CA and, signed by it, a certificate and key for each
// name ("agent" for 127.0.0.1, any other as a client), and returns the
// folder; "other-ca" and "stranger" are a second CA and a client it signed.
func testPKI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	serial := int64(1)
	issue := func(name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
		if isCA {
			tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		}
		if name == "agent" {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		}
		parent, signer := tmpl, key
		if ca != nil {
			parent, signer = ca, caKey
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		kb, _ := x509.MarshalECPrivateKey(key)
		write(name+".crt", "CERTIFICATE", der)
		write(name+".key", "EC PRIVATE KEY", kb)
		return cert, key
	}
	ca, caKey := issue("ca", nil, nil, true)
	issue("agent", ca, caKey, false)
	issue("controller", ca, caKey, false)
	other, otherKey := issue("other-ca", nil, nil, true)
	issue("stranger", other, otherKey, false)
	return dir
}

func files(dir, name, ca string) TLSFiles {
	return TLSFiles{CA: filepath.Join(dir, ca+".crt"), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
}

// TestMutualTLS: an agent serving mutual TLS runs a load for a controller
// whose certificate the CA signed, and refuses during the handshake a
// client without a certificate or with one another CA signed — even one
// holding the token — and plain HTTP.
func TestMutualTLS(t *testing.T) {
	pki := testPKI(t)
	srvCfg, err := files(pki, "agent", "ca").Server()
	if err != nil {
		t.Fatal(err)
	}
	tgt := target(t)
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{Listen: "127.0.0.1:0", Idle: 30 * time.Second, Token: testToken, Targets: []string{tgt},
			TLS: srvCfg, Ready: func(a string) { ready <- a }, Logf: t.Logf})
	}()
	addr := <-ready
	t.Cleanup(func() { cancel(); <-done })
	url := "https://" + addr

	cliCfg, err := files(pki, "controller", "ca").Client()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Config{Agents: []string{url}, Token: testToken, TLS: cliCfg, Tolerance: time.Minute,
		Options: loadOptions(tgt, 100)})
	if err != nil {
		t.Fatalf("Run over mutual TLS: %v", err)
	}
	if out.Merged.Requests != 100 {
		t.Errorf("merged %d requests, want 100", out.Merged.Requests)
	}

	// Clients the agent refuses, all with the token.
	noCert := cliCfg.Clone()
	noCert.Certificates = nil
	strangerCfg, err := files(pki, "stranger", "ca").Client() // trusts the agent's CA, presents another's certificate
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*tls.Config{"no certificate": noCert, "another CA's certificate": strangerCfg} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: c}, Timeout: 10 * time.Second}
		req, _ := http.NewRequest("GET", url+pathHello, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: the agent answered %d, want the handshake refused", name, resp.StatusCode)
		}
	}
	// Plain HTTP gets no answer from the agent's handler.
	resp, err := http.Get("http://" + addr + pathHello)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP: %d, want refused", resp.StatusCode)
		}
	}
	if _, err := (TLSFiles{CA: filepath.Join(pki, "ca.crt")}).Server(); err == nil || !strings.Contains(err.Error(), "needs a CA, a certificate and a key") {
		t.Errorf("a CA alone: %v", err)
	}
}
