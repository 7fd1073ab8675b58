package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFullDiskMidRunMarksTrialFailed: when the results disk fills up during
// a run (here the second trial's exec step fills a small tmpfs), apply
// stops with the disk named, and manifest.json — rewritten in place, as
// there is no room for a new one — says the trial that could not be
// recorded failed, with the reason, and the run failed, not pending and
// running. The trial committed before stays readable.
func TestFullDiskMidRunMarksTrialFailed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	results := filepath.Join(mnt, "results")
	filler := filepath.Join(mnt, "filler")
	dir := robustWrite(t, map[string]string{"p.hcl": `
pipeline "fills" {}
matrix { n = ["1", "2", "3"] }
step "exec" "fill" {
  command = ["sh", "-c", matrix.n == "2" ? "head -c 64M /dev/zero > ` + filler + `; true" : "true"]
}
`})
	_, stderr, code := robustRun(t, dir, 60*time.Second, "apply", "p.hcl", "--out", results)
	if code != 1 || !strings.Contains(stderr, "no space left on device") {
		t.Fatalf("exit %d, want 1 naming the disk:\n%s", code, stderr)
	}
	run, err := filepath.EvalSymlinks(filepath.Join(results, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Status string `json:"status"`
		Trials []struct {
			TrialID string `json:"trial_id"`
			Status  string `json:"status"`
			Error   string `json:"error"`
		} `json:"trials"`
	}
	b, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest.json does not parse: %v\n%s", err, b)
	}
	if m.Status != "failed" {
		t.Errorf("run status %q, want failed", m.Status)
	}
	want := map[string]string{"c01-r1": "ok", "c02-r1": "failed", "c03-r1": "pending"}
	for _, tr := range m.Trials {
		if tr.Status != want[tr.TrialID] {
			t.Errorf("trial %s: status %q, want %q (%s)", tr.TrialID, tr.Status, want[tr.TrialID], tr.Error)
		}
		if tr.TrialID == "c02-r1" && !strings.Contains(tr.Error, "recording the trial: ") {
			t.Errorf("trial %s: error %q does not give the reason", tr.TrialID, tr.Error)
		}
	}
	// Room again: the run reads, and the committed trial is in it.
	_ = os.Remove(filler)
	stdout, stderr, code := robustRun(t, dir, 30*time.Second, "report", run)
	if code != 0 || !strings.Contains(stdout, "1/3 trials ok") {
		t.Errorf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
