package results

// This file holds a run's two forms. While a run executes, each trial's
// commit writes only that trial: its rows of every table and its manifest
// entry, as files of one folder parts/<trial-id>/ (trials.parquet,
// latency.parquet, …, trial.json) made in parts/.staging-* and renamed
// into place in one step, so a commit costs the same at trial 10,000 as
// at trial 1 and a kill leaves every trial whole or absent. When the run
// finishes (or `benchflow compact` runs on a killed one), Compact merges
// the parts into the single-file tables of the results contract and
// removes parts/. Readers accept both, and a mix (a resumed run: its
// tables plus the parts of the trials run again, which replace the
// tables' rows of those trials): rows come in trial order (manifest
// index, then id), as an uninterrupted run writes them.
//
// A new table joins by adding a tableSpec to tableSpecs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sys/unix"

	"github.com/benchflow/benchflow/engine/scratch"
)

// PartsDir is the folder of a run directory that holds the trials
// committed since the run's tables were last compacted, one folder per
// trial (PartsDir/<trial-id>/).
const PartsDir = "parts"

// PartEntryFile is the file of a trial's part folder holding its
// manifest entry (a TrialEntry as JSON).
const PartEntryFile = "trial.json"

// maxEntryBytes bounds a part's trial.json.
const maxEntryBytes = 16 << 20

// part is one trial's folder under parts/.
type part struct {
	id    string
	index int
	dir   string
}

// runFiles are the files of a run in both forms.
type runFiles struct {
	dir, format string
	parts       []part // in trial order
	inParts     map[string]bool
	index       map[string]int // trial id -> manifest index
}

// key orders trials: by manifest index, then id.
func (rf *runFiles) less(aIdx int, aID string, bIdx int, bID string) bool {
	if aIdx != bIdx {
		return aIdx < bIdx
	}
	return aID < bID
}

func (rf *runFiles) indexOf(id string) int {
	if i, ok := rf.index[id]; ok {
		return i
	}
	return math.MaxInt
}

func (rf *runFiles) base(table string) string {
	return filepath.Join(rf.dir, TableFile(table, rf.format))
}

// listParts lists the part folders of dir (names not starting with a
// dot; the others are a commit's staging folders).
func listParts(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, PartsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, PartsDir), err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if !e.IsDir() {
			return nil, fmt.Errorf("reading %s: %s is not a trial's folder", filepath.Join(dir, PartsDir), e.Name())
		}
		if err := validName(e.Name()); err != nil {
			return nil, fmt.Errorf("reading %s: %q is not a trial's folder: %w", filepath.Join(dir, PartsDir), e.Name(), err)
		}
		names = append(names, e.Name())
	}
	return names, nil
}

// overlayParts replaces the manifest entries of the trials in parts/ with
// their trial.json (written with the trial's rows, so newer than a
// manifest.json that is rewritten less often).
func overlayParts(dir string, m *Manifest) error {
	names, err := listParts(dir)
	if err != nil || len(names) == 0 {
		return err
	}
	at := make(map[string]int, len(m.Trials))
	for i, t := range m.Trials {
		at[t.TrialID] = i
	}
	for _, n := range names {
		path := filepath.Join(dir, PartsDir, n, PartEntryFile)
		b, err := readBounded(path, maxEntryBytes)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		var e TrialEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		if e.TrialID != n {
			return fmt.Errorf("%s: trial_id %q in the folder of trial %q", path, e.TrialID, n)
		}
		if i, ok := at[n]; ok {
			m.Trials[i] = e
		} else if have := m.Trial(n); have != nil {
			*have = e // a discarded attempt's
		} else if e.Discarded != "" {
			m.Discarded = append(m.Discarded, e)
		} else {
			at[n] = len(m.Trials)
			m.Trials = append(m.Trials, e)
		}
	}
	return nil
}

// openRunFiles lists a run's parts in trial order; m must already carry
// the parts' entries (ReadManifest).
func openRunFiles(dir, format string, m *Manifest) (*runFiles, error) {
	rf := &runFiles{dir: dir, format: format, inParts: map[string]bool{}, index: make(map[string]int, len(m.Trials))}
	for _, t := range m.Trials {
		rf.index[t.TrialID] = t.Index
	}
	for _, t := range m.Discarded {
		rf.index[t.TrialID] = t.Index
	}
	names, err := listParts(dir)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		rf.parts = append(rf.parts, part{id: n, index: rf.indexOf(n), dir: filepath.Join(dir, PartsDir, n)})
		rf.inParts[n] = true
	}
	sort.Slice(rf.parts, func(i, j int) bool {
		a, b := rf.parts[i], rf.parts[j]
		return rf.less(a.index, a.id, b.index, b.id)
	})
	return rf, nil
}

// scanMerged reads one table of a run in both forms in trial order, in
// batches: the rows of the run's table file, except those of trials that
// have a part, merged with each part's file. found reports whether any
// file of the table exists.
func scanMerged[R any](mem memory.Allocator, rf *runFiles, table string, cols func(*arrow.Schema) []column[R], omit []string, trialOf func(*R) string, emit func([]R) error) (found bool, err error) {
	next := 0
	flushParts := func(beforeIdx int, beforeID string, all bool) error {
		for next < len(rf.parts) {
			p := rf.parts[next]
			if !all && !rf.less(p.index, p.id, beforeIdx, beforeID) {
				return nil
			}
			next++
			ok, err := scanTable(mem, filepath.Join(p.dir, TableFile(table, rf.format)), rf.format, cols, omit, nil, func(rows []R) error {
				for i := range rows {
					if id := trialOf(&rows[i]); id != p.id {
						return fmt.Errorf("reading %s: a row of trial %q in the part of trial %q", filepath.Join(p.dir, TableFile(table, rf.format)), id, p.id)
					}
				}
				return emit(rows)
			})
			found = found || ok
			if err != nil {
				return err
			}
		}
		return nil
	}
	var kept []R
	last, lastIdx := "", 0
	ok, err := scanTable(mem, rf.base(table), rf.format, cols, omit, nil, func(rows []R) error {
		kept = kept[:0]
		for i := range rows {
			id := trialOf(&rows[i])
			if id != last || i == 0 {
				last, lastIdx = id, rf.indexOf(id)
				if len(kept) > 0 {
					if err := emit(kept); err != nil {
						return err
					}
					kept = nil
				}
				if err := flushParts(lastIdx, last, false); err != nil {
					return err
				}
			}
			if !rf.inParts[id] {
				kept = append(kept, rows[i])
			}
		}
		if len(kept) > 0 {
			return emit(kept)
		}
		return nil
	})
	found = found || ok
	if err != nil {
		return found, err
	}
	return found, flushParts(0, "", true)
}

// readMerged is scanMerged into one slice.
func readMerged[R any](mem memory.Allocator, rf *runFiles, table string, cols func(*arrow.Schema) []column[R], omit []string, trialOf func(*R) string) ([]R, error) {
	var out []R
	_, err := scanMerged(mem, rf, table, cols, omit, trialOf, func(rows []R) error {
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// tableSpec is what compaction and header checks need of a table.
type tableSpec struct {
	name string
	// always: written by compaction even when it has no rows (the
	// others only once some trial has rows).
	always bool
	// compact writes the merged table to path; false when it has no rows
	// and no file of it exists.
	compact func(mem memory.Allocator, rf *runFiles, path string, always bool) (bool, error)
	// check checks a file's footer and schema without reading rows.
	check func(mem memory.Allocator, path, format string) error
}

func specOf[R any](name string, always bool, cols []column[R], trialOf func(*R) string) tableSpec {
	return tableSpec{
		name: name, always: always,
		compact: func(mem memory.Allocator, rf *runFiles, path string, always bool) (bool, error) {
			return compactTable(mem, rf, name, path, fixed(cols), cols, trialOf, always)
		},
		check: func(mem memory.Allocator, path, format string) error {
			_, err := scanTable(mem, path, format, fixed(cols), nil, nil, nil)
			return err
		},
	}
}

// tableSpecs are the tables of a run other than trials (compacted with
// its axes, see compactTrials).
var tableSpecs = []tableSpec{
	specOf(TableLatency, true, latencyColumns, func(r *LatencyRow) string { return r.TrialID }),
	specOf(TableTimeseries, true, timeseriesColumns, func(r *TimeseriesRow) string { return r.TrialID }),
	specOf(TableProcesses, true, processColumns, func(r *ProcessRow) string { return r.TrialID }),
	specOf(TableSystem, false, systemColumns, func(r *SystemRow) string { return r.TrialID }),
	specOf(TableNetwork, false, networkColumns, func(r *NetworkRow) string { return r.TrialID }),
	specOf(TableProbes, false, probeColumns, func(r *ProbeRow) string { return r.TrialID }),
	specOf(TableAgents, false, agentColumns, func(r *AgentRow) string { return r.TrialID }),
}

func trialRowID(r *TrialRow) string { return r.TrialID }

// checkTrialsFile checks a trials file's footer and schema.
func checkTrialsFile(mem memory.Allocator, path, format string) error {
	_, err := scanTable(mem, path, format, trialColumnsFor, nil, nil, nil)
	return err
}

// checkRunFiles checks the footer and schema of every table file of the
// run, in both forms, without reading rows (Resume).
func checkRunFiles(mem memory.Allocator, rf *runFiles) error {
	dirs := []string{rf.dir}
	for _, p := range rf.parts {
		dirs = append(dirs, p.dir)
	}
	for _, d := range dirs {
		if err := checkTrialsFile(mem, filepath.Join(d, TableFile(TableTrials, rf.format)), rf.format); err != nil {
			return err
		}
		for _, s := range tableSpecs {
			if err := s.check(mem, filepath.Join(d, TableFile(s.name, rf.format)), rf.format); err != nil {
				return err
			}
		}
	}
	return nil
}

// runAxes merges the param_<axis> columns of the trials files of both
// forms, in the manifest's axis order.
func runAxes(mem memory.Allocator, rf *runFiles, order []string) ([]axis, error) {
	paths := []string{rf.base(TableTrials)}
	for _, p := range rf.parts {
		paths = append(paths, filepath.Join(p.dir, TableFile(TableTrials, rf.format)))
	}
	var axes []axis
	for _, path := range paths {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		s, err := readSchema(mem, path, rf.format)
		if err != nil {
			return nil, err
		}
		var params []Param
		for _, a := range axesOf(s) {
			params = append(params, Param{Name: a.Name, Value: zeroOfKind(a.Kind)})
		}
		if axes, err = mergeAxes(axes, order, params); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return axes, nil
}

func zeroOfKind(kind string) any {
	switch kind {
	case kindInt:
		return int64(0)
	case kindFloat:
		return float64(0)
	case kindBool:
		return false
	}
	return ""
}

// Compact merges the parts of a run (parts/<trial-id>/, written by each
// commit) into the run's single-file tables and removes them, so the run
// holds only the tables of the results contract. A run without parts is
// left as it is. It takes the run's lock: a run another process is
// writing is refused (ErrRunLocked). A run killed mid-commit or
// mid-compaction is compacted again from what it holds: every file
// replaced is written whole first, and what the killed writer recorded
// making is cleaned first (the Cleanup it returns: see package scratch).
func Compact(dir string) (*Cleanup, error) {
	dir, err := runDirOf(dir)
	if err != nil {
		return nil, fmt.Errorf("compacting: %w", err)
	}
	lock, err := lockRun(dir)
	if err != nil {
		return nil, fmt.Errorf("compacting %s: %w", dir, err)
	}
	defer unlockRun(lock)
	defer scratch.Run(dir).Tidy()
	c := &Cleanup{}
	if err := cleanScratch(c, dir); err != nil {
		return c, fmt.Errorf("compacting %s: %w", dir, err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return c, fmt.Errorf("compacting %s: %w", dir, err)
	}
	return c, compactLocked(memory.DefaultAllocator, dir, m)
}

// compactLocked is Compact for the lock holder; m carries the parts'
// entries.
func compactLocked(mem memory.Allocator, dir string, m *Manifest) error {
	names, err := listParts(dir)
	if err != nil {
		return fmt.Errorf("compacting %s: %w", dir, err)
	}
	if len(names) == 0 {
		syscall.Rmdir(filepath.Join(dir, PartsDir)) // empty: gone (a symlink stays)
		return nil
	}
	format := m.OutputFormat
	if format == "" {
		format = FormatParquet
	}
	rf, err := openRunFiles(dir, format, m)
	if err != nil {
		return fmt.Errorf("compacting %s: %w", dir, err)
	}
	// The manifest first holds every part's entry: the parts go last.
	if err := writeManifest(dir, m); err != nil {
		return fmt.Errorf("compacting %s: %w", dir, err)
	}
	stage, rec, err := runJournal(dir).MkdirTemp(dir, ".staging-", 0o700)
	if err != nil {
		return fmt.Errorf("compacting %s: %w", dir, err)
	}
	defer func() {
		os.RemoveAll(stage)
		rec.Done()
	}()
	var names2 []string
	fail := func(err error) error {
		return fmt.Errorf("compacting %s: %w", dir, unstage(err, stage, dir))
	}
	axes, err := runAxes(mem, rf, m.Axes)
	if err != nil {
		return fail(err)
	}
	// Streamed like the other tables: each file's param_<axis> columns
	// are read as they are and written as the run's merged axes.
	if _, err := compactTable(mem, rf, TableTrials, filepath.Join(stage, TableFile(TableTrials, format)), trialColumnsFor, trialColumns(axes), trialRowID, true); err != nil {
		return fail(err)
	}
	names2 = append(names2, TableFile(TableTrials, format))
	// The tables are independent files: merge them concurrently (each
	// holds one batch at a time).
	wrote := make([]bool, len(tableSpecs))
	errs := make([]error, len(tableSpecs))
	var wg sync.WaitGroup
	for i, s := range tableSpecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, statErr := os.Stat(rf.base(s.name))
			wrote[i], errs[i] = s.compact(mem, rf, filepath.Join(stage, TableFile(s.name, format)), s.always || statErr == nil)
		}()
	}
	wg.Wait()
	for i, s := range tableSpecs {
		if errs[i] != nil {
			return fail(errs[i])
		}
		if wrote[i] {
			names2 = append(names2, TableFile(s.name, format))
		}
	}
	for _, n := range names2 {
		if err := os.Rename(filepath.Join(stage, n), filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("compacting %s: moving %s into place: %w", dir, n, err)
		}
	}
	syncDir(dir)
	// The tables now hold every part's rows; a kill while the parts are
	// removed leaves parts equal to the tables' rows. Only the part
	// folders go (never through a symlink), then parts/ if nothing else
	// is in it.
	for _, n := range names {
		if err := scratch.RemoveTree(dir, filepath.Join(PartsDir, n)); err != nil {
			return fmt.Errorf("compacting %s: removing %s: %w", dir, PartsDir, err)
		}
	}
	syscall.Rmdir(filepath.Join(dir, PartsDir)) // not empty (files benchflow did not write) or a symlink: stays
	syncDir(dir)
	return nil
}

// compactTable streams one table of the run, in both forms, into path
// (atomically), batch by batch: memory holds one batch and the row group
// being encoded, whatever the run's size. read maps each file's schema to
// columns, cols are the columns written. With always it writes the table
// even without rows; otherwise it returns false when no file of it
// exists.
func compactTable[R any](mem memory.Allocator, rf *runFiles, table, path string, read func(*arrow.Schema) []column[R], cols []column[R], trialOf func(*R) string, always bool) (bool, error) {
	if !always {
		found := false
		for _, p := range rf.parts {
			if _, err := os.Stat(filepath.Join(p.dir, TableFile(table, rf.format))); err == nil {
				found = true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	schema := schemaOf(cols)
	err := writeFileAtomic(nil, path, func(f *os.File) error {
		var write func(arrow.RecordBatch) error
		var closeW func() error
		if rf.format == FormatArrow {
			w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd())
			if err != nil {
				return err
			}
			// Each batch is written as its own row group (Write, not
			// WriteBuffered): a row group buffered up to a million rows
			// held their encoded pages, so the writer's memory grew with
			// the run until that size.
			write, closeW = w.Write, w.Close
		} else {
			opts := []parquet.WriterProperty{
				parquet.WithAllocator(mem),
				parquet.WithCompression(compress.Codecs.Zstd),
				parquet.WithMaxRowGroupLength(1 << 20),
				parquet.WithDictionaryDefault(false),
				parquet.WithStatsFor("run_id", false),
				parquet.WithStatsFor("step", false),
			}
			for _, c := range idNames {
				opts = append(opts, parquet.WithDictionaryFor(c, true))
			}
			w, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
			if err != nil {
				return err
			}
			// Each batch is written as its own row group (Write, not
			// WriteBuffered): a row group buffered up to a million rows
			// held their encoded pages, so the writer's memory grew with
			// the run until that size.
			write, closeW = w.Write, w.Close
		}
		limit := compactBatch[R]()
		var buf []R
		flush := func() error {
			if len(buf) == 0 {
				return nil
			}
			rec := buildRecord(mem, schema, cols, buf)
			defer rec.Release()
			buf = buf[:0]
			return write(rec)
		}
		_, err := scanMerged(mem, rf, table, read, nil, trialOf, func(rows []R) error {
			buf = append(buf, rows...)
			if len(buf) >= limit {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if cerr := closeW(); err == nil {
			err = cerr
		}
		return err
	})
	return err == nil, err
}

// compactBytes bounds the rows compaction buffers before writing them as
// a row group (their structs; strings come on top): a batch of a wide
// table (trials: one row per trial × step) reaches it after a few thousand
// rows, so compaction's memory stops growing early in a long run.
const compactBytes = 1 << 20

// compactBatch is how many rows of R compaction buffers: compactBytes'
// worth, from 1,024 to batchRows.
func compactBatch[R any]() int {
	var r R
	return max(1024, min(batchRows, compactBytes/max(1, int(unsafe.Sizeof(r)))))
}

// installPart moves the staged part folder rec names to parts/<id> (dst),
// replacing the trial's earlier part in one step (an exchange of the two
// folders) when there is one. Every folder it moves aside is recorded in
// j first.
func installPart(j *scratch.Journal, rec *scratch.Record, dst string) error {
	stage := rec.Path()
	err := os.Rename(stage, dst)
	if err == nil {
		rec.Done()
		return nil
	}
	if _, serr := os.Lstat(dst); serr != nil {
		return err
	}
	// After the exchange the staging folder's name holds the earlier part.
	if err := rec.Holds(dst); err != nil {
		return err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, stage, unix.AT_FDCWD, dst, unix.RENAME_EXCHANGE); err == nil {
		if err := os.RemoveAll(stage); err != nil { // now the earlier part
			return err
		}
		rec.Done()
		return nil
	}
	rec.Made() // not exchanged: it holds the new part again
	// No exchange on this file system: the earlier part goes first, and a
	// kill before the new one is in place puts it back (Clean).
	old := stage + "-old"
	orec, err := j.Expect(old, scratch.Dir, dst)
	if err != nil {
		return err
	}
	if err := os.Rename(dst, old); err != nil {
		orec.Done()
		return err
	}
	if err := os.Rename(stage, dst); err != nil {
		os.Rename(old, dst)
		orec.Done()
		return err
	}
	rec.Done()
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	orec.Done()
	return nil
}
