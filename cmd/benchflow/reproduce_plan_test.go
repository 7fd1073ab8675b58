package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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

// TestReproducePlanRuntimeCondition: a command chosen by a condition on a
// value known only at run time (the service's port: 0 when planning) is
// refused, named, rather than shown one way and run another; a port
// written into a command as it is is accepted.
func TestReproducePlanRuntimeCondition(t *testing.T) {
	b := publishStudy(t, planStudy)
	src, _ := os.ReadFile(filepath.Join(b, "pipeline.hcl"))
	rewritePipeline(t, b, string(src)+`
step "exec" "branch" {
  command = ["sh", "-c", service.web.port == 0 ? "echo shown-in-the-plan" : "echo runs-instead"]
}
`, true)
	work := t.TempDir()
	out, err := runHome(t, work, t.TempDir(), "reproduce", b, "--plan")
	if err != nil || !strings.Contains(out, "exec.branch's command depends on service.web.port, known only at run time, through a condition") {
		t.Errorf("--plan: %v\n%s", err, out)
	}
	if strings.Contains(out, "service web's command depends") {
		t.Errorf("a port written into a command as it is was refused:\n%s", out)
	}
	out, err = runHome(t, work, t.TempDir(), "reproduce", b, "--yes", "--out", "again")
	if exitCode(err) != 1 || !strings.Contains(out, "nothing ran") {
		t.Errorf("--yes: exit %d\n%s", exitCode(err), out)
	}
}

// TestReproduceVerdictSameConfined: the same bundle reproduced unconfined
// and in the sandbox gives a verdict of the same shape — the same
// sections and columns, the same claims with the same outcome here, the
// same cells — and the environment differs only by what the sandbox
// hides, named (sandbox, docker, the network's sysctls).
func TestReproduceVerdictSameConfined(t *testing.T) {
	b := publishStudy(t, trustStudy)
	work := t.TempDir()
	verdict := func(args ...string) map[string]any {
		t.Helper()
		out, err := runHome(t, work, t.TempDir(), append([]string{"reproduce", b, "--yes", "-q", "--format", "json"}, args...)...)
		if err != nil {
			t.Fatalf("reproduce %v: %v\n%s", args, err, out)
		}
		var v map[string]any
		i := strings.Index(out, "{")
		if i < 0 || json.NewDecoder(strings.NewReader(out[i:])).Decode(&v) != nil {
			t.Fatalf("reproduce %v: no JSON verdict:\n%s", args, out)
		}
		return v
	}
	free := verdict("--no-sandbox", "--out", "free")
	boxed := verdict("--out", "boxed")
	keys := func(m map[string]any) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return strings.Join(ks, " ")
	}
	if keys(free) != keys(boxed) {
		t.Errorf("sections: unconfined %s, confined %s", keys(free), keys(boxed))
	}
	rows := func(v map[string]any, section, key string) (names []string, cols string) {
		l, _ := v[section].([]any)
		for _, r := range l {
			m := r.(map[string]any)
			names = append(names, fmt.Sprint(m[key], "=", m["here"]))
			cols = keys(m)
		}
		sort.Strings(names)
		return names, cols
	}
	for _, s := range []struct{ section, key string }{{"claims", "name"}, {"cells", "cell"}} {
		n1, c1 := rows(free, s.section, s.key)
		n2, c2 := rows(boxed, s.section, s.key)
		if s.section == "cells" {
			n1, n2 = nil, nil // reproduced or not is the machine's noise
			a, _ := free["cells"].([]any)
			c, _ := boxed["cells"].([]any)
			if len(a) != len(c) || len(a) == 0 {
				t.Errorf("cells: %d unconfined, %d confined", len(a), len(c))
			}
		}
		if strings.Join(n1, ",") != strings.Join(n2, ",") || c1 != c2 {
			t.Errorf("%s: unconfined %v (%s), confined %v (%s)", s.section, n1, c1, n2, c2)
		}
	}
	fields := func(v map[string]any) map[string]bool {
		m := map[string]bool{}
		l, _ := v["environment"].([]any)
		for _, r := range l {
			m[fmt.Sprint(r.(map[string]any)["field"])] = true
		}
		return m
	}
	ff, bf := fields(free), fields(boxed)
	hidden := func(f string) bool {
		for _, p := range []string{"sandbox", "docker", "tools.docker", "sysctls.net."} {
			if strings.HasPrefix(f, p) {
				return true
			}
		}
		return false
	}
	for f := range bf {
		if !ff[f] && !hidden(f) {
			t.Errorf("environment field %s differs only confined", f)
		}
	}
	if !bf["sandbox"] {
		t.Error("the confined verdict does not name the sandbox among the differences")
	}
}

// TestReproducePlanSensitiveShape: a sensitive variable's default, which
// the bundle carries in its pipeline, is shown where it is the command
// (with a note), never "(sensitive)" in place of what runs; a value the
// reader gives with --var is redacted, the command's other words shown.
func TestReproducePlanSensitiveShape(t *testing.T) {
	b := publishStudy(t, `
pipeline "secretive" {
  repetitions = 1
}
variable "script" {
  sensitive = true
  default   = "echo shape-of-5512"
}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}"]
  port "http" {}
  health { http = "/" }
}
step "exec" "hidden" {
  command = ["sh", "-c", var.script, "--flag-7707"]
}
step "load" "main" {
  target      = "${service.web.url}/"
  connections = 1
  threads     = 1
  requests    = 5
}
`)
	work := t.TempDir()
	out, err := runHome(t, work, t.TempDir(), "reproduce", b, "--plan")
	if err != nil || !strings.Contains(out, "sh -c 'echo shape-of-5512' --flag-7707") || !strings.Contains(out, "sensitive variable script: its value is the bundle's own default") {
		t.Errorf("--plan: %v\n%s", err, out)
	}
	out, err = runHome(t, work, t.TempDir(), "reproduce", b, "--plan", "--var", "script=mine-9931-secret")
	if err != nil || strings.Contains(out, "mine-9931") || !strings.Contains(out, "sh -c '(sensitive)' --flag-7707") {
		t.Errorf("--plan --var script=…: %v\n%s", err, out)
	}
}

// TestRestoreTuneJournals: reproduce restores a tuned run's sysctls from
// the journal the sandbox wrote — only those the tune grant allows; an
// entry naming kernel.core_pattern (a bundle's forged journal) is
// refused, named, and not written.
func TestRestoreTuneJournals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: sysctls are root's")
	}
	cur := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Skip(err)
		}
		return strings.TrimSpace(string(b))
	}
	core, fileMax := cur("/proc/sys/kernel/core_pattern"), cur("/proc/sys/fs/file-max")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tune-journal"), 0o700)
	j := fmt.Sprintf(`{"owner": {}, "sysctls": [
  {"path": "/proc/sys/fs/file-max", "original": %q},
  {"path": "/proc/sys/kernel/core_pattern", "original": "|/tmp/forged %%p"},
  {"path": "/proc/sys/fs/../kernel/modprobe", "original": "/tmp/forged"},
  {"path": "/proc/sys/net/core/somaxconn", "original": "1"}
]}`, fileMax)
	os.WriteFile(filepath.Join(dir, "tune-journal", "2.json"), []byte(j), 0o600)
	done, err := restoreTuneJournals(dir, false)
	if got := cur("/proc/sys/kernel/core_pattern"); got != core {
		os.WriteFile("/proc/sys/kernel/core_pattern", []byte(core), 0o644)
		t.Fatalf("kernel.core_pattern was written (%q; put back %q)", got, core)
	}
	if err == nil || !strings.Contains(err.Error(), "/proc/sys/kernel/core_pattern") || !strings.Contains(err.Error(), "modprobe") {
		t.Errorf("the forged entries are not named: %v", err)
	}
	if len(done) != 1 || done[0] != "sysctl fs.file-max = "+fileMax {
		t.Errorf("restored %q, want fs.file-max only (net.* of its own namespace is gone with it)", done)
	}
}
