package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sshKeygen runs the real ssh-keygen (OpenSSH) in dir with stdin.
func sshKeygen(t *testing.T, dir string, stdin []byte, args ...string) (string, error) {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Fatalf("these tests check the signatures against OpenSSH: install it (apt-get install openssh-client): %v", err)
	}
	cmd := exec.Command(p, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// newKey makes a key of type typ with ssh-keygen, without a passphrase;
// it returns the private key's path, the public key's line and its
// fingerprint as ssh-keygen -l prints it.
func newKey(t *testing.T, typ string) (key, pub, fp string) {
	t.Helper()
	dir := t.TempDir()
	key = filepath.Join(dir, "id_"+typ)
	if out, err := sshKeygen(t, dir, nil, "-q", "-t", typ, "-N", "", "-C", "alice@example.com", "-f", key); err != nil {
		t.Fatalf("ssh-keygen -t %s: %v\n%s", typ, err, out)
	}
	b, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	out, err := sshKeygen(t, dir, nil, "-l", "-E", "sha256", "-f", key+".pub")
	if err != nil {
		t.Fatalf("ssh-keygen -l: %v\n%s", err, out)
	}
	return key, strings.TrimSpace(string(b)), strings.Fields(out)[1]
}

// allowedFile writes an allowed-signers file of lines.
func allowedFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "allowed_signers")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// opensshVerify runs ssh-keygen -Y verify on the bundle dir's signature.
func opensshVerify(t *testing.T, dir, allowed, principal string) (string, error) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	return sshKeygen(t, dir, sums, "-Y", "verify", "-n", SigNamespace, "-f", allowed, "-I", principal, "-s", SigFile)
}

var signedFiles = map[string]string{"manifest.json": "{}\n", "sources/templates/a.tmpl": "x = 1\n", "trials.parquet": "PAR1....PAR1"}

// TestSignVerifiesWithOpenSSH: for each key type ssh-keygen makes, the
// signature Sign writes is accepted by ssh-keygen -Y verify, and by
// CheckSignature with and without an allowed-signers file (key type and
// fingerprint as ssh-keygen -l prints them); Verify accepts the
// signature as the one unlisted file.
func TestSignVerifiesWithOpenSSH(t *testing.T) {
	for _, typ := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(typ, func(t *testing.T) {
			key, pub, fp := newKey(t, typ)
			dir := writeBundle(t, signedFiles)
			if err := Sign(dir, key); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(dir, SigFile))
			if !strings.HasPrefix(string(b), "-----BEGIN SSH SIGNATURE-----\n") {
				t.Fatalf("%s is not armored as ssh-keygen writes it:\n%s", SigFile, b)
			}
			allowed := allowedFile(t, "alice@example.com "+pub)
			if out, err := opensshVerify(t, dir, allowed, "alice@example.com"); err != nil {
				t.Fatalf("ssh-keygen -Y verify refuses our signature: %v\n%s", err, out)
			}
			s, err := CheckSignature(dir, "")
			wantType := strings.Fields(pub)[0]
			if err != nil || s != (Signature{Present: true, KeyType: wantType, Fingerprint: fp}) {
				t.Fatalf("CheckSignature without allowed signers = %+v, %v; want %s %s unchecked", s, err, wantType, fp)
			}
			s, err = CheckSignature(dir, allowed)
			if err != nil || s != (Signature{Present: true, KeyType: wantType, Fingerprint: fp, Principal: "alice@example.com", Checked: true}) {
				t.Fatalf("CheckSignature with allowed signers = %+v, %v", s, err)
			}
			if n, err := Verify(dir); err != nil || n != len(signedFiles) {
				t.Fatalf("Verify of a signed bundle: %d, %v", n, err)
			}
			// Signing again replaces the signature, leaving no temporary file.
			if err := Sign(dir, key); err != nil {
				t.Fatal(err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				t.Errorf("signing left %v", left)
			}
		})
	}
}

// TestCheckSignatureOfOpenSSH: a signature made by ssh-keygen -Y sign
// (ed25519 and rsa, whose signatures ssh-keygen makes with rsa-sha2-512)
// verifies with CheckSignature.
func TestCheckSignatureOfOpenSSH(t *testing.T) {
	for _, typ := range []string{"ed25519", "rsa"} {
		t.Run(typ, func(t *testing.T) {
			key, pub, fp := newKey(t, typ)
			dir := writeBundle(t, signedFiles)
			if out, err := sshKeygen(t, dir, nil, "-Y", "sign", "-n", SigNamespace, "-f", key, SumsFile); err != nil {
				t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
			}
			s, err := CheckSignature(dir, allowedFile(t, `"alice@example.com,alice@work.example" namespaces="benchflow-*" `+pub))
			if err != nil || !s.Checked || s.Fingerprint != fp || s.Principal != "alice@example.com,alice@work.example" {
				t.Fatalf("CheckSignature of ssh-keygen's signature = %+v, %v", s, err)
			}
		})
	}
}

// TestCheckSignatureRefuses: a changed SHA256SUMS, a changed signature,
// a signature for another namespace, a key the allowed signers do not
// list (or list for another namespace, as a cert-authority, or outside
// its validity), and a SigFile that is not a regular file are each
// refused with the reason; an unsigned bundle is not an error.
func TestCheckSignatureRefuses(t *testing.T) {
	key, pub, fp := newKey(t, "ed25519")
	_, otherPub, otherFP := newKey(t, "ed25519")
	signed := func(t *testing.T) string {
		dir := writeBundle(t, signedFiles)
		if err := Sign(dir, key); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	wantErr := func(t *testing.T, dir, allowed string, want ...string) {
		t.Helper()
		s, err := CheckSignature(dir, allowed)
		if err == nil {
			t.Fatalf("CheckSignature accepted it: %+v", s)
		}
		t.Log(err)
		if !s.Present {
			t.Errorf("the Signature returned with the error says unsigned: %+v", s)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %q: %v", w, err)
			}
		}
	}

	t.Run("unsigned", func(t *testing.T) {
		s, err := CheckSignature(writeBundle(t, signedFiles), allowedFile(t, "alice@example.com "+pub))
		if err != nil || s != (Signature{}) {
			t.Fatalf("unsigned bundle: %+v, %v", s, err)
		}
	})
	t.Run("changed SHA256SUMS", func(t *testing.T) {
		dir := signed(t)
		os.WriteFile(filepath.Join(dir, "extra"), []byte("x"), 0o644)
		list, _ := listFiles(dir)
		writeSums(dir, list)
		wantErr(t, dir, "", "does not verify", fp)
		if _, err := CheckSignature(dir, ""); !errors.Is(err, ErrSignature) {
			t.Errorf("not ErrSignature: %v", err)
		}
		if out, err := opensshVerify(t, dir, allowedFile(t, "alice@example.com "+pub), "alice@example.com"); err == nil {
			t.Errorf("ssh-keygen accepts it: the test proves nothing\n%s", out)
		}
	})
	t.Run("changed signature", func(t *testing.T) {
		dir := signed(t)
		p := filepath.Join(dir, SigFile)
		b, _ := os.ReadFile(p)
		lines := strings.Split(string(b), "\n")
		// The last base64 lines hold the signature's bytes: change one.
		i := len(lines) - 4
		c := byte('A')
		if lines[i][30] == 'A' {
			c = 'B'
		}
		lines[i] = lines[i][:30] + string(c) + lines[i][31:]
		os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
		wantErr(t, dir, "", SigFile)
		os.WriteFile(p, []byte("not a signature\n"), 0o644)
		wantErr(t, dir, "", "not an SSH signature")
	})
	t.Run("other namespace", func(t *testing.T) {
		dir := writeBundle(t, signedFiles)
		if out, err := sshKeygen(t, dir, nil, "-Y", "sign", "-n", "git", "-f", key, SumsFile); err != nil {
			t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
		}
		wantErr(t, dir, "", `namespace "git"`, SigNamespace)
	})
	t.Run("not an allowed signer", func(t *testing.T) {
		dir := signed(t)
		allowed := allowedFile(t, "# only bob", "bob@example.com "+otherPub)
		wantErr(t, dir, allowed, fp, allowed, "does not list")
		if strings.Contains(otherFP, fp) {
			t.Fatal("two keys with one fingerprint")
		}
		// Listed, but only for other namespaces, as a CA, or expired.
		for _, line := range []string{
			`alice@example.com namespaces="git,file" ` + pub,
			`alice@example.com namespaces="benchflow-*,!benchflow-bundle" ` + pub,
			`alice@example.com cert-authority ` + pub,
			`alice@example.com valid-before="20200101" ` + pub,
			`alice@example.com valid-after="` + time.Now().AddDate(1, 0, 0).Format("20060102") + `Z" ` + pub,
		} {
			allowed := allowedFile(t, line)
			wantErr(t, dir, allowed, fp, allowed, "line 1")
			if out, err := opensshVerify(t, dir, allowed, "alice@example.com"); err == nil {
				t.Errorf("ssh-keygen accepts %q, CheckSignature does not:\n%s", line, out)
			}
		}
	})
	t.Run("not a regular file", func(t *testing.T) {
		dir := signed(t)
		p := filepath.Join(dir, SigFile)
		good := filepath.Join(t.TempDir(), "good.sig")
		if err := os.Rename(p, good); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(good, p); err != nil {
			t.Fatal(err)
		}
		wantErr(t, dir, "", "symbolic link")
		if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), SigFile+" not a regular file") {
			t.Errorf("Verify accepts %s as a symlink: %v", SigFile, err)
		}
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		// Opening a FIFO for reading would block until a writer comes:
		// it is refused on its lstat, before any open.
		wantErr(t, dir, "", "FIFO")
		if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), SigFile+" not a regular file") {
			t.Errorf("Verify accepts %s as a FIFO: %v", SigFile, err)
		}
		os.Remove(p)
		os.Mkdir(p, 0o755)
		wantErr(t, dir, "", "folder")
	})
	t.Run("a signature elsewhere is not listed", func(t *testing.T) {
		dir := signed(t)
		b, _ := os.ReadFile(filepath.Join(dir, SigFile))
		os.WriteFile(filepath.Join(dir, "sources", SigFile), b, 0o644)
		if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), "sources/"+SigFile+" not listed") {
			t.Errorf("Verify accepts an unlisted sources/%s: %v", SigFile, err)
		}
	})
}

// TestAllowedSignersAsOpenSSH: CheckSignature decides as ssh-keygen -Y
// verify does over allowed-signers files that vary the principals'
// quoting, the options' case and the namespaces' patterns; malformed
// files are errors located at their line.
func TestAllowedSignersAsOpenSSH(t *testing.T) {
	key, pub, _ := newKey(t, "ed25519")
	_, otherPub, _ := newKey(t, "ecdsa")
	dir := writeBundle(t, signedFiles)
	if err := Sign(dir, key); err != nil {
		t.Fatal(err)
	}
	future := time.Now().AddDate(1, 0, 0).Format("200601021504") + "Z"
	for _, c := range []struct {
		lines []string
		ok    bool
	}{
		{[]string{"alice@example.com " + pub}, true},
		{[]string{"*@example.com " + pub}, true},
		{[]string{"bob@example.com " + otherPub, "", "  # a comment", "alice@example.com " + pub}, true},
		{[]string{`"alice@example.com" ` + pub + ` a comment`}, true},
		{[]string{`alice@example.com NAMESPACES="benchflow-bundle" ` + pub}, true},
		{[]string{`alice@example.com namespaces="git,benchflow-b?ndle",valid-before="` + future + `" ` + pub}, true},
		{[]string{`alice@example.com namespaces="*,!git" ` + pub}, true},
		{[]string{`alice@example.com namespaces="*,!benchflow-*" ` + pub}, false},
		{[]string{`alice@example.com namespaces="benchflow" ` + pub}, false},
		{[]string{"alice@example.com " + otherPub}, false},
	} {
		allowed := allowedFile(t, c.lines...)
		_, err := CheckSignature(dir, allowed)
		out, kerr := opensshVerify(t, dir, allowed, "alice@example.com")
		if (kerr == nil) != c.ok {
			t.Fatalf("ssh-keygen -Y verify over %q: %v (want ok=%v)\n%s", c.lines, kerr, c.ok, out)
		}
		if (err == nil) != c.ok {
			t.Errorf("CheckSignature over %q: %v, want ok=%v as ssh-keygen", c.lines, err, c.ok)
		}
	}
	for _, c := range []struct{ line, want string }{
		{"alice@example.com", "no key"},
		{`"alice@example.com ` + pub, "quote is not closed"},
		{"alice@example.com ssh-ed25519 AAAAnotbase64", "no valid SSH public key"},
		{`alice@example.com restrict ` + pub, `unsupported option "restrict"`},
		{`alice@example.com namespaces=git ` + pub, "quoted value"},
		{`alice@example.com valid-after="2026" ` + pub, "YYYYMMDD"},
		{`alice@example.com valid-after="20260102",valid-before="20260101" ` + pub, "valid-before is not after valid-after"},
		{`alice@example.com,,bob@example.com ` + pub, "empty principal"},
	} {
		allowed := allowedFile(t, "# signers", c.line)
		_, err := CheckSignature(dir, allowed)
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), allowed+":2: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("allowed signers %q: %v, want %s:2: … %s", c.line, err, allowed, c.want)
		}
	}
	if _, err := CheckSignature(dir, filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("a missing allowed-signers file: %v", err)
	}
}

// TestMatchPattern: ssh_config(5)'s patterns.
func TestMatchPattern(t *testing.T) {
	for _, c := range []struct {
		s, p string
		ok   bool
	}{
		{"benchflow-bundle", "benchflow-bundle", true},
		{"benchflow-bundle", "*", true},
		{"benchflow-bundle", "bench*", true},
		{"benchflow-bundle", "*-bundle", true},
		{"benchflow-bundle", "b*f*e", true},
		{"benchflow-bundle", "benchflow-bundl?", true},
		{"benchflow-bundle", "benchflow-bundle?", false},
		{"benchflow-bundle", "bench", false},
		{"benchflow-bundle", "*x*", false},
		{"", "*", true},
		{"", "?", false},
	} {
		if got := matchPattern(c.s, c.p); got != c.ok {
			t.Errorf("matchPattern(%q, %q) = %v", c.s, c.p, got)
		}
	}
}

// TestSignKeyErrors: a key with a passphrase and no ssh-agent, a public
// key without an agent, and a file that is no key are refused with what
// to do; nothing is written.
func TestSignKeyErrors(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	kdir := t.TempDir()
	enc := filepath.Join(kdir, "id_enc")
	if out, err := sshKeygen(t, kdir, nil, "-q", "-t", "ed25519", "-N", "secret", "-f", enc); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	junk := filepath.Join(kdir, "junk")
	os.WriteFile(junk, []byte("hello\n"), 0o600)
	for _, c := range []struct{ key, want string }{
		{enc, "passphrase"},
		{enc + ".pub", "is a public key"},
		{junk, "not an SSH private key"},
		{filepath.Join(kdir, "none"), "none"},
		{kdir, "folder"},
	} {
		dir := writeBundle(t, signedFiles)
		err := Sign(dir, c.key)
		t.Log(err)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("Sign with %s: %v, want %q", c.key, err, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, SigFile)); err == nil {
			t.Errorf("Sign with %s wrote %s", c.key, SigFile)
		}
	}
	if err := Sign(writeBundle(t, signedFiles), enc); err == nil || !strings.Contains(err.Error(), "ssh-agent") {
		t.Errorf("the passphrase's error does not say ssh-agent: %v", err)
	}
}

// TestSignThroughAgent: with ssh-agent holding the key, a key file with a
// passphrase and a public key file sign through it (ed25519 and rsa,
// which needs rsa-sha2-512 from the agent), and ssh-keygen verifies the
// signature; a key the agent does not hold is refused.
func TestSignThroughAgent(t *testing.T) {
	agentBin, err := exec.LookPath("ssh-agent")
	if err != nil {
		t.Fatalf("ssh-agent (openssh-client) is needed: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command(agentBin, "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i == 500 {
			t.Fatalf("ssh-agent made no socket %s", sock)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	sshAdd, err := exec.LookPath("ssh-add")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"ed25519", "rsa"} {
		key, pub, fp := newKey(t, typ)
		if out, err := exec.Command(sshAdd, "-q", key).CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v\n%s", err, out)
		}
		// Encrypt the file once the agent has the key.
		if out, err := sshKeygen(t, filepath.Dir(key), nil, "-q", "-p", "-N", "secret", "-P", "", "-f", key); err != nil {
			t.Fatalf("ssh-keygen -p: %v\n%s", err, out)
		}
		for _, k := range []string{key, key + ".pub"} {
			dir := writeBundle(t, signedFiles)
			if err := Sign(dir, k); err != nil {
				t.Fatalf("Sign with %s through the agent: %v", k, err)
			}
			if out, err := opensshVerify(t, dir, allowedFile(t, "alice@example.com "+pub), "alice@example.com"); err != nil {
				t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, out)
			}
			if s, err := CheckSignature(dir, ""); err != nil || s.Fingerprint != fp {
				t.Fatalf("CheckSignature: %+v, %v", s, err)
			}
		}
	}
	other, _, _ := newKey(t, "ecdsa")
	if out, err := sshKeygen(t, filepath.Dir(other), nil, "-q", "-p", "-N", "secret", "-P", "", "-f", other); err != nil {
		t.Fatalf("ssh-keygen -p: %v\n%s", err, out)
	}
	if err := Sign(writeBundle(t, signedFiles), other); err == nil || !strings.Contains(err.Error(), "does not hold it") {
		t.Errorf("a key the agent lacks: %v", err)
	}
}

func ExampleSignature_Signer() {
	s := Signature{Present: true, KeyType: "ssh-ed25519", Fingerprint: "SHA256:abc", Principal: "alice@example.com", Checked: true}
	fmt.Println(s.Signer())
	fmt.Println(Signature{}.Signer())
	// Output:
	// alice@example.com (ssh-ed25519 SHA256:abc)
	// unsigned
}
