package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/benchflow/benchflow/engine/serve"
)

// caStudy loads an https server, verifying its certificate against the CA
// file certs/${var.ca}.
const caStudy = `
pipeline "tls" {}
variable "url" {}
variable "ca" { default = "ca.pem" }
step "warm" "w" {
  target      = var.url
  requests    = 5
  connections = 1
  cacert      = "certs/${var.ca}"
}
step "load" "l" {
  target      = var.url
  requests    = 40
  connections = 2
  threads     = 1
  cacert      = "certs/${var.ca}"
}
`

// TestApplyCACert: a load step's cacert is read from the pipeline's
// folder; with the server's CA the load verifies and succeeds, with
// another CA every request fails on the certificate and the trial fails.
// The run keeps the file in sources/, publish carries it in the bundle,
// and the bundle moved elsewhere reproduces with it.
func TestApplyCACert(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("hello\n"))
	}))
	t.Cleanup(srv.Close)
	other, err := serve.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	files := map[string][]byte{
		"study.hcl":        []byte(caStudy),
		"certs/ca.pem":     caPEM,
		"certs/wrong.pem":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.Leaf.Raw}),
		"certs/unused.pem": caPEM,
	}
	os.MkdirAll(filepath.Join(dir, "certs"), 0o755)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	url := srv.URL + "/"
	out, err := runBin(t, dir, "apply", "study.hcl", "--var", "url="+url, "--out", "good", "-q")
	if err != nil {
		t.Fatalf("apply with the server's CA: %v\n%s", err, out)
	}
	if n := hits.Load(); n < 45 {
		t.Errorf("the server saw %d requests, want 45 (5 warm, 40 load)", n)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "good", "2*"))
	if len(runs) != 1 {
		t.Fatalf("want one run, got %v", runs)
	}
	if b, err := os.ReadFile(filepath.Join(runs[0], "sources", "certs", "ca.pem")); err != nil || string(b) != string(caPEM) {
		t.Fatalf("the run did not keep certs/ca.pem: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runs[0], "sources", "certs", "unused.pem")); err == nil {
		t.Error("the run kept certs/unused.pem, which the pipeline never read")
	}
	if m, _ := os.ReadFile(filepath.Join(runs[0], "manifest.json")); !strings.Contains(string(m), `"path": "certs/ca.pem"`) {
		t.Errorf("manifest.json does not list certs/ca.pem:\n%s", m)
	}

	// Another CA: the certificate does not verify, every request fails.
	before := hits.Load()
	out, err = runBin(t, dir, "apply", "study.hcl", "--var", "url="+url, "--var", "ca=wrong.pem", "--out", "bad", "-q")
	if err == nil || !regexp.MustCompile(`certificate|x509`).MatchString(out) {
		t.Errorf("apply with another CA: err %v, want a failure naming the certificate\n%s", err, out)
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("%d requests reached the handler through an unverified certificate", n)
	}

	// The bundle carries the CA file, and reproduces with it elsewhere
	// (the server is the host's: --allow host-network).
	if out, err := runBin(t, dir, "publish", runs[0], "pub/tls"); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	moved := filepath.Join(t.TempDir(), "tls")
	if err := os.Rename(filepath.Join(dir, "pub", "tls"), moved); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(moved, "sources", "certs", "ca.pem")); err != nil || string(b) != string(caPEM) {
		t.Fatalf("the bundle lacks sources/certs/ca.pem: %v", err)
	}
	if sums, _ := os.ReadFile(filepath.Join(moved, "SHA256SUMS")); !strings.Contains(string(sums), "  sources/certs/ca.pem\n") {
		t.Errorf("SHA256SUMS does not list sources/certs/ca.pem:\n%s", sums)
	}
	before = hits.Load()
	elsewhere := t.TempDir()
	out, err = runBin(t, elsewhere, "reproduce", moved, "--yes", "--allow", "host-network", "--out", "again", "-q")
	if err != nil {
		t.Fatalf("reproduce: %v\n%s", err, out)
	}
	if n := hits.Load() - before; n < 45 {
		t.Errorf("the reproduction sent %d requests, want 45", n)
	}
	again, _ := filepath.Glob(filepath.Join(elsewhere, "again", "2*"))
	if len(again) != 1 {
		t.Fatalf("want the reproduction's run in again/, got %v", again)
	}
	if b, err := os.ReadFile(filepath.Join(again[0], "sources", "certs", "ca.pem")); err != nil || string(b) != string(caPEM) {
		t.Errorf("the reproduction did not keep certs/ca.pem: %v", err)
	}
}

// TestValidateCACert: a cacert that is missing, not PEM, or given to a
// step on agents is an error at the attribute.
func TestValidateCACert(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.pem"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o644)
	cert, _ := serve.SelfSigned()
	os.WriteFile(filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Leaf.Raw}), 0o644)
	os.Mkdir(filepath.Join(dir, "folder.pem"), 0o755)
	step := "pipeline \"p\" {}\nstep \"load\" \"l\" {\n  target   = \"https://127.0.0.1:9/\"\n  requests = 4\n  cacert   = %q\n%s}\n"
	for _, c := range []struct {
		name, cacert, extra string
		want                []string
	}{
		{"missing", "missing.pem", "", []string{`p\.hcl:5,14: Missing file`, `cacert "missing\.pem"`}},
		{"not PEM", "bad.pem", "", []string{`p\.hcl:5,14: Invalid file`, `no PEM certificate in bad\.pem`}},
		{"folder", "folder.pem", "", []string{`p\.hcl:5,14: Unreadable file`, `folder\.pem: not a regular file \(a folder\)`}},
		{"outside", "../ca.pem", "", []string{`p\.hcl:5,14: `, `leaves the pipeline's folder`}},
		{"agents", "ca.pem", "  agents {\n    count = 2\n  }\n", []string{`p\.hcl:5,14: Unsupported with agents`, `not sent to agents`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(strings.Replace(strings.Replace(step, "%q", `"`+c.cacert+`"`, 1), "%s", c.extra, 1)), 0o644)
			out, err := runBin(t, dir, "validate", "p.hcl")
			if exitCode(err) != 1 {
				t.Fatalf("exit %d, want 1\n%s", exitCode(err), out)
			}
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("output lacks %s:\n%s", w, out)
				}
			}
		})
	}
	os.WriteFile(filepath.Join(dir, "p.hcl"), []byte(strings.Replace(strings.Replace(step, "%q", `"ca.pem"`, 1), "%s", "", 1)), 0o644)
	if out, err := runBin(t, dir, "validate", "p.hcl"); err != nil {
		t.Errorf("a PEM CA file: %v\n%s", err, out)
	}
}
