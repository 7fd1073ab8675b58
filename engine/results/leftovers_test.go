package results

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/scratch/scratchtest"
)

// TestCleanLeftoversOnlyBenchflows: the cleanup of a results folder removes
// what a killed writer recorded making inside a run folder (staging
// folders and temporary files) and marks that run interrupted; the user's
// folders and files shaped like those names — unrecorded, in folders that
// are not runs, at several depths, in a folder named like a run without a
// manifest, behind symlinks (issue 38: parts/ a link to the user's folder,
// with records naming what is behind it) — and a live run are left exactly
// as they were, and the recorded paths behind a symlink are reported.
func TestCleanLeftoversOnlyBenchflows(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "results")
	ext := filepath.Join(root, "elsewhere") // outside the results folder
	mkfile := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("user data"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	symlink := func(target, link string) string {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		return link
	}

	// A run killed mid-commit: never finished, its lock released.
	killed := writeRun(t, out, "20261130T044500Z-dead", FormatParquet, synthRecords(1), memory.DefaultAllocator)
	if err := killed.SaveSources([]SourceFile{{Path: "lib/.cfg.tmp-3", Data: []byte("a loaded file")}}); err != nil {
		t.Fatal(err)
	}
	_ = killed.Close()
	kdir := killed.Dir()
	mkfile(filepath.Join(kdir, ".staging-123", "trials.parquet"))
	leftovers := []string{
		filepath.Join(kdir, ".staging-123"),
		mkfile(filepath.Join(kdir, ".manifest.json.tmp-456")),
		mkfile(filepath.Join(kdir, ".trials.parquet.tmp-4294967295")),
		mkfile(filepath.Join(kdir, SourcesDir, "lib", ".helper.star.tmp-77")),
	}
	j := scratch.Run(kdir)
	for i, p := range leftovers {
		kind := scratch.File
		if i == 0 {
			kind = scratch.Dir
		}
		scratchtest.RecordKilled(t, j, p, kind)
	}
	// parts/ a symlink to the user's folder, and records naming what is
	// behind it.
	user := filepath.Join(root, "U")
	behind := []string{
		mkfile(filepath.Join(user, ".staging-42", "important.txt")),
		mkfile(filepath.Join(user, ".notes.tmp-7")),
		mkfile(filepath.Join(user, ".d", ".staging-8", "deep")),
	}
	if err := os.RemoveAll(filepath.Join(kdir, PartsDir)); err != nil {
		t.Fatal(err)
	}
	symlink(user, filepath.Join(kdir, PartsDir))
	leftAlone := []string{
		filepath.Join(kdir, PartsDir, ".staging-42"),
		filepath.Join(kdir, PartsDir, ".notes.tmp-7"),
		filepath.Join(kdir, PartsDir, ".d", ".staging-8"),
	}
	scratchtest.RecordKilled(t, j, leftAlone[0], scratch.Dir)
	scratchtest.RecordKilled(t, j, leftAlone[1], scratch.File)
	scratchtest.RecordKilled(t, j, leftAlone[2], scratch.Dir)
	// A symlink in a staging folder: the folder goes, its target stays.
	extInStage := mkfile(filepath.Join(ext, "instage", "keep"))
	symlink(filepath.Dir(extInStage), filepath.Join(kdir, ".staging-123", "link"))

	// A live run: another process writes it.
	live := writeRun(t, out, "20261130T050000Z-1111", FormatParquet, synthRecords(1), memory.DefaultAllocator)
	defer live.Close()

	// Everything of the user's, shaped like benchflow's names.
	kept := []string{
		mkfile(filepath.Join(out, "project", ".staging-area", "notes.txt")),
		mkfile(filepath.Join(out, "project", ".staging-123", "data.csv")),
		mkfile(filepath.Join(out, "project", "deep", "er", ".staging-1", "f")),
		mkfile(filepath.Join(out, "project", ".a.tmp-1")),
		mkfile(filepath.Join(out, "project", "deep", ".b.tmp-22")),
		mkfile(filepath.Join(out, ".staging-5", "top")),
		mkfile(filepath.Join(out, ".x.tmp-7")),
		mkfile(filepath.Join(out, ".latest.tmp-20261130T044500Z-dead.bak")),
		symlink("20261130T044500Z-dead", filepath.Join(out, ".latest.tmp-20261130T044500Z-dead")),
		// Named like a run, but no manifest: not a run folder.
		mkfile(filepath.Join(out, "20261130T044500Z-beef", ".staging-1", "f")),
		mkfile(filepath.Join(out, "20261130T044500Z-beef", ".y.tmp-2")),
		// Inside the killed run, names benchflow does not make.
		mkfile(filepath.Join(kdir, ".staging-area", "mine")),
		mkfile(filepath.Join(kdir, ".notes.tmp-x")),
		mkfile(filepath.Join(kdir, "sub", ".staging-4", "mine")),
		mkfile(filepath.Join(kdir, "sub", ".z.tmp-5")),
		// A pipeline file the manifest lists, whatever its name.
		filepath.Join(kdir, SourcesDir, "lib", ".cfg.tmp-3"),
		// The live run's unfinished write.
		mkfile(filepath.Join(live.Dir(), ".staging-9", "t")),
		mkfile(filepath.Join(live.Dir(), ".manifest.json.tmp-10")),
		extInStage,
	}
	kept = append(kept, behind...)
	// A folder whose manifest names another run.
	other := filepath.Join(out, "20261130T044500Z-cafe")
	kept = append(kept, mkfile(filepath.Join(other, ".staging-2", "f")))
	b, err := os.ReadFile(filepath.Join(kdir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Symlinks out of the results folder: a run folder elsewhere, reached
	// by a link named like a run, and a link named like a staging folder.
	far := writeRun(t, ext, "20261130T060000Z-2222", FormatParquet, synthRecords(1), memory.DefaultAllocator)
	_ = far.Close()
	kept = append(kept, mkfile(filepath.Join(far.Dir(), ".staging-8", "f")))
	kept = append(kept, symlink(far.Dir(), filepath.Join(out, "20261130T060000Z-2222")))
	extStage := mkfile(filepath.Join(ext, "stage", "keep"))
	kept = append(kept, extStage, symlink(filepath.Dir(extStage), filepath.Join(kdir, ".staging-77")))
	kept = append(kept, symlink(extStage, filepath.Join(kdir, ".w.tmp-1")))

	c, err := CleanLeftovers(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the user's %s was removed: %v", p, err)
		}
	}
	for _, p := range leftovers {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s survives: %v", p, err)
		}
	}
	got := slices.Clone(c.Removed)
	slices.Sort(got)
	want := slices.Clone(leftovers)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Removed = %q\nwant %q", got, want)
	}
	var left []string
	for _, l := range c.Left {
		left = append(left, l.Path)
		if !strings.Contains(l.Why, filepath.Join(kdir, PartsDir)+" is a symlink") {
			t.Errorf("%s left alone because %q", l.Path, l.Why)
		}
	}
	slices.Sort(left)
	slices.Sort(leftAlone)
	if !slices.Equal(left, leftAlone) {
		t.Errorf("Left = %q\nwant %q", left, leftAlone)
	}
	if !slices.Equal(c.Interrupted, []string{kdir}) {
		t.Errorf("Interrupted = %q, want [%s]", c.Interrupted, kdir)
	}
	for dir, want := range map[string]string{kdir: RunInterrupted, live.Dir(): RunRunning, far.Dir(): RunRunning, other: RunRunning} {
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != want {
			t.Errorf("%s: status %q, want %q", dir, m.Status, want)
		}
	}
	if m, _ := ReadManifest(kdir); m.FinishedAt == nil {
		t.Errorf("the interrupted run has no finished_at")
	}
	// The interrupted run is whole: it reads and resumes.
	if err := os.Remove(filepath.Join(kdir, PartsDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRun(kdir); err != nil {
		t.Errorf("reading the cleaned run: %v", err)
	}
	r, err := Resume(kdir)
	if err != nil {
		t.Fatalf("resuming the cleaned run: %v", err)
	}
	_ = r.Close()

	// A second pass finds nothing more.
	c, err = CleanLeftovers(out)
	if err != nil || len(c.Removed)+len(c.Interrupted) != 0 {
		t.Errorf("second pass: %+v, %v", c, err)
	}
}

// TestResumeCleansOnlyARun: --resume of a folder that is not a run (no
// manifest) removes nothing from it.
func TestResumeCleansOnlyARun(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, ".staging-1", "mine")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(dir); err == nil {
		t.Fatal("Resume of a folder without a manifest succeeded")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("Resume removed the user's file: %v", err)
	}
}

func TestValidRunID(t *testing.T) {
	for id, want := range map[string]bool{
		"20261130T044500Z-3f9c":  true,
		NewRunID(t0):             true,
		"20261130T044500Z-3F9C":  false,
		"20261130T044500Z-lock":  false,
		"20261399T044500Z-3f9c":  false,
		"20261130T044500Z-3f9c0": false,
		"../20261130T044500Z-3f": false,
		"":                       false,
	} {
		if got := ValidRunID(id); got != want {
			t.Errorf("ValidRunID(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestCleanLeftoversSkips: a run folder named in skip (the run a resume is
// about to reopen), even through a symlink, keeps its status and files.
func TestCleanLeftoversSkips(t *testing.T) {
	out := t.TempDir()
	w := writeRun(t, out, "20261130T044500Z-5c1f", FormatParquet, synthRecords(1), memory.DefaultAllocator)
	_ = w.Close()
	stage := filepath.Join(w.Dir(), ".staging-1")
	if err := os.Mkdir(stage, 0o755); err != nil {
		t.Fatal(err)
	}
	scratchtest.RecordKilled(t, scratch.Run(w.Dir()), stage, scratch.Dir)
	c, err := CleanLeftovers(out, filepath.Join(out, "latest"))
	if err != nil || len(c.Removed)+len(c.Interrupted) != 0 {
		t.Errorf("CleanLeftovers with the run skipped: %+v, %v", c, err)
	}
	if m, _ := ReadManifest(w.Dir()); m.Status != RunRunning {
		t.Errorf("skipped run's status %q", m.Status)
	}
	if _, err := os.Stat(stage); err != nil {
		t.Errorf("skipped run's staging folder removed: %v", err)
	}
}
