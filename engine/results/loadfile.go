package results

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/scratch"
)

// LoadFilePaths returns the three files WriteLoadFile writes for path:
// path itself (the trials row), and the latency and timeseries tables
// next to it ("out.parquet" → "out.latency.parquet",
// "out.timeseries.parquet").
func LoadFilePaths(path string) (trials, latency, timeseries string) {
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext)
	if ext == "" {
		ext = ".parquet"
	}
	return path, base + ".latency" + ext, base + ".timeseries" + ext
}

// WriteLoadFile writes the result of a one-off load (`benchflow load --out
// FILE.parquet`): FILE.parquet holds one trials row (the columns of
// trials.parquet, no param_ columns, trial_id "load"), and
// FILE.latency.parquet and FILE.timeseries.parquet hold its histogram
// buckets and intervals, with the same columns as the run tables. A
// ".arrow" extension writes Arrow IPC files instead. A path that exists
// and is not a regular file (a device, a FIFO) is written in place and
// gets the trials row only (scratch.WriteOutput).
func WriteLoadFile(path string, step string, res *measure.Record) error {
	return writeLoadFile(memory.DefaultAllocator, path, step, res)
}

func writeLoadFile(mem memory.Allocator, path, step string, res *measure.Record) error {
	if res == nil {
		return errors.New("writing load results: nil result")
	}
	if step == "" {
		step = "load"
	}
	format := FormatParquet
	if strings.EqualFold(filepath.Ext(path), ".arrow") {
		format = FormatArrow
	}
	rec := &TrialRecord{TrialID: "load", Repetition: 1, Provider: "none", Status: StatusOK,
		StartedAt: res.Started, FinishedAt: res.Started.Add(res.Duration),
		Steps: []StepRecord{{Name: step, Kind: "load", Status: StatusOK, Result: res}}}
	d, err := rowsOf("", rec)
	if err != nil {
		return fmt.Errorf("writing load results: %w", err)
	}
	tp, lp, sp := LoadFilePaths(path)
	// A device or a FIFO (/dev/null, a pipe to another program) gets
	// the trials row only: nothing is written beside it.
	beside := scratch.IsRegularOrAbsent(tp)
	if err := writeTableVia(writeOutput, mem, scratch.Machine(), tp, format, trialColumns(nil), d.trials); err != nil {
		return fmt.Errorf("writing load results: %w", err)
	}
	if !beside {
		return nil
	}
	lat := latencyRecord(mem, d.hists)
	defer lat.Release()
	if err := writeRecordsVia(writeOutput, mem, scratch.Machine(), lp, format, bigSchemas[bigLatency], []arrow.RecordBatch{lat}, []idRuns{histRuns(d.hists)}); err != nil {
		return fmt.Errorf("writing load results: %w", err)
	}
	if err := writeTableVia(writeOutput, mem, scratch.Machine(), sp, format, timeseriesColumns, d.timeseries); err != nil {
		return fmt.Errorf("writing load results: %w", err)
	}
	return nil
}
