package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// planStudy's service has a version_command, and its exec step an
// argument with a terminal escape and a line break that would erase a
// plan line and forge another.
const planStudy = `
pipeline "planned" {
  repetitions = 1
}
service "web" {
  command         = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  version_command = ["sh", "-c", "echo version-probe-7731"]
  port "http" {}
  health { http = "/" }
}
step "exec" "forge" {
  command = ["echo", "x\u001b[2K\rfaked: nothing runs\nok   forged line"]
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 1
  threads     = 1
  requests    = 5
}
`

// TestReproducePlanShowsAll: the plan shows the version_command, shows an
// argument's escape and line break as $'…' (no control character reaches
// the terminal), and a tune step setting a sysctl no grant allows is
// named and refused, confined, before anything runs.
func TestReproducePlanShowsAll(t *testing.T) {
	b := publishStudy(t, planStudy)
	work := t.TempDir()
	out, err := runHome(t, work, t.TempDir(), "reproduce", b, "--plan")
	if err != nil {
		t.Fatalf("--plan: %v\n%s", err, out)
	}
	if !strings.Contains(out, "version  sh -c 'echo version-probe-7731'") {
		t.Errorf("the plan does not show the version_command:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("a control character of the bundle reached the plan:\n%q", out)
	}
	if !strings.Contains(out, `$'x\x1b[2K\x0dfaked: nothing runs\nok   forged line'`) {
		t.Errorf("the forged argument is not shown as written:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "ok   forged line") {
			t.Errorf("the bundle forged a plan line: %q", l)
		}
	}

	// A tune step writing kernel.core_pattern: named, and refused even
	// with --allow tune.
	src, _ := os.ReadFile(filepath.Join(b, "pipeline.hcl"))
	rewritePipeline(t, b, string(src)+`
step "tune" "evil" {
  sysctl = { "kernel.core_pattern" = "|/tmp/x", "net.core.somaxconn" = "4096" }
}
`, true)
	out, err = runHome(t, work, t.TempDir(), "reproduce", b, "--plan")
	if err != nil || !strings.Contains(out, "refused in the sandbox") || !strings.Contains(out, "sets sysctl kernel.core_pattern, which the sandbox never allows") || strings.Contains(out, "sysctl net.core.somaxconn, which") {
		t.Errorf("--plan of a core_pattern tune: %v\n%s", err, out)
	}
	out, err = runHome(t, work, t.TempDir(), "reproduce", b, "--yes", "--allow", "tune", "--out", "again")
	if exitCode(err) != 1 || !strings.Contains(out, "never allows") || !strings.Contains(out, "nothing ran") {
		t.Errorf("--yes --allow tune of a core_pattern tune: exit %d\n%s", exitCode(err), out)
	}
	if _, err := os.Stat(filepath.Join(work, "again")); err == nil {
		t.Error("a refused bundle made a results folder")
	}
}

// TestReproduceSwapAfterCheck: a bundle whose files are swapped for
// another, consistent bundle's once reproduce has copied them: the plan
// (and the run) are the copy's, what was checked.
func TestReproduceSwapAfterCheck(t *testing.T) {
	b := publishStudy(t, trustStudy)
	swapped := strings.Replace(trustStudy, `touch \"$HOME/marker\"`, `echo swapped-in-7741`, 1)
	defer func() { afterSnapshot = nil }()
	afterSnapshot = func(dir string) { rewritePipeline(t, dir, swapped, true) }
	var o bytes.Buffer
	rootCmd.SetOut(&o)
	rootCmd.SetErr(&o)
	defer func() { rootCmd.SetOut(stdout); rootCmd.SetErr(stderr); rootCmd.SetArgs(nil) }()
	rootCmd.SetArgs([]string{"reproduce", b, "--plan"})
	if err := rootCmd.Execute(); err != nil {
		t.Fatalf("--plan: %v\n%s", err, o.String())
	}
	if strings.Contains(o.String(), "swapped-in-7741") || !strings.Contains(o.String(), `touch "$HOME/marker"`) {
		t.Errorf("the plan is not of the bundle as checked:\n%s", o.String())
	}
	// The swap did happen: the bundle on disk is the other one now.
	if src, _ := os.ReadFile(filepath.Join(b, "pipeline.hcl")); !strings.Contains(string(src), "swapped-in-7741") {
		t.Fatal("the test proves nothing: the bundle was not swapped")
	}
}
