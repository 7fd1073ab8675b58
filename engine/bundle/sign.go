package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/userfile"
)

// SigFile is the bundle's signature over SHA256SUMS, in the armored
// format `ssh-keygen -Y sign` writes. It is the one file SHA256SUMS does
// not list (it signs it).
const SigFile = "SHA256SUMS.sig"

// SigNamespace is the namespace bundles are signed for (ssh-keygen's -n):
// a signature made for another purpose (git commits, files) is not a
// bundle's.
const SigNamespace = "benchflow-bundle"

// ErrSignature is wrapped by CheckSignature's errors about a signature
// that does not verify or whose key is not an allowed signer.
var ErrSignature = errors.New("bad signature")

// signatureError is a refused signature: its message says why, and it
// wraps ErrSignature.
type signatureError struct{ msg string }

func (e *signatureError) Error() string { return e.msg }
func (e *signatureError) Unwrap() error { return ErrSignature }

func refuse(dir, format string, args ...any) error {
	return &signatureError{fmt.Sprintf("checking the signature of %s: ", dir) + fmt.Sprintf(format, args...)}
}

// maxSigBytes bounds what is read of SigFile: an armored signature by a
// 16384-bit RSA key is about 6 KiB.
const maxSigBytes = 64 << 10

// Signature is what CheckSignature found out about a bundle's signer.
type Signature struct {
	Present     bool   // the bundle has SigFile
	KeyType     string // "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", …
	Fingerprint string // "SHA256:…", as ssh-keygen -l prints
	Principal   string // the matching principal in allowed signers ("" when none was given)
	Checked     bool   // verified against an allowed-signers file (false: only self-consistent)
}

// Signer describes the key for a person: "ssh-ed25519 SHA256:…", and
// the principal it is allowed as when one was checked.
func (s Signature) Signer() string {
	if !s.Present {
		return "unsigned"
	}
	d := s.KeyType + " " + s.Fingerprint
	if s.Principal != "" {
		d = s.Principal + " (" + d + ")"
	}
	return d
}

// Sign signs dir's SHA256SUMS with the private key at keyPath, writing
// SigFile atomically. keyPath is an unencrypted OpenSSH, PKCS#1/#8 or
// SEC1 private key (ed25519, ecdsa, rsa), or — for a key with a
// passphrase, or a public key file — a key that ssh-agent (SSH_AUTH_SOCK)
// holds.
func Sign(dir, keyPath string) error {
	k, err := LoadSigningKey(keyPath)
	if err != nil {
		return err
	}
	defer k.Close()
	return k.sign(dir)
}

// SigningKey is a key loaded to sign bundles (LoadSigningKey); Publish
// loads it before writing anything, so a key that cannot sign fails
// first.
type SigningKey struct {
	path   string
	signer ssh.Signer
	agent  net.Conn // the agent's connection when it holds the key
}

// KeyType is the key's SSH type ("ssh-ed25519", …).
func (k *SigningKey) KeyType() string { return k.signer.PublicKey().Type() }

// Fingerprint is the key's SHA256 fingerprint as ssh-keygen -l prints it.
func (k *SigningKey) Fingerprint() string { return ssh.FingerprintSHA256(k.signer.PublicKey()) }

// Close closes the connection to the agent, if any.
func (k *SigningKey) Close() {
	if k != nil && k.agent != nil {
		k.agent.Close()
	}
}

// LoadSigningKey reads the key at keyPath (see Sign).
func LoadSigningKey(keyPath string) (*SigningKey, error) {
	b, err := pipeline.ReadLocalFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err == nil {
		if _, ok := signer.PublicKey().(*ssh.Certificate); ok {
			return nil, fmt.Errorf("signing key %s: a certificate cannot sign a bundle: give its private key", keyPath)
		}
		return &SigningKey{path: keyPath, signer: signer}, nil
	}
	var pass *ssh.PassphraseMissingError
	if errors.As(err, &pass) {
		why := "is encrypted with a passphrase, which benchflow does not ask for"
		if pass.PublicKey == nil {
			return nil, fmt.Errorf("signing key %s %s: add it to ssh-agent (ssh-add %s) and give its .pub file, or use a key without a passphrase", keyPath, why, keyPath)
		}
		return fromAgent(keyPath, pass.PublicKey, why, "or use a key without a passphrase")
	}
	if pub, _, _, _, perr := ssh.ParseAuthorizedKey(b); perr == nil {
		return fromAgent(keyPath, pub, "is a public key", "or give the private key's file")
	}
	return nil, fmt.Errorf("signing key %s: not an SSH private key (as ssh-keygen writes it): %v", keyPath, err)
}

// fromAgent finds the key pub in ssh-agent; why says why it is looked for
// there (the key file's passphrase, or that it is a public key), other
// what else to do.
func fromAgent(keyPath string, pub ssh.PublicKey, why, other string) (*SigningKey, error) {
	fp := ssh.FingerprintSHA256(pub)
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, fmt.Errorf("signing key %s %s and no ssh-agent runs (SSH_AUTH_SOCK is not set): start one and ssh-add the key, %s", keyPath, why, other)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("signing key %s %s, and ssh-agent at SSH_AUTH_SOCK=%s does not answer: %v (%s)", keyPath, why, sock, err, strings.TrimPrefix(other, "or "))
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("signing key %s: listing ssh-agent's keys: %v", keyPath, err)
	}
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
			return &SigningKey{path: keyPath, signer: s, agent: conn}, nil
		}
	}
	conn.Close()
	return nil, fmt.Errorf("signing key %s %s, and ssh-agent does not hold it (%s %s): ssh-add it, %s", keyPath, why, pub.Type(), fp, other)
}

// sign writes dir's SigFile: the signature of its SHA256SUMS, through a
// temporary file renamed into place.
func (k *SigningKey) sign(dir string) (err error) {
	sums, err := readBundleFile(dir, SumsFile, userfile.MaxSize)
	if err != nil {
		return fmt.Errorf("signing %s: %w", dir, err)
	}
	sig, err := sshsig.Sign(bytes.NewReader(sums), k.signer, sshsig.HashSHA512, SigNamespace)
	if err != nil {
		return fmt.Errorf("signing %s with %s (%s %s): %w", dir, k.path, k.KeyType(), k.Fingerprint(), err)
	}
	tmp, err := os.CreateTemp(dir, "."+SigFile+".tmp-")
	if err != nil {
		return fmt.Errorf("signing %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(sshsig.Armor(sig)); err == nil {
		if err = tmp.Chmod(0o644); err == nil {
			err = tmp.Close()
		}
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, SigFile))
	}
	if err != nil {
		return fmt.Errorf("signing %s: %w", dir, err)
	}
	return nil
}

// CheckSignature verifies SigFile over SHA256SUMS. Unsigned:
// Signature{Present:false}, nil. Signed and allowedSigners == "": verifies
// the signature with its embedded key (an invalid signature is an error);
// Checked=false. With allowedSigners (a file in the format of
// ssh-keygen(1)'s ALLOWED SIGNERS): the key must be listed for the
// namespace SigNamespace, else an error naming the fingerprint and the
// file. On an error the Signature holds what was learnt (the key once the
// signature parsed), for the caller to show. SigFile and SHA256SUMS that
// are not regular files (a symlink, a FIFO) are refused without being
// opened.
func CheckSignature(dir, allowedSigners string) (Signature, error) {
	var s Signature
	if _, err := os.Lstat(filepath.Join(dir, SigFile)); errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	s.Present = true
	b, err := readBundleFile(dir, SigFile, maxSigBytes)
	if err != nil {
		return s, fmt.Errorf("checking the signature of %s: %w", dir, err)
	}
	if !bytes.Contains(b, []byte("-----BEGIN "+sshsig.PEMType+"-----")) {
		return s, refuse(dir, "%s is not an SSH signature (no -----BEGIN %s----- line, as ssh-keygen -Y sign writes)", SigFile, sshsig.PEMType)
	}
	sig, err := sshsig.Unarmor(b)
	if err != nil {
		return s, refuse(dir, "%s is not a valid SSH signature: %v", SigFile, err)
	}
	pub := sig.PublicKey
	s.KeyType, s.Fingerprint = pub.Type(), ssh.FingerprintSHA256(pub)
	if _, ok := pub.(*ssh.Certificate); ok {
		return s, refuse(dir, "%s was made with an SSH certificate (%s), which benchflow does not check: sign with a plain key", SigFile, s.Fingerprint)
	}
	if sig.Namespace != SigNamespace {
		return s, refuse(dir, "%s was made for namespace %q, not %q (it signs something other than a bundle)", SigFile, sig.Namespace, SigNamespace)
	}
	sums, err := readBundleFile(dir, SumsFile, userfile.MaxSize)
	if err != nil {
		return s, fmt.Errorf("checking the signature of %s: %w", dir, err)
	}
	if err := sshsig.Verify(bytes.NewReader(sums), sig, pub, sig.HashAlgorithm, SigNamespace); err != nil {
		return s, refuse(dir, "%s does not verify with its key %s %s (%v): %s or %s changed after signing", SigFile, s.KeyType, s.Fingerprint, err, SumsFile, SigFile)
	}
	if allowedSigners == "" {
		return s, nil
	}
	signers, err := readAllowedSigners(allowedSigners)
	if err != nil {
		return s, fmt.Errorf("checking the signature of %s: %w", dir, err)
	}
	principal, why := allowed(signers, pub, SigNamespace, time.Now())
	if principal == "" {
		msg := fmt.Sprintf("it is signed by %s %s, which %s does not list as an allowed signer for namespace %q", s.KeyType, s.Fingerprint, allowedSigners, SigNamespace)
		if len(why) > 0 {
			msg += " (" + strings.Join(why, "; ") + ")"
		}
		return s, refuse(dir, "%s", msg)
	}
	s.Principal, s.Checked = principal, true
	return s, nil
}

// readBundleFile reads the bundle's file name (SigFile, SHA256SUMS) if it
// is a regular file itself of at most limit bytes: a symlink, a FIFO, a
// device or a folder is refused without being opened.
func readBundleFile(dir, name string, limit int64) ([]byte, error) {
	return userfile.ReadNoFollow(filepath.Join(dir, name), limit)
}
