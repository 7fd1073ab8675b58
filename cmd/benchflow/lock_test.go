package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConcurrentResumeRefused: while one `apply --resume` completes a
// killed run, a second one of the same run refuses at once, naming the
// lock, instead of running every pending trial a second time.
func TestConcurrentResumeRefused(t *testing.T) {
	marker := robustMarker()
	dir := robustWrite(t, map[string]string{"p.hcl": fmt.Sprintf(`
pipeline "lock" {}
matrix { n = [1, 2] }
step "exec" "hold" {
  command = ["sh", "-c", "sleep 120; : %s"]
}
`, marker)})
	killAll := func() {
		for _, pid := range servePIDs(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	t.Cleanup(killAll)
	out := filepath.Join(dir, "results")
	start := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, &b
	}
	waitHold := func(b *bytes.Buffer) {
		deadline := time.Now().Add(60 * time.Second)
		for len(servePIDs(marker)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the exec step never started:\n%s", b.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first, b := start("apply", "p.hcl", "--out", out)
	waitHold(b)
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()
	killAll()
	robustNoneLeft(t, marker) // gone before the next step is looked for
	run, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}

	_, b1 := start("apply", "p.hcl", "--resume", run)
	waitHold(b1)
	stdout, stderr, code := robustRun(t, dir, 30*time.Second, "apply", "p.hcl", "--resume", run)
	if code != 1 || !strings.Contains(stderr, "another benchflow process is writing this run") {
		t.Errorf("second resume: exit %d, want 1 with the lock named\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "trial c01") {
		t.Errorf("the refused resume ran trials:\n%s", stderr)
	}
	if m := readManifest(t, run); m.Status != "running" {
		t.Errorf("manifest status %q while the first resume runs", m.Status)
	}
	if _, err := os.Stat(run); err != nil {
		t.Fatal(err)
	}
}

// TestFullDiskLeavesNoEmptyRun: when the results disk is full before the
// first byte of a run is written, apply fails naming the disk and leaves
// no run folder (and no latest link) behind.
func TestFullDiskLeavesNoEmptyRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	results := filepath.Join(mnt, "results")
	if err := os.Mkdir(results, 0o755); err != nil {
		t.Fatal(err)
	}
	// Fill every byte.
	f, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	for {
		if _, err := f.Write([]byte{0}); err != nil {
			break
		}
	}
	f.Close()
	dir := robustWrite(t, map[string]string{"p.hcl": `
pipeline "full" {}
step "exec" "x" { command = ["true"] }
`})
	_, stderr, code := robustRun(t, dir, 30*time.Second, "apply", "p.hcl", "--out", results)
	if code != 1 || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("exit %d, want 1 naming the disk:\n%s", code, stderr)
	}
	entries, _ := os.ReadDir(results)
	for _, e := range entries {
		t.Errorf("left in the results folder: %s", e.Name())
	}
}
