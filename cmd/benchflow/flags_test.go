package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/run"
)

// TestFlagsSaidOnce: gc offers only the pipeline flags it uses, and -v
// means --verbose only (the version is --version).
func TestFlagsSaidOnce(t *testing.T) {
	out, err := exec.Command(bin, "gc", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("gc --help: %v\n%s", err, out)
	}
	for _, f := range []string{"--repetitions", "--seed", "--max-trials"} {
		if strings.Contains(string(out), f) {
			t.Errorf("gc --help lists %s, which gc does not use", f)
		}
	}
	if !strings.Contains(string(out), "--var ") {
		t.Error("gc --help lost --var")
	}
	out, _ = exec.Command(bin, "--help").CombinedOutput()
	if strings.Contains(string(out), "-v, --version") {
		t.Errorf("benchflow --help offers -v for --version:\n%s", out)
	}
	out, err = exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "benchflow version") {
		t.Errorf("benchflow --version: %v %q", err, out)
	}
}

// TestWarningsOncePerRun: the same warning from twelve trials is printed
// once, and the run's end says which other trials gave it; warnings that
// differ are all printed.
func TestWarningsOncePerRun(t *testing.T) {
	var b strings.Builder
	c := &Console{W: &b}
	for i := 1; i <= 12; i++ {
		// three processes per trial, each its own pid, as a service
		// with workers gives
		for j := 0; j < 3; j++ {
			c.Warnf("trial %s: %s", fmt.Sprintf("c%02d-r1", i), fmt.Sprintf("setting rlimit nofile=65535 for pid %d: operation not permitted (needs root) (optional, skipped)", 4000+10*i+j))
		}
	}
	c.Warnf("trial c01-r1: busy start: 120%% of a core")
	c.Warnf("trial c02-r1: busy start: 90%% of a core")
	c.RunDone(&run.Summary{RunID: "r", Status: "ok", Trials: 12, OK: 12})
	out := b.String()
	if n := strings.Count(out, "setting rlimit nofile"); n != 2 {
		t.Errorf("the rlimit warning appears %d times, want once and once in the end line:\n%s", n, out)
	}
	if !strings.Contains(out, "warning: 11 more trials (c02-r1, c03-r1, c04-r1, …, c12-r1) gave the same warning: setting rlimit") {
		t.Errorf("no end line naming the other trials:\n%s", out)
	}
	if !strings.Contains(out, "120% of a core") || !strings.Contains(out, "90% of a core") {
		t.Errorf("different warnings were merged:\n%s", out)
	}
}

// TestLoadLuaScript: a wrk (Lua) script is refused with what request
// scripts are and where they are documented, before any request is sent.
func TestLoadLuaScript(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x.lua", "x.star"} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte("wrk.method = \"POST\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "load", "-s", f, "-n", "1", "http://127.0.0.1:9/").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "request scripts are Starlark, not Lua") || !strings.Contains(string(out), "docs/starlark.md") {
			t.Errorf("load -s %s: %v\n%s", name, err, out)
		}
	}
}

// TestReprobeRowMarked: a capacity search's second probe of one rate is
// marked as a re-probe in the probe table.
func TestReprobeRowMarked(t *testing.T) {
	c := &measure.Capacity{Probes: []measure.Probe{
		{Rate: 1000, Achieved: 1000, Pass: true},
		{Rate: 2000, Achieved: 1500, Reason: "sends late; probing the rate again"},
		{Rate: 2000, Achieved: 2000, Pass: true},
	}}
	var b strings.Builder
	writeProbes(&b, c)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || strings.Contains(lines[2], "re-probe") || !strings.Contains(lines[3], "pass, re-probe") {
		t.Errorf("probe table:\n%s", b.String())
	}
}
