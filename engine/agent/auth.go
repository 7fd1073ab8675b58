package agent

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/benchflow/benchflow/providers"
)

// How a provider hands an agent its token and targets (never on a
// command line): providers' AgentTokenEnv, AgentTokenFileEnv and
// AgentTargetsEnv.
const (
	TokenEnv     = providers.AgentTokenEnv
	TokenFileEnv = providers.AgentTokenFileEnv
	TargetsEnv   = providers.AgentTargetsEnv
)

// maxTokenFile bounds what ReadTokenFile reads.
const maxTokenFile = 4 << 10

// NewToken is a fresh secret for one run's agents: 32 random bytes
// (crypto/rand), hex-encoded.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the agents' token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ReadTokenFile reads a token from path: a regular file that only its
// owner may read or write (mode 0600 or stricter), the token on its first
// line.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s has mode %04o: others may read it; want 0600", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("token file %s is larger than %d bytes", path, maxTokenFile)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// DecodeTargets reads TargetsEnv's value: URLs separated by newlines or
// spaces (a target URL holds no space; write one as %20).
func DecodeTargets(v string) ([]string, error) { return strings.Fields(v), nil }

// TLSFiles are the PEM files of mutual TLS between a controller and its
// agents: a CA that signed both sides' certificates, and this side's
// certificate and key.
type TLSFiles struct {
	CA, Cert, Key string
}

// Set reports whether any file is given.
func (f TLSFiles) Set() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

func (f TLSFiles) load() (*x509.CertPool, tls.Certificate, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, tls.Certificate{}, errors.New("mutual TLS needs a CA, a certificate and a key")
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("reading the TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, tls.Certificate{}, fmt.Errorf("TLS CA %s holds no PEM certificate", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("loading the TLS certificate and key: %w", err)
	}
	return pool, cert, nil
}

// Server is the agent's side: it presents its certificate and refuses,
// during the handshake, a client without a certificate the CA signed.
func (f TLSFiles) Server() (*tls.Config, error) {
	pool, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, nil
}

// Client is the controller's side: it verifies the agent's certificate
// against the CA and presents its own.
func (f TLSFiles) Client() (*tls.Config, error) {
	pool, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool}, nil
}
