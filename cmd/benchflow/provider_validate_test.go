package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateProviderSettings runs the real binary's validate on provider
// blocks with bad settings: each is reported at its attribute
// (FILE:LINE,COL) with a suggestion, before anything is deployed. A network
// named like a mode is allowed (a user network) but warned about.
func TestValidateProviderSettings(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	src := `pipeline "p" {}
provider "docker" "typo" {
  network = "brige"
}
provider "docker" "bad" {
  pull = "alwyas"
}
service "web" {
  provider = "typo"
  image    = "nginx"
  port "http" { container = 80 }
}
service "api" {
  provider = "bad"
  image    = "nginx"
  port "http" { container = 80 }
}
step "load" "main" {
  target   = "${service.web.url}/"
  requests = 10
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "validate", file).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("validate: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{
		file + `:3,13: Warning: Suspicious provider setting`,
		`Did you mean "bridge"?`,
		file + `:6,10: Invalid provider setting`,
		`pull: "alwyas" is not "missing", "never" or "always". Did you mean "always"?`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), "Invalid provider setting"); n != 1 {
		t.Errorf("the bad pull is reported %d times, want once:\n%s", n, out)
	}

	// The typo alone is a warning: validate succeeds and still says it.
	src = strings.Replace(src, `pull = "alwyas"`, `pull = "always"`, 1)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "validate", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), file+`:3,13: Warning: Suspicious provider setting`) {
		t.Errorf("validate with only the warning: %v\n%s", err, out)
	}
}
