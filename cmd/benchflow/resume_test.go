package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const resumePipeline = `
pipeline "resume" {
  repetitions = 2
}
matrix { size = ["6", "1KiB"] }
service "web" {
  command = [benchflow.bin, "serve", "--addr", "127.0.0.1:${self.port.http}", "--size", matrix.size]
  port "http" {}
  health { http = "/" }
}
step "load" "main" {
  target      = service.web.url
  connections = 2
  threads     = 1
  duration    = "700ms"
}
`

func trialKeys(t *testing.T, dir string) []string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A run still going, or killed, has its trials in part files
	// (docs/results.md): DuckDB reads them with a glob.
	src := filepath.Join(dir, "trials.parquet")
	if _, err := os.Stat(filepath.Join(dir, "parts")); err == nil {
		src = filepath.Join(dir, "parts", "*", "trials.parquet")
	}
	rows, err := db.Query(fmt.Sprintf(`SELECT trial_id || '/' || step || '/' || param_size || '/' || status FROM read_parquet('%s')`, src))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestKillAndResume kills apply with SIGKILL between trials, reads the
// finished trials, then completes the run with --resume and compares it with
// an uninterrupted run.
func TestKillAndResume(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.hcl")
	if err := os.WriteFile(file, []byte(resumePipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	// Uninterrupted reference run.
	ref := filepath.Join(dir, "ref")
	if out, err := exec.Command(bin, "apply", file, "--out", ref, "-q").CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := trialKeys(t, filepath.Join(ref, "latest"))
	if len(want) != 4 {
		t.Fatalf("reference run has %d rows, want 4", len(want))
	}

	out := filepath.Join(dir, "killed")
	cmd := exec.Command(bin, "apply", file, "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Kill it once two trials are committed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(out, "latest", "manifest.json"))
		if strings.Count(string(b), `"status": "ok"`) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("two trials never completed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	run, err := filepath.EvalSymlinks(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, run)
	done := 0
	for _, tr := range m.Trials {
		if tr.Status == "ok" {
			done++
		}
	}
	if done < 2 || done == 4 {
		t.Fatalf("after SIGKILL %d trials are ok; want 2 or 3", done)
	}
	killedKeys := trialKeys(t, run)
	if len(killedKeys) < 2 {
		t.Fatalf("the finished trials are not readable: %v", killedKeys)
	}
	if _, err := os.Stat(filepath.Join(run, "trials.parquet")); err == nil {
		t.Error("a killed run has trials.parquet: its commits rewrote the tables")
	}
	// report reads the killed run's parts; compact (on a copy) merges them
	// into the tables, with the same rows.
	if o, err := exec.Command(bin, "report", run).CombinedOutput(); err != nil {
		t.Errorf("report on the killed run: %v\n%s", err, o)
	}
	cp := filepath.Join(dir, "copy")
	if err := os.CopyFS(cp, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command(bin, "compact", cp).CombinedOutput(); err != nil || !strings.Contains(string(o), "merged into the tables") {
		t.Errorf("compact: %v\n%s", err, o)
	}
	if _, err := os.Stat(filepath.Join(cp, "parts")); !os.IsNotExist(err) {
		t.Errorf("compact left parts/ (%v)", err)
	}
	if got := trialKeys(t, cp); !cmp.Equal(got, killedKeys) {
		t.Errorf("compacted trials %v, parts held %v", got, killedKeys)
	}

	// Changing a variable is refused.
	o, err := exec.Command(bin, "apply", file, "--resume", run, "--repetitions", "3").CombinedOutput()
	if err == nil {
		t.Fatalf("resume with a different plan was accepted:\n%s", o)
	}

	if o, err := exec.Command(bin, "apply", file, "--resume", run, "-q").CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, o)
	}
	m = readManifest(t, run)
	if m.Status != "ok" {
		t.Errorf("resumed run status %q", m.Status)
	}
	// The killed run could not remove its service folder; apply's gc
	// removes it once its owner is gone.
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "benchflow-"+m.RunID+"-*")); len(left) > 0 {
		t.Errorf("service folders of the killed run left behind: %v", left)
	}
	var got []string
	for _, k := range trialKeys(t, run) {
		got = append(got, k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resumed run differs from an uninterrupted one (-want +got):\n%s", diff)
	}
}
