package results

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLatestNotMovedToEmptyRun: latest names a run while it runs, but a
// run in which no trial succeeded (every trial failed: a stack that was
// not up) gives it back to the run before it when it finishes; a run with
// one success keeps it.
func TestLatestNotMovedToEmptyRun(t *testing.T) {
	out := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(id string, status string) *Writer {
		t.Helper()
		rec := synthRecord(rng, 0, "host", 16, 1, 1000)
		if status != StatusOK {
			rec.Status, rec.Error, rec.Steps = status, "dial tcp 127.0.0.1:4646: connection refused", nil
		}
		m := synthManifest(id, []*TrialRecord{rec})
		w, err := Create(out, m, nil, "p.hcl")
		if err != nil {
			t.Fatal(err)
		}
		if l, _ := os.Readlink(filepath.Join(out, "latest")); l != id {
			t.Errorf("while %s runs, latest names %q", id, l)
		}
		if err := w.CommitTrial(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(RunOK, time.Now()); err != nil {
			t.Fatal(err)
		}
		return w
	}
	latest := func() string {
		l, _ := os.Readlink(filepath.Join(out, "latest"))
		return l
	}
	if w := run("20261207T190000Z-aaaa", StatusOK); latest() != "20261207T190000Z-aaaa" || w.LatestKept() != "" {
		t.Fatalf("after a run that ran, latest = %q, kept %q", latest(), w.LatestKept())
	}
	if w := run("20261207T190100Z-bbbb", StatusFailed); latest() != "20261207T190000Z-aaaa" || w.LatestKept() != "20261207T190000Z-aaaa" {
		t.Errorf("after a run in which nothing ran, latest = %q (kept %q), want the run before it", latest(), w.LatestKept())
	}
	if w := run("20261207T190200Z-cccc", StatusOK); latest() != "20261207T190200Z-cccc" || w.LatestKept() != "" {
		t.Errorf("after a run that ran, latest = %q, kept %q", latest(), w.LatestKept())
	}
}
