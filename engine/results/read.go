package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/memory"
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
}

// ReadRun reads a run directory. dir may also be a results folder with a
// "latest" link, which is followed. Tables not written yet (no trial
// committed) read as empty.
func ReadRun(dir string) (*Run, error) {
	return readRun(dir, memory.DefaultAllocator)
}

func readRun(dir string, mem memory.Allocator) (*Run, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading run: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("reading run: %s is not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); errors.Is(err, os.ErrNotExist) {
		if _, err2 := os.Stat(filepath.Join(dir, "latest", "manifest.json")); err2 == nil {
			dir = filepath.Join(dir, "latest")
		} else {
			return nil, fmt.Errorf("reading run: %s is neither a run directory (no manifest.json) nor a results folder (no latest run)", dir)
		}
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	format := m.OutputFormat
	if format == "" {
		format = FormatParquet
	}
	if _, err := os.Stat(filepath.Join(dir, TableFile(TableTrials, format))); errors.Is(err, os.ErrNotExist) {
		other := FormatArrow
		if format == FormatArrow {
			other = FormatParquet
		}
		if _, err := os.Stat(filepath.Join(dir, TableFile(TableTrials, other))); err == nil {
			format = other
		}
	}
	r := &Run{Dir: dir, Manifest: m, Format: format}
	p := func(t string) string { return filepath.Join(dir, TableFile(t, format)) }
	if r.Trials, err = readTable(mem, p(TableTrials), format, trialColumnsFor); err != nil {
		return nil, err
	}
	// run_id of the per-trial tables always equals the manifest's: it is
	// not decoded but filled in.
	id := m.RunID
	if r.Latency, err = readTable(mem, p(TableLatency), format, fixed(latencyColumns), "run_id"); err != nil {
		return nil, err
	}
	for i := range r.Latency {
		r.Latency[i].RunID = id
	}
	if r.Timeseries, err = readTable(mem, p(TableTimeseries), format, fixed(timeseriesColumns), "run_id"); err != nil {
		return nil, err
	}
	for i := range r.Timeseries {
		r.Timeseries[i].RunID = id
	}
	if r.Processes, err = readTable(mem, p(TableProcesses), format, fixed(processColumns), "run_id"); err != nil {
		return nil, err
	}
	for i := range r.Processes {
		r.Processes[i].RunID = id
	}
	if r.System, err = readTable(mem, p(TableSystem), format, fixed(systemColumns), "run_id"); err != nil {
		return nil, err
	}
	for i := range r.System {
		r.System[i].RunID = id
	}
	if r.Network, err = readTable(mem, p(TableNetwork), format, fixed(networkColumns), "run_id"); err != nil {
		return nil, err
	}
	for i := range r.Network {
		r.Network[i].RunID = id
	}
	if r.Probes, err = readTable(mem, p(TableProbes), format, fixed(probeColumns)); err != nil {
		return nil, err
	}
	if r.Agents, err = readTable(mem, p(TableAgents), format, fixed(agentColumns)); err != nil {
		return nil, err
	}
	if err := r.loadAxes(p(TableTrials), format, mem); err != nil {
		return nil, err
	}
	return r, nil
}

// loadAxes reads the param_<axis> columns from the trials schema (so that
// axes survive even when every value is null).
func (r *Run) loadAxes(path, format string, mem memory.Allocator) error {
	if _, err := os.Stat(path); err != nil {
		for _, a := range r.Manifest.Axes {
			r.Axes = append(r.Axes, a)
		}
		return nil
	}
	s, err := readSchema(mem, path, format)
	if err != nil {
		return err
	}
	r.axes = axesOf(s)
	for _, a := range r.axes {
		r.Axes = append(r.Axes, a.Name)
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
