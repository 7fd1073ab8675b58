package results

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchflow/benchflow/engine/scratch"
	"github.com/benchflow/benchflow/engine/scratch/scratchtest"
)

// A run folder is locked while a Writer has it: a second Resume refuses
// with ErrRunLocked, and succeeds once the first writer is done. Resume
// removes the staging folder and temporary files a killed writer recorded.
func TestRunFolderLock(t *testing.T) {
	out := t.TempDir()
	w := writeRun(t, out, "20261130T044500Z-10c4", FormatParquet, synthRecords(2), memory.DefaultAllocator)
	dir := w.Dir()
	if _, err := Resume(dir); !errors.Is(err, ErrRunLocked) {
		t.Fatalf("Resume while the writer has the run: %v, want ErrRunLocked", err)
	}
	if c, err := CleanLeftovers(out); err != nil || len(c.Removed)+len(c.Interrupted) != 0 {
		t.Fatalf("CleanLeftovers on a run in use: %+v %v", c, err)
	}
	_ = w.Close()

	// What a writer killed mid-commit leaves.
	stage := filepath.Join(dir, ".staging-123")
	if err := os.Mkdir(stage, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".manifest.json.tmp-456")
	if err := os.WriteFile(tmp, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	scratchtest.RecordKilled(t, scratch.Run(dir), stage, scratch.Dir)
	scratchtest.RecordKilled(t, scratch.Run(dir), tmp, scratch.File)
	r1, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stage, tmp} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survives Resume", p)
		}
	}
	if _, err := Resume(dir); !errors.Is(err, ErrRunLocked) {
		t.Fatalf("second Resume: %v, want ErrRunLocked", err)
	}
	if err := r1.Finish(RunOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r2, err := Resume(dir)
	if err != nil {
		t.Fatalf("Resume after Finish: %v", err)
	}
	_ = r2.Close()

	// gc's path: leftovers of a run nobody writes.
	if err := os.Mkdir(stage, 0o700); err != nil {
		t.Fatal(err)
	}
	scratchtest.RecordKilled(t, scratch.Run(dir), stage, scratch.Dir)
	c, err := CleanLeftovers(out)
	if err != nil || len(c.Removed) != 1 || c.Removed[0] != stage {
		t.Errorf("CleanLeftovers = %+v, %v; want [%s]", c, err, stage)
	}
}
