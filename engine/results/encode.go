package results

// This file encodes committed trials as the run's tables (Arrow records,
// written as Parquet or Arrow IPC by tableio.go); writer.go owns the run
// folder's lifecycle (create, resume, commit, finish).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// trialData is every row one trial contributes to the tables. Rows of
// the big tables are converted to Arrow records when the trial is
// committed (seal): their id columns (run_id, trial_id, step) to runs of
// equal values, the other columns to an Arrow record.
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

// unstage turns an error about a staged file into one about the file
// it becomes, which is what the user knows.
func unstage(err error, stage, dir string) error {
	return errors.New(strings.ReplaceAll(err.Error(), stage, dir))
}

// writePart writes one trial's files into the staging folder stage: its
// rows of every table that has some (the trials table always, with the
// param_<axis> columns of axes) and its manifest entry.
func writePart(mem memory.Allocator, stage, format string, axes []axis, d *trialData, e *TrialEntry) error {
	p := func(t string) string { return filepath.Join(stage, TableFile(t, format)) }
	// The files are independent: encode them concurrently (the allocator
	// is safe for concurrent use); each is fsynced.
	var wg sync.WaitGroup
	errs := make([]error, numBig+4)
	run := func(i int, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
	}
	run(numBig, func() error { return writeTable(mem, nil, p(TableTrials), format, trialColumns(axes), d.trials) })
	if len(d.probes) > 0 {
		run(numBig+1, func() error { return writeTable(mem, nil, p(TableProbes), format, probeColumns, d.probes) })
	}
	if len(d.agents) > 0 {
		run(numBig+2, func() error { return writeTable(mem, nil, p(TableAgents), format, agentColumns, d.agents) })
	}
	for t := 0; t < numBig; t++ {
		if r := d.recs[t]; r != nil && r.NumRows() > 0 {
			run(t, func() error {
				return writeRecords(mem, nil, p(bigNames[t]), format, bigSchemas[t], []arrow.RecordBatch{r}, []idRuns{d.runs[t]})
			})
		}
	}
	run(numBig+3, func() error {
		b, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the manifest entry: %w", err)
		}
		return writeFileAtomic(nil, filepath.Join(stage, PartEntryFile), func(f *os.File) error {
			_, err := f.Write(append(b, '\n'))
			return err
		})
	})
	wg.Wait()
	return errors.Join(errs...)
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
		Attempt: int64(max(rec.Attempt, 1)), Discarded: rec.Discarded != "", DiscardedWhy: rec.Discarded,
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
			row.CapacityRPS, row.CapacityLimit, row.SLO, row.CapacityFailRPS = c.Rate, c.Limit, c.SLO.String(), c.Upper
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
			Container: p.Container, OutsideRun: p.OutsideRun, Host: p.Host,
		})
	}
	for _, s := range rec.System {
		d.system = append(d.system, SystemRow{
			RunID: runID, TrialID: rec.TrialID, Step: s.Step, TS: s.T, UserPct: s.UserPct, NicePct: s.NicePct,
			SystemPct: s.SystemPct, IdlePct: s.IdlePct, IOWaitPct: s.IOWaitPct, IRQPct: s.IRQPct,
			SoftIRQPct: s.SoftIRQPct, StealPct: s.StealPct, Host: s.Host,
		})
	}
	for _, n := range rec.Network {
		d.network = append(d.network, NetworkRow{
			RunID: runID, TrialID: rec.TrialID, Step: n.Step, TS: n.T, Interface: n.Interface,
			RxBytes: n.RxBytes, TxBytes: n.TxBytes, RxPackets: n.RxPackets, TxPackets: n.TxPackets, Host: n.Host,
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
