package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledRunSysctlRestoredByGC tunes a real sysctl, kills benchflow with
// SIGKILL while the trial runs (so no teardown happens), and expects
// `benchflow gc --provider local` to put the original value back from the
// journal and remove a killed run's service folder. It runs
// in a network namespace of its own, so the net.* sysctl it changes is
// nobody else's; it needs root and ip(8).
func TestKilledRunSysctlRestoredByGC(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change a sysctl")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) (iproute2) for a network namespace")
	}
	ns := fmt.Sprintf("bf-journal-%d", rand.IntN(1e9))
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: %v %s", err, out)
	}
	const key, path = "net.ipv4.tcp_keepalive_probes", "/proc/sys/net/ipv4/tcp_keepalive_probes"
	inNS := func(args ...string) *exec.Cmd {
		return exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...)
	}
	read := func() string {
		b, err := inNS("cat", path).Output()
		if err != nil {
			t.Fatalf("reading %s: %v", key, err)
		}
		return strings.TrimSpace(string(b))
	}
	orig := read()
	want := "3"
	if orig == want {
		want = "4"
	}
	marker := robustMarker()
	t.Cleanup(func() {
		_ = inNS("sh", "-c", "echo "+orig+" > "+path).Run()
		for _, pid := range servePIDs(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = exec.Command("ip", "netns", "del", ns).Run()
	})

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	src := fmt.Sprintf(`
pipeline "journal" {}
step "tune" "net" {
  sysctl = { %q = %q }
}
step "exec" "hold" {
  command = ["sh", "-c", "sleep 120; : %s"]
}
`, key, want, marker)
	file := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "BENCHFLOW_STATE_DIR="+state, "BENCHFLOW_TMPDIR="+dir)
	apply := inNS(bin, "apply", file, "--out", filepath.Join(dir, "results"))
	apply.Env = env
	var out bytes.Buffer
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the exec step runs: the sysctl is changed by then.
	deadline := time.Now().Add(60 * time.Second)
	for len(servePIDs(marker)) == 0 {
		if time.Now().After(deadline) {
			_ = apply.Process.Kill()
			_ = apply.Wait()
			t.Fatalf("the exec step never started:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := read(); got != want {
		t.Fatalf("%s = %s while the trial runs, want %s (tune did not apply?)\n%s", key, got, want, out.String())
	}
	// SIGKILL benchflow (ip netns exec execs it: same pid) and its step.
	if err := apply.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = apply.Wait()
	for _, pid := range servePIDs(marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if got := read(); got != want {
		t.Fatalf("%s = %s after the kill, want still %s: nothing to restore", key, got, want)
	}
	journals, _ := filepath.Glob(filepath.Join(state, "tune-journal", "*.json"))
	if len(journals) != 1 {
		t.Fatalf("want one journal in %s, got %v", state, journals)
	}

	// A service folder of a killed run (its benchflow's pid is gone).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	svcDir := filepath.Join(dir, fmt.Sprintf("benchflow-20261201T000000Z-abcd-c01-r1-web-p%d-123", dead.Process.Pid))
	if err := os.MkdirAll(filepath.Join(svcDir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}

	// gc of the local provider only: the machine's own leftovers are its.
	gc := inNS(bin, "gc", "--provider", "local")
	gc.Env = env
	b, err := gc.CombinedOutput()
	if err != nil {
		t.Fatalf("gc: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "restored sysctl "+key+" = "+orig) {
		t.Errorf("gc does not say what it restored:\n%s", b)
	}
	if got := read(); got != orig {
		t.Errorf("%s = %s after gc, want the original %s", key, got, orig)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "tune-journal", "*.json")); len(left) != 0 {
		t.Errorf("journal left after gc: %v", left)
	}
	if _, err := os.Stat(svcDir); !os.IsNotExist(err) {
		t.Errorf("the killed run's service folder survives gc --provider local: %v\n%s", err, b)
	}
}
