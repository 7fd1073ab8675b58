package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Writer owns one run directory while a run executes. It keeps every
// committed trial's rows in memory and, on each CommitTrial, rewrites the
// tables and manifest.json atomically, so a run killed at any moment keeps
// every trial committed before and manifest.json always parses.
//
// A Writer is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	dir    string
	m      *Manifest
	mem    memory.Allocator
	axes   []axis
	trials map[string]*trialData
	done   bool
	lock   *os.File // flock on dir while this process writes it
}

// trialData is every row one trial contributes to the tables. Rows of
// the big tables are converted once, when the trial is committed (seal),
// so that rewriting the tables costs no conversion: their id columns
// (run_id, trial_id, step) to runs of equal values, the other columns to
// an Arrow record. Holding the ids as runs instead of one string per row
// keeps a long run's memory down and lets a commit build the id
// dictionaries with one lookup per run.
type trialData struct {
	index      int
	trials     []TrialRow
	latency    []LatencyRow
	timeseries []TimeseriesRow
	processes  []ProcessRow
	system     []SystemRow
	network    []NetworkRow
	probes     []ProbeRow
	agents     []AgentRow
	recs       [numBig]arrow.RecordBatch // the columns after the ids; nil when the trial has no such rows
	runs       [numBig]idRuns            // the id columns of recs' rows
	// hists are the steps' histograms of a new trial, converted straight
	// into the latency record by seal (no LatencyRow per bucket).
	hists []stepHist
}

type stepHist struct {
	runID, trialID, step string
	agent                int64              // 1-based agent, 0 for the benchflow process
	bars                 []hdrhistogram.Bar // the non-empty buckets
}

// The tables kept as Arrow records, in trialData.recs order.
const (
	bigLatency = iota
	bigTimeseries
	bigProcesses
	bigSystem
	bigNetwork
	numBig
)

var (
	bigNames   = [numBig]string{TableLatency, TableTimeseries, TableProcesses, TableSystem, TableNetwork}
	bigSchemas = [numBig]*arrow.Schema{idSchema(latencyColumns), idSchema(timeseriesColumns), idSchema(processColumns), idSchema(systemColumns), idSchema(networkColumns)}
	// valueSchemas are the schemas of trialData.recs: bigSchemas without
	// the id columns.
	valueSchemas = [numBig]*arrow.Schema{schemaOf(latencyColumns[numIDs:]), schemaOf(timeseriesColumns[numIDs:]), schemaOf(processColumns[numIDs:]), schemaOf(systemColumns[numIDs:]), schemaOf(networkColumns[numIDs:])}
)

// idSchema is the schema of a per-trial table, whose first columns must
// be the id columns.
func idSchema[R any](cols []column[R]) *arrow.Schema {
	for i, n := range idNames {
		if cols[i].name != n {
			panic(fmt.Sprintf("results: column %d of a per-trial table is %s, not %s", i, cols[i].name, n))
		}
	}
	return schemaOf(cols)
}

// valueRecord converts the columns after the ids of rows into a record.
func valueRecord[R any](mem memory.Allocator, t int, cols []column[R], rows []R) arrow.RecordBatch {
	return buildRecord(mem, valueSchemas[t], cols[numIDs:], rows)
}

// seal converts the big tables' rows into records and drops the rows.
func (d *trialData) seal(mem memory.Allocator) {
	if len(d.hists) > 0 {
		d.recs[bigLatency] = latencyRecord(mem, d.hists)
		d.runs[bigLatency] = histRuns(d.hists)
		d.hists = nil
	} else if len(d.latency) > 0 {
		d.recs[bigLatency] = valueRecord(mem, bigLatency, latencyColumns, d.latency)
		d.runs[bigLatency] = rowRuns(d.latency, func(r *LatencyRow) [numIDs]string { return [numIDs]string{r.RunID, r.TrialID, r.Step} })
	}
	if len(d.timeseries) > 0 {
		d.recs[bigTimeseries] = valueRecord(mem, bigTimeseries, timeseriesColumns, d.timeseries)
		d.runs[bigTimeseries] = rowRuns(d.timeseries, func(r *TimeseriesRow) [numIDs]string { return [numIDs]string{r.RunID, r.TrialID, r.Step} })
	}
	if len(d.processes) > 0 {
		d.recs[bigProcesses] = valueRecord(mem, bigProcesses, processColumns, d.processes)
		d.runs[bigProcesses] = rowRuns(d.processes, func(r *ProcessRow) [numIDs]string { return [numIDs]string{r.RunID, r.TrialID, r.Step} })
	}
	if len(d.system) > 0 {
		d.recs[bigSystem] = valueRecord(mem, bigSystem, systemColumns, d.system)
		d.runs[bigSystem] = rowRuns(d.system, func(r *SystemRow) [numIDs]string { return [numIDs]string{r.RunID, r.TrialID, r.Step} })
	}
	if len(d.network) > 0 {
		d.recs[bigNetwork] = valueRecord(mem, bigNetwork, networkColumns, d.network)
		d.runs[bigNetwork] = rowRuns(d.network, func(r *NetworkRow) [numIDs]string { return [numIDs]string{r.RunID, r.TrialID, r.Step} })
	}
	d.latency, d.timeseries, d.processes, d.system, d.network = nil, nil, nil, nil, nil
}

// histRuns lists the id runs of latencyRecord(hs): one run per histogram.
func histRuns(hs []stepHist) idRuns {
	var runs idRuns
	for _, h := range hs {
		n := len(h.bars)
		runs[0] = appendRun(runs[0], h.runID, n)
		runs[1] = appendRun(runs[1], h.trialID, n)
		runs[2] = appendRun(runs[2], h.step, n)
	}
	return runs
}

// rowRuns lists the id runs of rows; ids returns a row's run_id,
// trial_id and step.
func rowRuns[R any](rows []R, ids func(*R) [numIDs]string) idRuns {
	var runs idRuns
	for i := range rows {
		for c, v := range ids(&rows[i]) {
			runs[c] = appendRun(runs[c], v, 1)
		}
	}
	return runs
}

// appendRun adds n rows of val to runs, extending the last run when it
// holds the same value.
func appendRun(runs []idRun, val string, n int) []idRun {
	if k := len(runs) - 1; k >= 0 && runs[k].val == val {
		runs[k].n += n
		return runs
	}
	return append(runs, idRun{val, n})
}

// release frees the trial's records.
func (d *trialData) release() {
	if d == nil {
		return
	}
	for i, r := range d.recs {
		if r != nil {
			r.Release()
			d.recs[i] = nil
		}
	}
}

// Create makes outDir/<m.RunID>/, writes manifest.json (status "running",
// every trial "pending"), the pipeline source as pipeline.hcl or
// pipeline.star (sourceName's extension) and points outDir/latest at the
// run (a relative symlink, replaced atomically).
func Create(outDir string, m *Manifest, source []byte, sourceName string) (*Writer, error) {
	if m == nil {
		return nil, errors.New("creating run: nil manifest")
	}
	if m.RunID == "" || strings.ContainsAny(m.RunID, `/\`) || m.RunID == "." || m.RunID == ".." || m.RunID == "latest" {
		return nil, fmt.Errorf("creating run: invalid run id %q", m.RunID)
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
			os.RemoveAll(dir)
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
	w := &Writer{dir: dir, m: m, mem: memory.DefaultAllocator, trials: map[string]*trialData{}, lock: lock}
	ext := strings.ToLower(filepath.Ext(sourceName))
	name := "pipeline.hcl"
	if ext == ".star" || m.Pipeline.Format == "star" {
		name = "pipeline.star"
	}
	if err := writeFileAtomic(filepath.Join(dir, name), func(f *os.File) error {
		_, err := f.Write(source)
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating run: %w", err)
	}
	if err := writeManifest(dir, m); err != nil {
		return nil, fmt.Errorf("creating run: %w", err)
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
		if err := writeFileAtomic(dst, func(out *os.File) error {
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
	os.Remove(tmp)
	if err := os.Symlink(runID, tmp); err != nil {
		return fmt.Errorf("pointing %s at the run: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pointing %s at the run: %w", link, err)
	}
	syncDir(outDir)
	return nil
}

// Resume reopens an existing run directory (for `apply --resume`): it
// loads manifest.json and every committed trial's rows, and sets the run's
// status back to "running" (written with the first commit; Resume itself
// writes nothing). The executor skips the trials for which
// Manifest().Done reports true; call Manifest().CheckResumable first.
func Resume(runDir string) (*Writer, error) {
	lock, err := lockRun(runDir)
	if err != nil {
		return nil, fmt.Errorf("resuming %s: %w", runDir, err)
	}
	// What a writer killed mid-commit left (a staging folder, temporary
	// files) is not part of the run.
	if _, err := removeLeftovers(runDir); err != nil {
		unlockRun(lock)
		return nil, fmt.Errorf("resuming %s: %w", runDir, err)
	}
	run, err := readRun(runDir, memory.DefaultAllocator)
	if err != nil {
		unlockRun(lock)
		return nil, fmt.Errorf("resuming %s: %w", runDir, err)
	}
	w := &Writer{dir: run.Dir, m: run.Manifest, mem: memory.DefaultAllocator, trials: map[string]*trialData{}, lock: lock}
	w.axes = run.axes
	td := func(id string) *trialData {
		d := w.trials[id]
		if d == nil {
			d = &trialData{index: -1}
			if e := w.m.Trial(id); e != nil {
				d.index = e.Index
			}
			w.trials[id] = d
		}
		return d
	}
	for _, r := range run.Trials {
		d := td(r.TrialID)
		if d.index < 0 {
			d.index = int(r.Index)
		}
		d.trials = append(d.trials, r)
	}
	for _, r := range run.Latency {
		td(r.TrialID).latency = append(td(r.TrialID).latency, r)
	}
	for _, r := range run.Timeseries {
		td(r.TrialID).timeseries = append(td(r.TrialID).timeseries, r)
	}
	for _, r := range run.Processes {
		td(r.TrialID).processes = append(td(r.TrialID).processes, r)
	}
	for _, r := range run.System {
		td(r.TrialID).system = append(td(r.TrialID).system, r)
	}
	for _, r := range run.Network {
		td(r.TrialID).network = append(td(r.TrialID).network, r)
	}
	for _, r := range run.Probes {
		td(r.TrialID).probes = append(td(r.TrialID).probes, r)
	}
	for _, r := range run.Agents {
		td(r.TrialID).agents = append(td(r.TrialID).agents, r)
	}
	for _, d := range w.trials {
		d.seal(w.mem)
	}
	// The run becomes "running" again in memory; manifest.json changes at
	// the first commit, so a resume refused after this call (pipeline
	// changed) leaves the run directory untouched.
	w.m.Status = RunRunning
	w.m.FinishedAt = nil
	return w, nil
}

// Dir is the run directory (outDir/<run-id>).
func (w *Writer) Dir() string { return w.dir }

// Manifest is the run's manifest. The executor may read it (trial
// statuses on resume); it must not modify it while CommitTrial or Finish
// may run concurrently.
func (w *Writer) Manifest() *Manifest { return w.m }

// CommitTrial records one trial: it converts rec to rows, replaces any rows
// of the same TrialID, rewrites every table (temporary file, fsync,
// rename) and then manifest.json with the trial's status. Calling it again
// for the same trial replaces the trial.
func (w *Writer) CommitTrial(rec *TrialRecord) error {
	return w.CommitTrials(rec)
}

// CommitTrials is CommitTrial for several trials at once, with a single
// rewrite of the tables (for importers and bulk writes). On error nothing
// of recs is recorded.
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
	prev := map[string]*trialData{}
	for i, rec := range recs {
		if _, saved := prev[rec.TrialID]; !saved {
			prev[rec.TrialID] = w.trials[rec.TrialID]
		}
		w.trials[rec.TrialID] = data[i]
	}
	prevAxes := w.axes
	w.axes = axes
	if err := w.writeTables(); err != nil {
		for id, d := range prev {
			if d != nil {
				w.trials[id] = d
			} else {
				delete(w.trials, id)
			}
		}
		for _, d := range data {
			d.release()
		}
		w.axes = prevAxes
		return fmt.Errorf("committing trials: %w", err)
	}
	for id, d := range prev {
		if d != nil && d != w.trials[id] {
			d.release()
		}
	}
	// A trial committed twice in one call: only the last one is kept.
	for i, d := range data {
		if w.trials[recs[i].TrialID] != d {
			d.release()
		}
	}
	for _, rec := range recs {
		e := w.m.Trial(rec.TrialID)
		if e == nil {
			w.m.Trials = append(w.m.Trials, TrialEntry{TrialID: rec.TrialID})
			e = &w.m.Trials[len(w.m.Trials)-1]
		}
		e.Index = rec.Index
		e.Repetition = rec.Repetition
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
	}
	if err := writeManifest(w.dir, w.m); err != nil {
		return fmt.Errorf("committing trials: %w", err)
	}
	return nil
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
	w.releaseAll()
	defer w.unlock()
	if err := writeManifest(w.dir, w.m); err != nil {
		return fmt.Errorf("finishing run: %w", err)
	}
	return nil
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

// releaseAll frees every trial's records; the Writer must not write
// tables afterwards.
func (w *Writer) releaseAll() {
	for _, d := range w.trials {
		d.release()
	}
}

// writeTables rewrites every table from the committed trials, in
// execution order. system.parquet and network.parquet are written only
// once some trial has such samples.
func (w *Writer) writeTables() error {
	ids := make([]string, 0, len(w.trials))
	for id := range w.trials {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := w.trials[ids[i]], w.trials[ids[j]]
		if a.index != b.index {
			return a.index < b.index
		}
		return ids[i] < ids[j]
	})
	var tr []TrialRow
	var probes []ProbeRow
	var agents []AgentRow
	var big [numBig][]arrow.RecordBatch
	var bigRuns [numBig][]idRuns
	for _, id := range ids {
		d := w.trials[id]
		tr = append(tr, d.trials...)
		probes = append(probes, d.probes...)
		agents = append(agents, d.agents...)
		for t, r := range d.recs {
			if r != nil {
				big[t] = append(big[t], r)
				bigRuns[t] = append(bigRuns[t], d.runs[t])
			}
		}
	}
	// Every table is written into a staging folder first and moved into
	// place only when all of them were written, so a failure (a full disk)
	// never leaves the tables disagreeing about which trials they hold.
	stage, err := os.MkdirTemp(w.dir, ".staging-")
	if err != nil {
		return fmt.Errorf("writing tables: %w", err)
	}
	defer os.RemoveAll(stage)
	f := w.m.OutputFormat
	var names []string
	p := func(t string) string {
		names = append(names, TableFile(t, f))
		return filepath.Join(stage, TableFile(t, f))
	}
	// The tables are independent files: encode them concurrently (the
	// allocator is safe for concurrent use), then move them together.
	var wg sync.WaitGroup
	errs := make([]error, numBig+3)
	trialsPath := p(TableTrials)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[numBig] = writeTable(w.mem, trialsPath, f, trialColumns(w.axes), tr)
	}()
	if len(probes) > 0 {
		probesPath := p(TableProbes)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[numBig+1] = writeTable(w.mem, probesPath, f, probeColumns, probes)
		}()
	}
	if len(agents) > 0 {
		agentsPath := p(TableAgents)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[numBig+2] = writeTable(w.mem, agentsPath, f, agentColumns, agents)
		}()
	}
	for t := 0; t < numBig; t++ {
		if (t == bigSystem || t == bigNetwork) && len(big[t]) == 0 {
			continue
		}
		path := p(bigNames[t])
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[t] = writeRecords(w.mem, path, f, bigSchemas[t], big[t], bigRuns[t])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return unstage(err, stage, w.dir)
		}
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(stage, n), filepath.Join(w.dir, n)); err != nil {
			return fmt.Errorf("moving %s into place: %w", n, err)
		}
	}
	syncDir(w.dir)
	return nil
}

// unstage turns an error about a staged file into one about the run
// directory's file, which is what the user knows.
func unstage(err error, stage, dir string) error {
	return errors.New(strings.ReplaceAll(err.Error(), stage, dir))
}

// convertTrials converts recs into data[i] (rows and sealed records),
// spreading the trials over the CPUs: converting a trial (walking its
// histograms, building its records) is independent of the others and, for
// a bulk commit, a large share of the work. On error, nothing is kept and
// the error names the first failing trial in recs' order.
func convertTrials(mem memory.Allocator, runID string, recs []*TrialRecord, data []*trialData) error {
	errs := make([]error, len(recs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(recs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				d, err := rowsOf(runID, recs[i])
				if err != nil {
					errs[i] = err
					continue
				}
				d.seal(mem)
				data[i] = d
			}
		}()
	}
	for i := range recs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, d := range data {
				d.release()
			}
			return fmt.Errorf("committing trial %q: %w", recs[i].TrialID, err)
		}
	}
	return nil
}

// rowsOf converts a trial record into table rows.
func rowsOf(runID string, rec *TrialRecord) (*trialData, error) {
	d := &trialData{index: rec.Index}
	params := make([]Param, 0, len(rec.Params))
	for _, p := range rec.Params {
		v, _, err := normParam(p.Value)
		if err != nil {
			return nil, fmt.Errorf("param %q: %w", p.Name, err)
		}
		params = append(params, Param{Name: p.Name, Value: v})
	}
	versions := ""
	if len(rec.ServiceVersions) > 0 {
		b, err := json.Marshal(rec.ServiceVersions)
		if err != nil {
			return nil, fmt.Errorf("encoding service versions: %w", err)
		}
		versions = string(b)
	}
	status := rec.Status
	if status == "" {
		status = StatusOK
	}
	base := TrialRow{
		RunID: runID, TrialID: rec.TrialID, Index: int64(rec.Index), Repetition: int64(rec.Repetition),
		Params: params, Provider: rec.Provider, StartedAt: rec.StartedAt.UTC(),
		Status: status, Error: rec.Error, ServiceVersions: versions,
	}
	if rec.StartedAt.IsZero() {
		base.StartedAt = time.Time{}
	}
	if len(rec.Steps) == 0 {
		d.trials = append(d.trials, base)
	}
	for _, s := range rec.Steps {
		row := base
		row.Step, row.StepKind = s.Name, s.Kind
		if row.StepKind == "" {
			row.StepKind = "load"
		}
		row.Status = s.Status
		if row.Status == "" {
			row.Status = status
		}
		if s.Error != "" {
			row.Error = s.Error
		}
		if res := s.Result; res != nil {
			bars := nonEmptyBars(res.Latency)
			fillSummary(&row, res, bars)
			if len(s.Agents) > 0 {
				// Each agent's own buckets: their union is the merged
				// histogram, and each agent's stays recomputable.
				for _, a := range s.Agents {
					if a.Result != nil {
						if ab := nonEmptyBars(a.Result.Latency); len(ab) > 0 {
							d.hists = append(d.hists, stepHist{runID, rec.TrialID, s.Name, int64(a.Index + 1), ab})
						}
					}
				}
			} else if len(bars) > 0 {
				d.hists = append(d.hists, stepHist{runID, rec.TrialID, s.Name, 0, bars})
			}
			ts := timeseriesRows(runID, rec.TrialID, s.Name, res)
			row.Steady, row.SteadyReason = CheckSteady(ts)
			d.timeseries = append(d.timeseries, ts...)
		}
		fillExplanation(&row, &s)
		if len(s.Agents) > 0 {
			row.Agents = int64(len(s.Agents))
			d.agents = append(d.agents, agentRows(runID, rec.TrialID, &s)...)
		}
		if c := s.Capacity; c != nil {
			row.CapacityRPS, row.CapacityLimit, row.SLO = c.Rate, c.Limit, c.SLO.String()
			for i, p := range c.Probes {
				d.probes = append(d.probes, ProbeRow{RunID: runID, TrialID: rec.TrialID, Step: s.Name, Probe: int64(i + 1),
					Rate: p.Rate, AchievedRPS: p.Achieved, Requests: p.Requests, Errors: p.Errors,
					P50US: p.P50, P99US: p.P99, P999US: p.P999, UncorrectedP99US: p.UncorrectedP99,
					MeanBehindUS: float64(p.MeanBehind) / 1e3, LoaderCPUPct: p.LoaderCPU * 100,
					Pass: p.Pass, GeneratorLimited: p.GeneratorLimited, Reason: p.Reason})
			}
		}
		d.trials = append(d.trials, row)
	}
	for _, p := range rec.Processes {
		d.processes = append(d.processes, ProcessRow{
			RunID: runID, TrialID: rec.TrialID, Step: p.Step, TS: p.T, Process: p.Process, PID: int64(p.PID),
			Role: p.Role, CPUPct: p.CPUPct, UserPct: p.UserPct, SystemPct: p.SystemPct, RSSBytes: p.RSSBytes,
			Threads: p.Threads, CtxSwitchesVoluntary: p.CtxSwitchesVoluntary, CtxSwitchesNonvoluntary: p.CtxSwitchesNonvoluntary,
			Container: p.Container,
		})
	}
	for _, s := range rec.System {
		d.system = append(d.system, SystemRow{
			RunID: runID, TrialID: rec.TrialID, Step: s.Step, TS: s.T, UserPct: s.UserPct, NicePct: s.NicePct,
			SystemPct: s.SystemPct, IdlePct: s.IdlePct, IOWaitPct: s.IOWaitPct, IRQPct: s.IRQPct,
			SoftIRQPct: s.SoftIRQPct, StealPct: s.StealPct,
		})
	}
	for _, n := range rec.Network {
		d.network = append(d.network, NetworkRow{
			RunID: runID, TrialID: rec.TrialID, Step: n.Step, TS: n.T, Interface: n.Interface,
			RxBytes: n.RxBytes, TxBytes: n.TxBytes, RxPackets: n.RxPackets, TxPackets: n.TxPackets,
		})
	}
	return d, nil
}

// latencyRecord builds the value columns of the latency table (see
// valueSchemas) for histograms directly from their non-empty buckets:
// the value buffers are sized exactly and filled in place, without
// builders (whose validity bitmaps and growth only cost time here: a
// bucket is never null); histRuns lists the matching id runs.
func latencyRecord(mem memory.Allocator, hs []stepHist) arrow.RecordBatch {
	n := 0
	for _, sh := range hs {
		n += len(sh.bars)
	}
	lowerBuf, upperBuf, countBuf, agentBuf := valueBuffer(mem, n), valueBuffer(mem, n), valueBuffer(mem, n), valueBuffer(mem, n)
	lower := arrow.Float64Traits.CastFromBytes(lowerBuf.Bytes())
	upper := arrow.Float64Traits.CastFromBytes(upperBuf.Bytes())
	count := arrow.Int64Traits.CastFromBytes(countBuf.Bytes())
	agent := arrow.Int64Traits.CastFromBytes(agentBuf.Bytes())
	row := 0
	for _, sh := range hs {
		for _, bar := range sh.bars {
			lower[row] = float64(bar.From)
			upper[row] = float64(bar.To)
			count[row] = bar.Count
			agent[row] = sh.agent
			row++
		}
	}
	cols := []arrow.Array{
		arrayOf(arrow.PrimitiveTypes.Float64, n, lowerBuf),
		arrayOf(arrow.PrimitiveTypes.Float64, n, upperBuf),
		arrayOf(arrow.PrimitiveTypes.Int64, n, countBuf),
		arrayOf(arrow.PrimitiveTypes.Int64, n, agentBuf),
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(valueSchemas[bigLatency], cols, int64(n))
}

// valueBuffer allocates the buffer of n 8-byte values.
func valueBuffer(mem memory.Allocator, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(8 * n)
	return b
}

// arrayOf makes an array of n values of typ (no nulls) from buf, taking
// over the caller's reference to buf.
func arrayOf(typ arrow.DataType, n int, buf *memory.Buffer) arrow.Array {
	d := array.NewData(typ, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer d.Release()
	buf.Release()
	return array.MakeFromData(d)
}

// runsStrings builds the string array (no nulls) of the rows that runs
// describe, part after part.
func runsStrings(mem memory.Allocator, runs [][]idRun) arrow.Array {
	n, size := 0, 0
	for _, p := range runs {
		for _, r := range p {
			n += r.n
			size += r.n * len(r.val)
		}
	}
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	data := memory.NewResizableBuffer(mem)
	data.Resize(size)
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	buf := data.Bytes()
	pos, row := 0, 0
	for _, p := range runs {
		for _, r := range p {
			for j := 0; j < r.n; j++ {
				offs[row] = int32(pos)
				pos += copy(buf[pos:], r.val)
				row++
			}
		}
	}
	offs[n] = int32(pos)
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, offsets, data}, nil, 0, 0)
	defer d.Release()
	offsets.Release()
	data.Release()
	return array.MakeFromData(d)
}
