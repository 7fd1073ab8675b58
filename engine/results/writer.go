package results

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchflow/benchflow/engine/scratch"
)

// Writer owns one run directory while a run executes. Each CommitTrial
// writes that trial alone, as its own part folder (parts/<trial-id>/:
// its rows of every table and its manifest entry, staged and renamed
// into place in one step, see parts.go), so a commit's cost does not grow
// with the run and a run killed at any moment keeps every trial
// committed before. Finish compacts the parts into the run's single-file
// tables. The Writer keeps no trial's rows after its commit.
//
// A Writer is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	dir  string
	m    *Manifest
	mem  memory.Allocator
	axes []axis
	done bool
	lock *os.File // flock on dir while this process writes it
	// manifest.json is rewritten after a commit only once the time since
	// its last rewrite is manifestEvery times what that rewrite took, so
	// its cost (which grows with the run's trials) stays a bounded share;
	// each part's trial.json holds the entry meanwhile.
	lastManifest time.Time
	manifestCost time.Duration
	// cleanup is what Resume cleaned of a killed writer's leftovers.
	cleanup *Cleanup
	// outDir and prevLatest: the results folder and the run its latest
	// link named before Create pointed it here ("" when none); Finish
	// points it back when no trial of this run succeeded (latestKept).
	outDir, prevLatest, latestKept string
}

// manifestEvery bounds the share of time spent rewriting manifest.json
// between commits (1/manifestEvery).
const manifestEvery = 20

// Create makes outDir/<m.RunID>/, writes manifest.json (status "running",
// every trial "pending"), the pipeline source as pipeline.hcl or
// pipeline.star (sourceName's extension) and points outDir/latest at the
// run (a relative symlink, replaced atomically).
func Create(outDir string, m *Manifest, source []byte, sourceName string) (*Writer, error) {
	if m == nil {
		return nil, errors.New("creating run: nil manifest")
	}
	if err := checkRunID(m.RunID); err != nil {
		return nil, fmt.Errorf("creating run: %w", err)
	}
	switch m.OutputFormat {
	case "":
		m.OutputFormat = FormatParquet
	case FormatParquet, FormatArrow:
	default:
		return nil, fmt.Errorf("creating run: unknown output format %q (want %q or %q)", m.OutputFormat, FormatParquet, FormatArrow)
	}
	dir := filepath.Join(outDir, m.RunID)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating results folder: %w", err)
	}
	perm := os.FileMode(0o755)
	if m.Private {
		perm = 0o700
	}
	if err := os.Mkdir(dir, perm); err != nil {
		return nil, fmt.Errorf("creating run folder: %w", err)
	}
	// Nothing half-made stays behind: a run folder that could not be
	// set up (a full disk) is removed.
	lock, err := lockRun(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("creating run folder: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unlockRun(lock)
			os.RemoveAll(dir) // made here: ours, journal and all
		}
	}()
	if err := os.Chmod(dir, perm); err != nil { // whatever the umask
		return nil, fmt.Errorf("creating run folder: %w", err)
	}
	m.SchemaVersion = SchemaVersion
	m.Status = RunRunning
	m.FinishedAt = nil
	for i := range m.Trials {
		m.Trials[i].Status = StatusPending
	}
	w := &Writer{dir: dir, m: m, mem: memory.DefaultAllocator, lock: lock}
	ext := strings.ToLower(filepath.Ext(sourceName))
	name := "pipeline.hcl"
	if ext == ".star" || m.Pipeline.Format == "star" {
		name = "pipeline.star"
	}
	if err := writeFileAtomic(runJournal(dir), filepath.Join(dir, name), func(f *os.File) error {
		_, err := f.Write(source)
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating run: %w", err)
	}
	if err := writeManifest(dir, m); err != nil {
		return nil, fmt.Errorf("creating run: %w", err)
	}
	w.outDir = outDir
	if prev, err := os.Readlink(filepath.Join(outDir, "latest")); err == nil && prev != m.RunID && !strings.Contains(prev, "/") {
		if _, err := os.Stat(filepath.Join(outDir, prev, "manifest.json")); err == nil {
			w.prevLatest = prev
		}
	}
	if err := pointLatest(outDir, m.RunID); err != nil {
		return nil, fmt.Errorf("creating run: %w", err)
	}
	ok = true
	return w, nil
}

// SourcesDir is the folder of a run directory that holds the files the
// pipeline loaded, at their paths relative to the pipeline's folder.
const SourcesDir = "sources"

// SourceFile is a file the pipeline loaded (path relative to the
// pipeline's folder, slash-separated).
type SourceFile struct {
	Path string
	Data []byte
}

// SaveSources copies the files the pipeline loaded into the run directory
// (SourcesDir/<path>, each through a temporary file and rename) and lists
// them with their sha256 in manifest.json, so the run keeps everything
// that ran.
func (w *Writer) SaveSources(files []SourceFile) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fmt.Errorf("saving pipeline file %q: not a path inside the pipeline's folder", f.Path)
		}
		dst := filepath.Join(w.dir, SourcesDir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), dirPerm(w.dir)); err != nil {
			return fmt.Errorf("saving pipeline file %s: %w", f.Path, err)
		}
		if err := writeFileAtomic(runJournal(w.dir), dst, func(out *os.File) error {
			_, err := out.Write(f.Data)
			return err
		}); err != nil {
			return fmt.Errorf("saving pipeline file %s: %w", f.Path, err)
		}
		sum := sha256.Sum256(f.Data)
		w.m.Pipeline.Files = append(w.m.Pipeline.Files, PipelineFile{Path: f.Path, SHA256: hex.EncodeToString(sum[:])})
	}
	if err := writeManifest(w.dir, w.m); err != nil {
		return fmt.Errorf("saving pipeline files: %w", err)
	}
	return nil
}

// pointLatest makes outDir/latest a symlink to runID, atomically.
func pointLatest(outDir, runID string) error {
	link := filepath.Join(outDir, "latest")
	if fi, err := os.Lstat(link); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("pointing %s at the run: it exists and is not a symlink", link)
	}
	tmp := filepath.Join(outDir, fmt.Sprintf(".latest.tmp-%s", runID))
	rec, err := scratch.Machine().Expect(tmp, scratch.Link, "")
	if err != nil {
		return fmt.Errorf("pointing %s at the run: %w", link, err)
	}
	defer rec.Done()
	if err := os.Symlink(runID, tmp); err != nil {
		return fmt.Errorf("pointing %s at the run: %w", link, err)
	}
	rec.Made()
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pointing %s at the run: %w", link, err)
	}
	syncDir(outDir)
	return nil
}

// Resume reopens an existing run directory (for `apply --resume`): it
// reads manifest.json (with the entries of the trials committed since it
// was last rewritten), checks the footer and schema of every table file
// in both forms (without reading their rows) and sets the run's status
// back to "running" (written with the first commit; Resume itself writes
// nothing). The executor skips the trials for which Manifest().Done
// reports true; call Manifest().CheckResumable first. The trials run again
// are committed as parts that replace their earlier rows when the run is
// compacted.
func Resume(runDir string) (*Writer, error) {
	lock, err := lockRun(runDir)
	if err != nil {
		return nil, fmt.Errorf("resuming %s: %w", runDir, err)
	}
	fail := func(err error) (*Writer, error) {
		unlockRun(lock)
		return nil, fmt.Errorf("resuming %s: %w", runDir, err)
	}
	// What a writer killed mid-commit recorded making (a staging folder,
	// temporary files) is not part of the run: it goes, exactly as
	// recorded (Writer.Cleanup reports what was left alone).
	dir, err := runDirOf(runDir)
	if err != nil {
		return fail(err)
	}
	c := &Cleanup{}
	if err := cleanScratch(c, dir); err != nil {
		return fail(err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return fail(err)
	}
	rf, err := openRunFiles(dir, detectFormat(dir, m), m)
	if err != nil {
		return fail(err)
	}
	if err := checkRunFiles(memory.DefaultAllocator, rf); err != nil {
		return fail(err)
	}
	axes, err := runAxes(memory.DefaultAllocator, rf, m.Axes)
	if err != nil {
		return fail(err)
	}
	if m.OutputFormat == "" {
		m.OutputFormat = rf.format
	}
	w := &Writer{dir: dir, m: m, mem: memory.DefaultAllocator, lock: lock, axes: axes, cleanup: c}
	// The run becomes "running" again in memory; manifest.json changes at
	// the first commit, so a resume refused after this call (pipeline
	// changed) leaves the run directory untouched.
	w.m.Status = RunRunning
	w.m.FinishedAt = nil
	return w, nil
}

// Cleanup is what Resume removed of a killed writer's leftovers and what
// it left alone (nil for a Writer of Create).
func (w *Writer) Cleanup() *Cleanup { return w.cleanup }

// Dir is the run directory (outDir/<run-id>).
func (w *Writer) Dir() string { return w.dir }

// Manifest is the run's manifest. The executor may read it (trial
// statuses on resume); it must not modify it while CommitTrial or Finish
// may run concurrently.
func (w *Writer) Manifest() *Manifest { return w.m }

// CommitTrial records one trial: it converts rec to rows and writes
// them, with the trial's manifest entry, as the trial's part folder
// (each file written and fsynced in a staging folder, which is then
// renamed into place), then rewrites manifest.json when that is due (see
// Writer). Calling it again for the same trial replaces the trial.
func (w *Writer) CommitTrial(rec *TrialRecord) error {
	return w.CommitTrials(rec)
}

// CommitTrials is CommitTrial for several trials at once (for importers
// and bulk writes): every trial is staged before any is moved into
// place, so an error while writing (a full disk) records none of recs.
func (w *Writer) CommitTrials(recs ...*TrialRecord) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	axes := w.axes
	data := make([]*trialData, len(recs))
	for _, rec := range recs {
		if rec == nil {
			return errors.New("committing trial: nil record")
		}
		if rec.TrialID == "" {
			return errors.New("committing trial: empty trial id")
		}
		if err := validName(rec.TrialID); err != nil {
			return fmt.Errorf("committing trial %q: the trial id cannot name its part folder: %w", rec.TrialID, err)
		}
		if w.done {
			return fmt.Errorf("committing trial %q: run already finished", rec.TrialID)
		}
		var err error
		if axes, err = mergeAxes(axes, w.m.Axes, rec.Params); err != nil {
			return fmt.Errorf("committing trial %q: %w", rec.TrialID, err)
		}
	}
	if err := convertTrials(w.mem, w.m.RunID, recs, data); err != nil {
		return err
	}
	defer func() {
		for _, d := range data {
			d.release()
		}
	}()
	parts := filepath.Join(w.dir, PartsDir)
	if err := os.MkdirAll(parts, dirPerm(w.dir)); err != nil {
		return fmt.Errorf("committing trials: %w", err)
	}
	entries := make([]TrialEntry, len(recs))
	stages := make([]string, len(recs))
	records := make([]*scratch.Record, len(recs))
	defer func() {
		for i, s := range stages {
			if s != "" {
				os.RemoveAll(s)
			}
			records[i].Done()
		}
	}()
	j := runJournal(w.dir)
	for i, rec := range recs {
		entries[i] = w.entryOf(rec)
		stage, r, err := j.MkdirTemp(parts, ".staging-", 0o700)
		if err != nil {
			return fmt.Errorf("committing trial %q: %w", rec.TrialID, err)
		}
		stages[i], records[i] = stage, r
		if err := os.Chmod(stage, dirPerm(w.dir)); err != nil {
			return fmt.Errorf("committing trial %q: %w", rec.TrialID, err)
		}
		if err := writePart(w.mem, stage, w.m.OutputFormat, axes, data[i], &entries[i]); err != nil {
			return fmt.Errorf("committing trial %q: %w", rec.TrialID, unstage(err, stage, filepath.Join(parts, rec.TrialID)))
		}
		syncDir(stage)
	}
	w.axes = axes
	for i, rec := range recs {
		if err := installPart(j, records[i], filepath.Join(parts, rec.TrialID)); err != nil {
			return fmt.Errorf("committing trial %q: %w", rec.TrialID, err)
		}
		stages[i] = ""
		w.setEntry(entries[i])
	}
	syncDir(parts)
	if time.Since(w.lastManifest) >= manifestEvery*w.manifestCost {
		start := time.Now()
		if err := writeManifest(w.dir, w.m); err != nil {
			return fmt.Errorf("committing trials: %w", err)
		}
		w.lastManifest, w.manifestCost = time.Now(), time.Since(start)
	}
	return nil
}

// entryOf is the manifest entry of a committed trial.
func (w *Writer) entryOf(rec *TrialRecord) TrialEntry {
	var e TrialEntry
	if have := w.m.Trial(rec.TrialID); have != nil {
		e = *have
	}
	e.TrialID = rec.TrialID
	e.Index = rec.Index
	e.Repetition = rec.Repetition
	e.Attempt, e.Discarded = 0, rec.Discarded
	if rec.Attempt > 1 {
		e.Attempt = rec.Attempt
	}
	if len(rec.Params) > 0 {
		e.Params = map[string]any{}
		for _, p := range rec.Params {
			e.Params[p.Name] = p.Value
		}
	}
	e.Provider = rec.Provider
	e.Status = rec.Status
	if e.Status == "" {
		e.Status = StatusOK
	}
	e.Error = rec.Error
	e.Services = rec.Services
	e.StartedAt = timePtr(rec.StartedAt)
	e.FinishedAt = timePtr(rec.FinishedAt)
	return e
}

// setEntry puts e in the manifest, replacing the trial's entry.
func (w *Writer) setEntry(e TrialEntry) {
	if have := w.m.Trial(e.TrialID); have != nil {
		*have = e
		return
	}
	if e.Discarded != "" {
		w.m.Discarded = append(w.m.Discarded, e)
		return
	}
	w.m.Trials = append(w.m.Trials, e)
}

// Finish records the run's final status ("ok", "failed", "interrupted")
// and finish time in manifest.json. The Writer accepts no more trials.
func (w *Writer) Finish(status string, finished time.Time) error {
	switch status {
	case RunOK, RunFailed, RunInterrupted:
	default:
		return fmt.Errorf("finishing run: unknown status %q", status)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m.Status = status
	w.m.FinishedAt = timePtr(finished)
	w.done = true
	defer w.unlock()
	if err := writeManifest(w.dir, w.m); err != nil {
		return fmt.Errorf("finishing run: %w", err)
	}
	if err := compactLocked(w.mem, w.dir, w.m); err != nil {
		return fmt.Errorf("finishing run: %w (the trials are kept in %s/; `benchflow compact %s` merges them into the tables)", err, PartsDir, w.dir)
	}
	// A run in which nothing ran (no trial succeeded: a stack that was
	// not up, say) does not take latest from the run before it.
	if w.prevLatest != "" && !w.anyOK() {
		if err := pointLatest(w.outDir, w.prevLatest); err == nil {
			w.latestKept = w.prevLatest
		}
	}
	return nil
}

// anyOK reports whether some trial of the run succeeded.
func (w *Writer) anyOK() bool {
	for _, t := range w.m.Trials {
		if t.Status == StatusOK {
			return true
		}
	}
	return false
}

// LatestKept is, after Finish, the run the results folder's latest link
// still names because no trial of this run succeeded; "" when latest
// names this run.
func (w *Writer) LatestKept() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latestKept
}

// Close releases the run folder without finishing the run (a resume that
// was refused, say); Finish releases it too. It is safe to call twice.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unlock()
	return nil
}

func (w *Writer) unlock() {
	if w.lock != nil {
		scratch.Run(w.dir).Tidy()
	}
	unlockRun(w.lock)
	w.lock = nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// mergeAxes adds the params of one trial to the known axes, checking that
// every axis keeps one type.
func mergeAxes(have []axis, order []string, params []Param) ([]axis, error) {
	out := append([]axis(nil), have...)
	for _, p := range params {
		if p.Name == "" {
			return nil, errors.New("param with an empty name")
		}
		_, kind, err := normParam(p.Value)
		if err != nil {
			return nil, fmt.Errorf("param %q: %w", p.Name, err)
		}
		found := false
		for _, a := range out {
			if a.Name == p.Name {
				found = true
				if a.Kind != kind {
					return nil, fmt.Errorf("param %q is %s here but %s in earlier trials", p.Name, kind, a.Kind)
				}
			}
		}
		if !found {
			out = append(out, axis{Name: p.Name, Kind: kind})
		}
	}
	if len(order) > 0 {
		pos := map[string]int{}
		for i, n := range order {
			pos[n] = i
		}
		sort.SliceStable(out, func(i, j int) bool {
			pi, oki := pos[out[i].Name]
			pj, okj := pos[out[j].Name]
			if oki && okj {
				return pi < pj
			}
			return oki && !okj
		})
	}
	return out, nil
}
