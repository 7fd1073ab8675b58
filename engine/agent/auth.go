package agent

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/benchflow/benchflow/engine/units"
	"github.com/benchflow/benchflow/engine/userfile"
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

// NewToken is a fresh secret for one run's agents: 32 random bytes
// (crypto/rand), hex-encoded.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the agents' token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ReadTokenFile reads a token from path: a regular file (engine/userfile's
// rule, at most userfile.MaxTokenSize bytes) that only its owner may read
// or write (mode 0600 or stricter), the token on its first line. Its
// errors start with the path, for the caller to name the flag or variable
// that gave it.
func ReadTokenFile(path string) (string, error) {
	f, err := userfile.Open(path, userfile.MaxTokenSize)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s: mode %04o: others may read it; want 0600", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, userfile.MaxTokenSize+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > userfile.MaxTokenSize {
		return "", fmt.Errorf("%s: over the %s limit (it holds more than its size said)", path, units.FormatSize(userfile.MaxTokenSize))
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("%s: empty, want the token on its first line", path)
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
	// Labels, when set, name the CA, certificate and key in errors (the
	// flags that gave them: "--tls-ca", …).
	Labels [3]string
}

// Set reports whether any file is given.
func (f TLSFiles) Set() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

func (f TLSFiles) load() (*x509.CertPool, tls.Certificate, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, tls.Certificate{}, errors.New("mutual TLS needs a CA, a certificate and a key")
	}
	var pems [3][]byte
	for i, p := range []string{f.CA, f.Cert, f.Key} {
		b, err := userfile.Read(p, userfile.MaxSize)
		if err != nil {
			return nil, tls.Certificate{}, fmt.Errorf("%s %w", f.label(i), err)
		}
		pems[i] = b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pems[0]) {
		return nil, tls.Certificate{}, fmt.Errorf("%s %s holds no PEM certificate", f.label(0), f.CA)
	}
	cert, err := tls.X509KeyPair(pems[1], pems[2])
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("%s %s and %s %s: %w", f.label(1), f.Cert, f.label(2), f.Key, err)
	}
	return pool, cert, nil
}

// label names the CA (0), certificate (1) or key (2) in messages: by
// Labels when set, else "TLS CA", "TLS certificate", "TLS key".
func (f TLSFiles) label(i int) string {
	if f.Labels[i] != "" {
		return f.Labels[i]
	}
	return [3]string{"TLS CA", "TLS certificate", "TLS key"}[i]
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
