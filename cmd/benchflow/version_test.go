package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionReachesPipeline builds the binary with -X main.version=vTEST
// and renders a service whose command echoes benchflow.version: the
// pipeline sees the binary's version, not "dev".
func TestVersionReachesPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "benchflow")
	if out, err := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version=vTEST", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("building benchflow: %v\n%s", err, out)
	}
	if out, err := exec.Command(exe, "--version").Output(); err != nil || !strings.Contains(string(out), "vTEST") {
		t.Fatalf("benchflow --version: %q, %v", out, err)
	}
	file := filepath.Join(dir, "p.hcl")
	pipeline := `
pipeline "version" {}
service "web" {
  command = ["sh", "-c", "echo running benchflow ${benchflow.version}; exec sleep 60"]
  env     = { BENCHFLOW_VERSION = benchflow.version }
  port "http" {}
}
step "load" "main" {
  target   = service.web.url
  requests = 1
}
`
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "render", file).CombinedOutput()
	if err != nil {
		t.Fatalf("render: %v\n%s", err, out)
	}
	for _, want := range []string{"echo running benchflow vTEST;", "BENCHFLOW_VERSION=vTEST"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "benchflow dev") {
		t.Errorf("render shows the version as dev:\n%s", out)
	}
}
