package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sshKeygen runs OpenSSH's ssh-keygen in dir (without an agent).
func sshKeygen(t *testing.T, dir string, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Fatalf("publish --sign is checked against OpenSSH: install it (apt-get install openssh-client): %v", err)
	}
	cmd := exec.Command(p, args...)
	cmd.Dir, cmd.Stdin = dir, stdin
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPublishSign: publish --sign KEY (a key ssh-keygen made) writes
// SHA256SUMS.sig, prints the key's fingerprint as ssh-keygen -l does and
// names it in REPRODUCE.md; ssh-keygen -Y verify and sha256sum -c accept
// the bundle, and so does report --update (which checks the bundle); the
// archive holds the signature. Republished with --force the signature is
// made anew, or gone without --sign; a bundle published from a signed one
// is unsigned and does not list the old signature; a key with a
// passphrase is refused before anything is written.
func TestPublishSign(t *testing.T) {
	dir := t.TempDir()
	applyTiny(t, dir)
	key := filepath.Join(dir, "id_ed25519")
	if out, err := sshKeygen(t, dir, nil, "-q", "-t", "ed25519", "-N", "", "-C", "alice@example.com", "-f", key); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	out, err := sshKeygen(t, dir, nil, "-l", "-E", "sha256", "-f", key+".pub")
	if err != nil {
		t.Fatalf("ssh-keygen -l: %v\n%s", err, out)
	}
	fp := strings.Fields(out)[1]
	pub, _ := os.ReadFile(key + ".pub")
	allowed := filepath.Join(dir, "allowed_signers")
	os.WriteFile(allowed, []byte("alice@example.com namespaces=\"benchflow-bundle\" "+string(pub)), 0o644)
	b := filepath.Join(dir, "pub", "tiny")
	verify := func(t *testing.T) error {
		t.Helper()
		sums, err := os.Open(filepath.Join(b, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		defer sums.Close()
		out, err := sshKeygen(t, b, sums, "-Y", "verify", "-n", "benchflow-bundle", "-f", allowed, "-I", "alice@example.com", "-s", "SHA256SUMS.sig")
		if err != nil {
			t.Logf("ssh-keygen -Y verify: %s", out)
		}
		return err
	}

	out, err = runBin(t, dir, "publish", "results/latest", "pub/tiny", "--sign", key, "--archive")
	if err != nil {
		t.Fatalf("publish --sign: %v\n%s", err, out)
	}
	if !strings.Contains(out, "signed by ssh-ed25519 "+fp+" (SHA256SUMS.sig") {
		t.Errorf("publish --sign does not name the key's fingerprint %s:\n%s", fp, out)
	}
	if err := verify(t); err != nil {
		t.Fatalf("ssh-keygen -Y verify refuses the published signature: %v", err)
	}
	c := exec.Command("sha256sum", "-c", "--strict", "--quiet", "SHA256SUMS")
	c.Dir = b
	if o, err := c.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, o)
	}
	if sums, _ := os.ReadFile(filepath.Join(b, "SHA256SUMS")); strings.Contains(string(sums), "SHA256SUMS.sig") {
		t.Errorf("SHA256SUMS lists its own signature:\n%s", sums)
	}
	repro, _ := os.ReadFile(filepath.Join(b, "REPRODUCE.md"))
	for _, want := range []string{"ssh-ed25519 " + fp, "ssh-keygen -Y verify -f ALLOWED_SIGNERS -I PRINCIPAL -n benchflow-bundle -s SHA256SUMS.sig < SHA256SUMS", "--allowed-signers", "`SHA256SUMS.sig`"} {
		if !strings.Contains(string(repro), want) {
			t.Errorf("REPRODUCE.md lacks %q", want)
		}
	}
	if !archiveHas(t, filepath.Join(dir, "pub", "tiny.tar.gz"), "tiny/SHA256SUMS.sig") {
		t.Errorf("the archive lacks the signature")
	}
	// report --update checks the bundle: a signed one is accepted.
	readme := filepath.Join(dir, "README.md")
	os.WriteFile(readme, []byte("# Tiny\n\n<!-- benchflow:report pub/tiny -->\n<!-- /benchflow -->\n"), 0o644)
	if out, err := runBin(t, dir, "report", "--update", "README.md"); err != nil {
		t.Errorf("report --update over a signed bundle: %v\n%s", err, out)
	}

	// --force without --sign: the old signature goes with the old bundle.
	if out, err := runBin(t, dir, "publish", "results/latest", "pub/tiny", "--force"); err != nil {
		t.Fatalf("publish --force: %v\n%s", err, out)
	} else if strings.Contains(out, "signed by") {
		t.Errorf("an unsigned publish says it signed:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(b, "SHA256SUMS.sig")); err == nil {
		t.Errorf("publish --force without --sign kept the stale signature")
	}
	// --force --sign signs the new SHA256SUMS.
	if out, err := runBin(t, dir, "publish", "results/latest", "pub/tiny", "--force", "--sign", key); err != nil {
		t.Fatalf("publish --force --sign: %v\n%s", err, out)
	}
	if err := verify(t); err != nil {
		t.Fatalf("the re-signed bundle does not verify: %v", err)
	}
	// A bundle published from the signed one is a new bundle: unsigned.
	if out, err := runBin(t, dir, "publish", "pub/tiny", "pub/again"); err != nil {
		t.Fatalf("publish from a bundle: %v\n%s", err, out)
	}
	if _, err := os.Lstat(filepath.Join(dir, "pub", "again", "SHA256SUMS.sig")); err == nil {
		t.Errorf("the signature was copied into a bundle it does not sign")
	}
	if sums, _ := os.ReadFile(filepath.Join(dir, "pub", "again", "SHA256SUMS")); strings.Contains(string(sums), "SHA256SUMS.sig") {
		t.Errorf("the new bundle lists the old signature:\n%s", sums)
	}

	// A key with a passphrase, no agent: refused, nothing written.
	enc := filepath.Join(dir, "id_enc")
	if out, err := sshKeygen(t, dir, nil, "-q", "-t", "ed25519", "-N", "secret", "-f", enc); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "publish", "results/latest", "pub/enc", "--sign", enc)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	o, err := cmd.CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(o), "passphrase") || !strings.Contains(string(o), "ssh-agent") || strings.Contains(string(o), "panic") {
		t.Errorf("publish --sign with a passphrase key: %v\n%s", err, o)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "pub", "*enc*")); len(left) > 0 {
		t.Errorf("a refused publish left %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "pub", ".*")); len(left) > 0 {
		t.Errorf("publish left %v", left)
	}
}

func archiveHas(t *testing.T, file, name string) bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return false
		}
		if h.Name == name {
			return true
		}
	}
}
