package main

import (
	"os/exec"
	"strings"
	"testing"
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
