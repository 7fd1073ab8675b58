package main

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

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/scratch/scratchtest"
)

// gcTestEnv keeps a test's gc and apply off the machine's state: their
// journals and service folders live in the test's folder.
func gcTestEnv(dir string) []string {
	return append(os.Environ(), "BENCHFLOW_STATE_DIR="+filepath.Join(dir, "state"), "BENCHFLOW_TMPDIR="+dir)
}

// TestGCResultsTouchesOnlyBenchflows: `benchflow gc -o DIR` and `apply
// --out DIR` clean a results folder that also holds the user's folders and
// files shaped like benchflow's temporary names (at several depths, in a
// folder that is not a run, behind a symlink out of DIR) and a live run.
// Only the recorded leftovers of the run killed with SIGKILL go, that run is marked
// interrupted, and nothing of the user's or of the live run changes.
func TestGCResultsTouchesOnlyBenchflows(t *testing.T) {
	killedMarker, liveMarker := robustMarker(), robustMarker()
	dir := robustWrite(t, map[string]string{
		"killed.hcl": fmt.Sprintf(`
pipeline "killed" {}
matrix { n = [1, 2, 3] }
step "exec" "hold" { command = ["sh", "-c", "sleep 120; : %s"] }
`, killedMarker),
		"live.hcl": fmt.Sprintf(`
pipeline "live" {}
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", "10"]
  port "http" {}
  health { http = "/" }
}
step "exec" "hold" { command = ["sh", "-c", "sleep 120; : %s"] }
`, liveMarker),
		"quick.hcl": `
pipeline "quick" {}
step "exec" "x" { command = ["true"] }
`,
	})
	env := gcTestEnv(dir)
	killMarked := func(marker string) {
		for _, pid := range servePIDs(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	t.Cleanup(func() { killMarked(killedMarker); killMarked(liveMarker) })
	out := filepath.Join(dir, "results")
	start := func(marker string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		deadline := time.Now().Add(60 * time.Second)
		for len(servePIDs(marker)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the exec step never started:\n%s", b.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return cmd
	}
	latest := func() string {
		t.Helper()
		run, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	mkfile := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("the user's"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	k := start(killedMarker, "apply", "killed.hcl", "--out", out)
	_ = k.Process.Signal(syscall.SIGKILL)
	_ = k.Wait()
	killMarked(killedMarker)
	killed := latest()
	if m := readManifest(t, killed); m.Status != "running" {
		t.Fatalf("the killed run's manifest says %q", m.Status)
	}
	// What a writer killed mid-commit leaves, recorded in the run's
	// journal before it was made.
	mkfile(filepath.Join(killed, ".staging-123", "trials.parquet"))
	leftovers := []string{
		filepath.Join(killed, ".staging-123"),
		mkfile(filepath.Join(killed, ".manifest.json.tmp-456")),
	}
	scratchtest.RecordKilled(t, scratch.Run(killed), leftovers[0], scratch.Dir)
	scratchtest.RecordKilled(t, scratch.Run(killed), leftovers[1], scratch.File)

	// A live run (its own gc skipped, so it leaves the killed run alone),
	// with an unfinished write of its own.
	start(liveMarker, "apply", "live.hcl", "--out", out, "--no-gc")
	live := latest()
	if live == killed {
		t.Fatal("the live run did not start a run folder")
	}
	ext := t.TempDir()
	kept := []string{
		mkfile(filepath.Join(out, "project", ".staging-area", "notes.txt")),
		mkfile(filepath.Join(out, "project", ".staging-1", "data.csv")),
		mkfile(filepath.Join(out, "project", "a", "b", ".staging-22", "deep.csv")),
		mkfile(filepath.Join(out, "project", ".report.md.tmp-3")),
		mkfile(filepath.Join(out, ".staging-9", "top.txt")),
		mkfile(filepath.Join(out, "20261201T120000Z-beef", ".staging-1", "no-manifest")),
		mkfile(filepath.Join(killed, ".staging-mine", "f")),
		mkfile(filepath.Join(killed, ".staging-124", "not recorded")),
		mkfile(filepath.Join(ext, ".staging-4", "outside")),
		mkfile(filepath.Join(live, ".staging-5", "t")),
		mkfile(filepath.Join(live, ".manifest.json.tmp-6")),
	}
	if err := os.Symlink(ext, filepath.Join(out, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ext, ".staging-4"), filepath.Join(killed, ".staging-77")); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, filepath.Join(killed, ".staging-77"))
	check := func(what string) {
		t.Helper()
		for _, p := range kept {
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("%s removed the user's %s", what, p)
			}
		}
		for _, p := range leftovers {
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s left %s", what, p)
			}
		}
		if m := readManifest(t, live); m.Status != "running" {
			t.Errorf("after %s the live run's manifest says %q", what, m.Status)
		}
	}

	// What the live run has on the machine: its service (a process with
	// its run id in the environment), its service folder, its step.
	liveID := filepath.Base(live)
	t.Cleanup(func() {
		for _, pid := range runProcesses(liveID) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	liveDirs, _ := filepath.Glob(filepath.Join(dir, "benchflow-"+liveID+"-*"))
	if len(liveDirs) == 0 || len(runProcesses(liveID)) == 0 {
		t.Fatalf("the live run has no service folder (%v) or no service process", liveDirs)
	}
	checkLive := func(what string) {
		t.Helper()
		for _, d := range liveDirs {
			if _, err := os.Stat(d); err != nil {
				t.Errorf("%s removed the live run's service folder %s", what, d)
			}
		}
		if len(runProcesses(liveID)) == 0 {
			t.Errorf("%s stopped the live run's service", what)
		}
		if len(servePIDs(liveMarker)) == 0 {
			t.Errorf("%s stopped the live run's step", what)
		}
	}

	gc := exec.Command(bin, "gc", "--provider", "local", "-o", out)
	gc.Dir, gc.Env = dir, env
	b, err := gc.CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, b)
	}
	check("gc -o")
	checkLive("gc -o")
	if m := readManifest(t, killed); m.Status != "interrupted" {
		t.Errorf("the killed run's manifest says %q after gc, want interrupted", m.Status)
	}
	if !strings.Contains(string(b), "marked run interrupted (its process was killed): "+killed) {
		t.Errorf("gc does not say it marked the killed run:\n%s", b)
	}
	if strings.Contains(string(b), live) {
		t.Errorf("gc names the live run:\n%s", b)
	}

	// apply's own cleanup before its first trial: the same rules.
	leftovers = append(leftovers, mkfile(filepath.Join(killed, ".trials.parquet.tmp-7")))
	scratchtest.RecordKilled(t, scratch.Run(killed), leftovers[len(leftovers)-1], scratch.File)
	cmd := exec.Command(bin, "apply", "quick.hcl", "--out", out)
	cmd.Dir, cmd.Env = dir, env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	check("apply --out")
	checkLive("apply --out")
}

// runProcesses lists the processes whose environment names run id (the
// local provider's services).
func runProcesses(id string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, b...), []byte("\x00BENCHFLOW_RUN="+id+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
