package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/scratch/scratchtest"
)

// stripRun clears what differs between two runs of the same trials (the
// run id and folder) so their tables compare.
func stripRun(r *Run) *Run {
	c := *r
	c.Trials = append([]TrialRow(nil), r.Trials...)
	for i := range c.Trials {
		c.Trials[i].RunID = ""
	}
	c.Latency = append([]LatencyRow(nil), r.Latency...)
	for i := range c.Latency {
		c.Latency[i].RunID = ""
	}
	c.Timeseries = append([]TimeseriesRow(nil), r.Timeseries...)
	for i := range c.Timeseries {
		c.Timeseries[i].RunID = ""
	}
	c.Processes = append([]ProcessRow(nil), r.Processes...)
	for i := range c.Processes {
		c.Processes[i].RunID = ""
	}
	c.System = append([]SystemRow(nil), r.System...)
	for i := range c.System {
		c.System[i].RunID = ""
	}
	c.Network = append([]NetworkRow(nil), r.Network...)
	for i := range c.Network {
		c.Network[i].RunID = ""
	}
	return &c
}

func diffTables(t *testing.T, what string, a, b *Run) {
	t.Helper()
	a, b = stripRun(a), stripRun(b)
	for _, d := range []string{
		cmp.Diff(a.Trials, b.Trials), cmp.Diff(a.Latency, b.Latency), cmp.Diff(a.Timeseries, b.Timeseries),
		cmp.Diff(a.Processes, b.Processes), cmp.Diff(a.System, b.System), cmp.Diff(a.Network, b.Network),
		cmp.Diff(a.Axes, b.Axes),
	} {
		if d != "" {
			t.Errorf("%s: tables differ (-uninterrupted +other):\n%s", what, d)
			return
		}
	}
}

// TestResumedRunEqualsUninterrupted: a run killed twice — once after a
// trial failed (then compacted, as `benchflow compact` does), once in the
// middle of its resumption (read in both forms at once) — and resumed
// each time ends with tables equal, row for row, to an uninterrupted
// run's; a trial run again replaces its failed rows.
func TestResumedRunEqualsUninterrupted(t *testing.T) {
	for _, format := range []string{FormatParquet, FormatArrow} {
		t.Run(format, func(t *testing.T) {
			recs := synthRecords(7)
			full := writeRun(t, t.TempDir(), "20261130T044500Z-full", format, recs, memory.DefaultAllocator)
			if err := full.Finish(RunOK, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			want, err := ReadRun(full.Dir())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(full.Dir(), PartsDir)); !os.IsNotExist(err) {
				t.Errorf("a finished run keeps %s/ (%v)", PartsDir, err)
			}

			failed := *recs[1]
			failed.Status, failed.Error, failed.Steps, failed.Processes = StatusFailed, "port busy", nil, nil
			killed := writeRun(t, t.TempDir(), "20261130T044500Z-kill", format, []*TrialRecord{recs[0], &failed, recs[2]}, memory.DefaultAllocator)
			killed.Close() // killed: no Finish
			dir := killed.Dir()
			if _, err := Compact(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, PartsDir)); !os.IsNotExist(err) {
				t.Fatalf("Compact left %s/ (%v)", PartsDir, err)
			}

			resume := func() (*Writer, []*TrialRecord) {
				t.Helper()
				w, err := Resume(dir)
				if err != nil {
					t.Fatal(err)
				}
				var rest []*TrialRecord
				for _, r := range recs {
					if !w.Manifest().Done(r.TrialID) {
						rest = append(rest, r)
					}
				}
				return w, rest
			}
			w, rest := resume()
			if len(rest) != len(recs)-2 || rest[0].TrialID != recs[1].TrialID {
				t.Fatalf("first resume would run %v", ids(rest))
			}
			for _, r := range rest[:2] {
				if err := w.CommitTrial(r); err != nil {
					t.Fatal(err)
				}
			}
			w.Close() // killed again, while resumed: tables plus parts
			mixed, err := ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if mixed.Compacted() {
				t.Error("a killed resumed run reads as compacted")
			}
			var sub []string
			for _, r := range recs[:4] {
				sub = append(sub, r.TrialID)
			}
			if got := trialIDs(mixed); !cmp.Equal(got, sub) {
				t.Errorf("killed resumed run holds trials %v, want %v", got, sub)
			}
			for _, r := range mixed.Trials {
				if r.TrialID == recs[1].TrialID && r.Status != StatusOK {
					t.Errorf("the trial run again still reads as %q", r.Status)
				}
			}

			w, rest = resume()
			if len(rest) != len(recs)-4 {
				t.Fatalf("second resume would run %v", ids(rest))
			}
			for _, r := range rest {
				if err := w.CommitTrial(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Finish(RunOK, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			got, err := ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Compacted() {
				t.Error("finished run not compacted")
			}
			diffTables(t, "resumed twice", want, got)
			for _, e := range got.Manifest.Trials {
				if e.Status != StatusOK {
					t.Errorf("trial %s status %q", e.TrialID, e.Status)
				}
			}
		})
	}
}

// TestCommitWritesOnlyItsTrial: a commit creates its trial's part folder
// and touches no other trial's files and no table of the run (so its cost
// does not depend on how many trials came before; the run's journal, which
// records its staging folder, is rewritten); the run's tables appear when
// it finishes.
func TestCommitWritesOnlyItsTrial(t *testing.T) {
	recs := synthRecords(8)
	w := writeRun(t, t.TempDir(), "20261130T044500Z-only", FormatParquet, recs[:3], memory.DefaultAllocator)
	inodes := func() map[string]uint64 {
		out := map[string]uint64{}
		filepath.Walk(w.Dir(), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && filepath.Base(p) != "manifest.json" && filepath.Base(p) != scratch.RunJournalFile {
				out[p] = fi.Sys().(*syscall.Stat_t).Ino
			}
			return nil
		})
		return out
	}
	before := inodes()
	for p := range before {
		if filepath.Dir(filepath.Dir(p)) != filepath.Join(w.Dir(), PartsDir) && filepath.Base(p) != "pipeline.hcl" {
			t.Errorf("a running run has %s outside its parts", p)
		}
	}
	if err := w.CommitTrial(recs[3]); err != nil {
		t.Fatal(err)
	}
	after := inodes()
	for p, ino := range before {
		if after[p] != ino {
			t.Errorf("committing trial 4 rewrote %s", p)
		}
	}
	newDir := filepath.Join(w.Dir(), PartsDir, recs[3].TrialID)
	for p := range after {
		if _, old := before[p]; !old && filepath.Dir(p) != newDir {
			t.Errorf("committing trial 4 wrote %s", p)
		}
	}
	if err := w.Finish(RunOK, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "trials.parquet")); err != nil {
		t.Errorf("finished run: %v", err)
	}
}

// TestPartsLeftoversAndStaleManifest: what a kill mid-commit leaves (a
// staging folder with half its files) is not read and is removed by
// Resume; a manifest.json older than the parts (rewritten less often than
// commits) is completed from the parts' trial.json.
func TestPartsLeftoversAndStaleManifest(t *testing.T) {
	recs := synthRecords(9)
	out := t.TempDir()
	w := writeRun(t, out, "20261130T044500Z-1ef7", FormatParquet, recs[:1], memory.DefaultAllocator)
	stale, err := os.ReadFile(filepath.Join(w.Dir(), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CommitTrial(recs[1]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The manifest as it was before trial 2, and half a third commit.
	if err := os.WriteFile(filepath.Join(w.Dir(), "manifest.json"), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(w.Dir(), PartsDir, ".staging-123")
	os.MkdirAll(half, 0o755)
	b, _ := os.ReadFile(filepath.Join(w.Dir(), PartsDir, recs[0].TrialID, "latency.parquet"))
	os.WriteFile(filepath.Join(half, "latency.parquet"), b[:len(b)/2], 0o644)
	tmp := filepath.Join(w.Dir(), PartsDir, ".trials.parquet.tmp-9")
	os.WriteFile(tmp, b[:10], 0o644)
	scratchtest.RecordKilled(t, scratch.Run(w.Dir()), half, scratch.Dir)
	scratchtest.RecordKilled(t, scratch.Run(w.Dir()), tmp, scratch.File)

	run, err := ReadRun(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if got := trialIDs(run); !cmp.Equal(got, ids(recs[:2])) {
		t.Errorf("trials = %v", got)
	}
	if !run.Manifest.Done(recs[1].TrialID) {
		t.Error("the trial committed after manifest.json was written is not done")
	}
	r, err := Resume(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Errorf("Resume left the staging folder (%v)", err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("Resume left the temporary file (%v)", err)
	}
	if c := r.Cleanup(); c == nil || len(c.Removed) != 2 || len(c.Left) != 0 {
		t.Errorf("Resume's cleanup: %+v", c)
	}
	if !r.Manifest().Done(recs[1].TrialID) || r.Manifest().Done(recs[2].TrialID) {
		t.Error("resume: wrong trials done")
	}
}

// TestCompactRefusesLockedRun: a run another process writes is not
// compacted under it.
func TestCompactRefusesLockedRun(t *testing.T) {
	w := writeRun(t, t.TempDir(), "20261130T044500Z-lckd", FormatParquet, synthRecords(1)[:1], memory.DefaultAllocator)
	defer w.Close()
	if _, err := Compact(w.Dir()); err == nil || !errorsIs(err, ErrRunLocked) {
		t.Errorf("Compact of a run being written: %v", err)
	}
}

// TestStreamLatencyEqualsLoaded: EachHistogram over a run in both forms
// yields the histograms Run.Histogram gives from the loaded table.
func TestStreamLatencyEqualsLoaded(t *testing.T) {
	recs := synthRecords(10)
	w := writeRun(t, t.TempDir(), "20261130T044500Z-strm", FormatParquet, recs, memory.DefaultAllocator)
	w.Close()
	loaded, err := ReadRun(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := ReadRunWith(w.Dir(), ReadOptions{StreamLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(streamed.Latency) != 0 || !streamed.HasLatency() {
		t.Fatalf("streamed run holds %d buckets, HasLatency %v", len(streamed.Latency), streamed.HasLatency())
	}
	n := 0
	err = streamed.EachHistogram(func(trial, step string, h Histogram) error {
		n++
		if d := cmp.Diff(loaded.Histogram(trial, step), h); d != "" {
			t.Errorf("%s/%s differs:\n%s", trial, step, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no histogram streamed")
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// TestCompactionEqualsParts: compaction, which streams every table
// (trials included) from the parts into single files batch by batch,
// leaves tables equal row for row to the run read from its parts before:
// a run whose latency table spans several batches, a trial committed
// twice, and an axis that only later trials have.
func TestCompactionEqualsParts(t *testing.T) {
	recs := benchRecords(70) // ≈70,000 latency rows: more than one batch
	late := *recs[69]
	late.Params = append(append([]Param(nil), late.Params...), Param{Name: "tls", Value: true})
	recs[69] = &late
	again := *recs[3]
	again.Status = StatusFailed
	again.Steps = append([]StepRecord(nil), again.Steps...)
	again.Steps[0].Status = StatusFailed
	w, err := Create(t.TempDir(), synthManifest("20261130T044500Z-cmpt", nil), nil, "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(recs, &again) {
		if err := w.CommitTrial(r); err != nil {
			t.Fatal(err)
		}
	}
	before, err := ReadRun(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if before.Compacted() {
		t.Fatal("the run is compacted before Finish")
	}
	if err := w.Finish(RunOK, t0); err != nil {
		t.Fatal(err)
	}
	after, err := ReadRun(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if !after.Compacted() {
		t.Fatal("the run is not compacted after Finish")
	}
	if len(after.Latency) <= batchRows || len(after.Trials) != 70 {
		t.Fatalf("%d latency rows, %d trials rows", len(after.Latency), len(after.Trials))
	}
	if after.Trials[3].Status != StatusFailed || after.Trials[69].Param("tls") != true {
		t.Errorf("trial 3 %q, trial 69 tls=%v", after.Trials[3].Status, after.Trials[69].Param("tls"))
	}
	diffTables(t, "compacted", before, after)
}

// TestCompactRemovesOnlyParts: compaction removes the part folders it
// merged and nothing else: a file of the user's in parts/ stays (and so
// does parts/), a run whose parts/ is a symlink is not compacted through
// it, and a finished run keeps no journal.
func TestCompactRemovesOnlyParts(t *testing.T) {
	recs := synthRecords(3)
	w := writeRun(t, t.TempDir(), "20261130T044500Z-c0a1", FormatParquet, recs, memory.DefaultAllocator)
	w.Close()
	dir := w.Dir()
	notes := filepath.Join(dir, PartsDir, ".notes.tmp-7")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Errorf("compaction removed the user's %s: %v", notes, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, PartsDir)); len(ents) != 1 {
		t.Errorf("parts/ holds %v after compaction", ents)
	}
	if _, err := os.Lstat(filepath.Join(dir, scratch.RunJournalFile)); !os.IsNotExist(err) {
		t.Errorf("a compacted run keeps its journal (%v)", err)
	}
	if run, err := ReadRun(dir); err != nil || len(run.Manifest.Trials) != len(recs) {
		t.Errorf("the compacted run: %v", err)
	}

	// parts/ a symlink to a folder holding a run's parts.
	w2 := writeRun(t, t.TempDir(), "20261130T044500Z-c0a2", FormatParquet, recs, memory.DefaultAllocator)
	w2.Close()
	elsewhere := filepath.Join(t.TempDir(), "parts")
	if err := os.Rename(filepath.Join(w2.Dir(), PartsDir), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(w2.Dir(), PartsDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Compact(w2.Dir()); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Compact through a symlinked parts/: %v", err)
	}
	for _, r := range recs {
		if _, err := os.Stat(filepath.Join(elsewhere, r.TrialID, PartEntryFile)); err != nil {
			t.Errorf("removed through the symlink: %v", err)
		}
	}
}
