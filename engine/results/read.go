package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// Run is a run directory read back: the manifest and every table.
type Run struct {
	Dir        string
	Manifest   *Manifest
	Format     string   // FormatParquet or FormatArrow, as found on disk
	Axes       []string // matrix axes, in param_<axis> column order
	Trials     []TrialRow
	Latency    []LatencyRow
	Timeseries []TimeseriesRow
	Processes  []ProcessRow
	System     []SystemRow
	Network    []NetworkRow
	Probes     []ProbeRow
	Agents     []AgentRow // agents.parquet: one row per agent of a step that ran on agents

	axes []axis
	hist map[[2]string]Histogram

	files         *runFiles
	mem           memory.Allocator
	streamLatency bool
	streamTables  bool
	hasTrials     *bool
	hasLatency    *bool
}

// ReadRun reads a run directory. dir may also be a results folder with a
// "latest" link, which is followed. Tables not written yet (no trial
// committed) read as empty. A run still going, or killed, is read from
// its parts (parts/<trial-id>/) as well as its tables: see Compact.
// Every file is checked first (regular, sizes within the file, the
// table's schema and version).
func ReadRun(dir string) (*Run, error) {
	return readRun(dir, memory.DefaultAllocator, ReadOptions{})
}

// ReadOptions choose what ReadRunWith loads.
type ReadOptions struct {
	// StreamLatency leaves Run.Latency empty: Run.EachHistogram reads the
	// latency table trial by trial instead, so a long run's buckets are
	// never all in memory (report and compare).
	StreamLatency bool
	// StreamTables leaves Run.Trials, Timeseries, Processes, System,
	// Network, Probes and Agents empty as well (their files are checked,
	// not read): Run.EachTrial, EachTimeseries, EachProcess and EachProbe
	// read them batch by batch, so what a reader keeps of a long run is
	// what it aggregates (report and compare). It implies StreamLatency.
	StreamTables bool
}

// ReadRunWith is ReadRun with options.
func ReadRunWith(dir string, opts ReadOptions) (*Run, error) {
	return readRun(dir, memory.DefaultAllocator, opts)
}

// runDirOf resolves dir (a run directory, or a results folder whose
// "latest" link is followed) to the run directory's real path.
func runDirOf(dir string) (string, error) {
	if fi, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("reading run: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("reading run: %s is not a directory", dir)
	}
	if _, err := os.Lstat(filepath.Join(dir, "manifest.json")); errors.Is(err, os.ErrNotExist) {
		if _, err2 := os.Stat(filepath.Join(dir, "latest", "manifest.json")); err2 == nil {
			dir = filepath.Join(dir, "latest")
		} else {
			return "", fmt.Errorf("reading run: %s is neither a run directory (no manifest.json) nor a results folder (no latest run)", dir)
		}
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, nil
}

// detectFormat is the run's table format: the manifest's, unless only
// the other format's trials table exists.
func detectFormat(dir string, m *Manifest) string {
	format := m.OutputFormat
	if format == "" {
		format = FormatParquet
	}
	other := FormatArrow
	if format == FormatArrow {
		other = FormatParquet
	}
	if _, err := os.Stat(filepath.Join(dir, TableFile(TableTrials, format))); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, TableFile(TableTrials, other))); err == nil {
			return other
		}
	}
	return format
}

func readRun(dir string, mem memory.Allocator, opts ReadOptions) (*Run, error) {
	dir, err := runDirOf(dir)
	if err != nil {
		return nil, err
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	format := detectFormat(dir, m)
	rf, err := openRunFiles(dir, format, m)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Manifest: m, Format: format, files: rf, mem: mem}
	if err := r.readTables(opts); err != nil {
		return nil, err
	}
	if r.axes, err = runAxes(mem, rf, m.Axes); err != nil {
		return nil, err
	}
	if len(r.axes) == 0 {
		r.Axes = append(r.Axes, m.Axes...)
	}
	for _, a := range r.axes {
		r.Axes = append(r.Axes, a.Name)
	}
	return r, nil
}

// readTables reads (or, streaming, checks) the run's tables.
func (r *Run) readTables(opts ReadOptions) error {
	mem, rf, format, id := r.mem, r.files, r.Format, r.Manifest.RunID
	var err error
	// Checked now, read later.
	check := func(tables ...string) error {
		for _, t := range tables {
			for _, path := range rf.tablePaths(t) {
				var err error
				if t == TableTrials {
					err = checkTrialsFile(mem, path, format)
				} else {
					err = specNamed(t).check(mem, path, format)
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	if opts.StreamTables {
		r.streamLatency, r.streamTables = true, true
		return check(TableTrials, TableLatency, TableTimeseries, TableProcesses, TableSystem, TableNetwork, TableProbes, TableAgents)
	}
	if r.Trials, err = readMerged(mem, rf, TableTrials, trialColumnsFor, nil, trialRowID); err != nil {
		return err
	}
	// run_id of the per-trial tables always equals the manifest's: it is
	// not decoded but filled in.
	omit := []string{"run_id"}
	if opts.StreamLatency {
		r.streamLatency = true
		if err := check(TableLatency); err != nil {
			return err
		}
	} else {
		if r.Latency, err = readMerged(mem, rf, TableLatency, fixed(latencyColumns), omit, func(r *LatencyRow) string { return r.TrialID }); err != nil {
			return err
		}
		for i := range r.Latency {
			r.Latency[i].RunID = id
		}
	}
	if r.Timeseries, err = readMerged(mem, rf, TableTimeseries, fixed(timeseriesColumns), omit, func(r *TimeseriesRow) string { return r.TrialID }); err != nil {
		return err
	}
	for i := range r.Timeseries {
		r.Timeseries[i].RunID = id
	}
	if r.Processes, err = readMerged(mem, rf, TableProcesses, fixed(processColumns), omit, func(r *ProcessRow) string { return r.TrialID }); err != nil {
		return err
	}
	for i := range r.Processes {
		r.Processes[i].RunID = id
	}
	if r.System, err = readMerged(mem, rf, TableSystem, fixed(systemColumns), omit, func(r *SystemRow) string { return r.TrialID }); err != nil {
		return err
	}
	for i := range r.System {
		r.System[i].RunID = id
	}
	if r.Network, err = readMerged(mem, rf, TableNetwork, fixed(networkColumns), omit, func(r *NetworkRow) string { return r.TrialID }); err != nil {
		return err
	}
	for i := range r.Network {
		r.Network[i].RunID = id
	}
	if r.Probes, err = readMerged(mem, rf, TableProbes, fixed(probeColumns), nil, func(r *ProbeRow) string { return r.TrialID }); err != nil {
		return err
	}
	if r.Agents, err = readMerged(mem, rf, TableAgents, fixed(agentColumns), nil, func(r *AgentRow) string { return r.TrialID }); err != nil {
		return err
	}
	return nil
}

// specNamed is the tableSpec of a table other than trials.
func specNamed(name string) tableSpec {
	for _, s := range tableSpecs {
		if s.name == name {
			return s
		}
	}
	panic("results: no table " + name)
}

// Streamed reports whether the run was read with StreamTables: its
// table fields are empty and the Each methods read the files.
func (r *Run) Streamed() bool { return r.streamTables }

// HasTrials reports whether the run has any trials row (streamed: read
// from the files' footers).
func (r *Run) HasTrials() bool {
	if !r.streamTables {
		return len(r.Trials) > 0
	}
	if r.hasTrials == nil {
		has := r.anyRows(TableTrials)
		r.hasTrials = &has
	}
	return *r.hasTrials
}

// anyRows reports whether some file of table declares rows.
func (r *Run) anyRows(table string) bool {
	for _, path := range r.files.tablePaths(table) {
		if n, err := openParquetOrArrowRows(r.mem, path, r.Format); err == nil && n > 0 {
			return true
		}
	}
	return false
}

// eachRow calls fn with each row of rows (loaded) or, streamed, of the
// table's files in trial order, batch by batch; setRunID fills the
// run_id that is not decoded.
func eachRow[R any](r *Run, loaded []R, table string, cols func(*arrow.Schema) []column[R], omit []string, trialOf func(*R) string, setRunID func(*R, string), fn func(*R) error) error {
	if !r.streamTables {
		for i := range loaded {
			if err := fn(&loaded[i]); err != nil {
				return err
			}
		}
		return nil
	}
	id := r.Manifest.RunID
	_, err := scanMerged(r.mem, r.files, table, cols, omit, trialOf, func(rows []R) error {
		for i := range rows {
			if setRunID != nil {
				setRunID(&rows[i], id)
			}
			if err := fn(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// EachTrial calls fn with each trials row in trial order (Run.Trials,
// or streamed from the files). The row is fn's only during the call.
func (r *Run) EachTrial(fn func(*TrialRow) error) error {
	return eachRow(r, r.Trials, TableTrials, trialColumnsFor, nil, trialRowID, nil, fn)
}

// EachTimeseries calls fn with each timeseries row in trial order.
func (r *Run) EachTimeseries(fn func(*TimeseriesRow) error) error {
	return eachRow(r, r.Timeseries, TableTimeseries, fixed(timeseriesColumns), []string{"run_id"},
		func(t *TimeseriesRow) string { return t.TrialID }, func(t *TimeseriesRow, id string) { t.RunID = id }, fn)
}

// EachProcess calls fn with each processes row in trial order (a
// trial's rows are consecutive).
func (r *Run) EachProcess(fn func(*ProcessRow) error) error {
	return eachRow(r, r.Processes, TableProcesses, fixed(processColumns), []string{"run_id"},
		func(p *ProcessRow) string { return p.TrialID }, func(p *ProcessRow, id string) { p.RunID = id }, fn)
}

// EachProbe calls fn with each probes row in trial order.
func (r *Run) EachProbe(fn func(*ProbeRow) error) error {
	return eachRow(r, r.Probes, TableProbes, fixed(probeColumns), nil, func(p *ProbeRow) string { return p.TrialID }, nil, fn)
}

// tablePaths are the files of table in both forms (existing or not).
func (rf *runFiles) tablePaths(table string) []string {
	paths := []string{rf.base(table)}
	for _, p := range rf.parts {
		paths = append(paths, filepath.Join(p.dir, TableFile(table, rf.format)))
	}
	return paths
}

// Compacted reports whether the run is all in its single-file tables (no
// parts: finished, or compacted after a kill).
func (r *Run) Compacted() bool { return r.files == nil || len(r.files.parts) == 0 }

// HasLatency reports whether the run has any latency bucket (with
// StreamLatency, without reading them).
func (r *Run) HasLatency() bool {
	if !r.streamLatency {
		return len(r.Latency) > 0
	}
	if r.hasLatency == nil {
		has := false
		for _, path := range r.files.tablePaths(TableLatency) {
			f, fi, err := openRegular(path)
			if err != nil {
				continue
			}
			f.Close()
			if fi.Size() > 0 {
				pf, err := openParquetOrArrowRows(r.mem, path, r.Format)
				if err == nil && pf > 0 {
					has = true
					break
				}
			}
		}
		r.hasLatency = &has
	}
	return *r.hasLatency
}

// EachHistogram calls fn with the latency buckets of each trial × step, in
// trial order, reading the latency table batch by batch: only one
// trial × step's buckets are built at a time (the histogram passed is
// fn's to keep). With a run read without StreamLatency it walks
// Run.Latency.
func (r *Run) EachHistogram(fn func(trialID, step string, h Histogram) error) error {
	var cur [2]string
	var h Histogram
	started := false
	add := func(rows []LatencyRow) error {
		for _, l := range rows {
			if k := [2]string{l.TrialID, l.Step}; !started || k != cur {
				if started && len(h) > 0 {
					if !h.sorted() {
						h.sort()
					}
					if err := fn(cur[0], cur[1], h); err != nil {
						return err
					}
				}
				cur, h, started = k, nil, true
			}
			h = append(h, Bucket{Lower: l.LowerUS, Upper: l.UpperUS, Count: l.Count})
		}
		return nil
	}
	if !r.streamLatency {
		if err := add(r.Latency); err != nil {
			return err
		}
	} else if _, err := scanMerged(r.mem, r.files, TableLatency, fixed(latencyColumns), []string{"run_id"}, func(l *LatencyRow) string { return l.TrialID }, add); err != nil {
		return err
	}
	if started && len(h) > 0 {
		if !h.sorted() {
			h.sort()
		}
		return fn(cur[0], cur[1], h)
	}
	return nil
}

// Histogram returns the latency buckets of one trial × step, sorted.
func (r *Run) Histogram(trialID, step string) Histogram {
	if r.hist == nil {
		r.hist = map[[2]string]Histogram{}
		// Rows of one trial × step are consecutive: look the key up once
		// per run of rows.
		for i := 0; i < len(r.Latency); {
			j := i
			for j < len(r.Latency) && r.Latency[j].TrialID == r.Latency[i].TrialID && r.Latency[j].Step == r.Latency[i].Step {
				j++
			}
			k := [2]string{r.Latency[i].TrialID, r.Latency[i].Step}
			h := r.hist[k]
			if h == nil {
				h = make(Histogram, 0, j-i)
			}
			for _, l := range r.Latency[i:j] {
				h = append(h, Bucket{Lower: l.LowerUS, Upper: l.UpperUS, Count: l.Count})
			}
			r.hist[k] = h
			i = j
		}
		for _, h := range r.hist {
			if !h.sorted() {
				h.sort()
			}
		}
	}
	return r.hist[[2]string{trialID, step}]
}

// Param returns the value of axis in a trials row, or nil.
func (t *TrialRow) Param(axis string) any {
	for _, p := range t.Params {
		if p.Name == axis {
			return p.Value
		}
	}
	return nil
}

func (r *Run) String() string {
	return fmt.Sprintf("run %s (%d trial rows)", r.Manifest.RunID, len(r.Trials))
}

// openParquetOrArrowRows is the number of rows (Parquet) or record
// batches (Arrow IPC) a table file declares, without reading them.
func openParquetOrArrowRows(mem memory.Allocator, path, format string) (int64, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if format == FormatArrow {
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			return 0, err
		}
		defer r.Close()
		return int64(r.NumRecords()), nil
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	if err := checkParquetSizes(pf, fi.Size()); err != nil {
		return 0, err
	}
	return pf.NumRows(), nil
}
