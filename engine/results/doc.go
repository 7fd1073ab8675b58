// Package results is the results store: it writes a run's tables
// (trials, latency, timeseries, processes, system, network) as Parquet
// (zstd) or Arrow IPC files plus manifest.json and the pipeline source,
// and reads them back.
//
// Entry points:
//
//   - NewRunID names a run; Create starts its directory; Writer.CommitTrial
//     records each trial as it ends, as its own part folder
//     (parts/<trial-id>/, staged and renamed into place: a commit's cost
//     does not grow with the run); Writer.CommitTrials does several at
//     once; Writer.Finish records the run's status and compacts the parts
//     into the single-file tables (Compact does it for a killed run).
//   - Resume reopens a run for `apply --resume`; Manifest.CheckResumable
//     tells whether the pipeline changed (ErrPipelineChanged) and
//     Manifest.Done which trials to skip.
//   - ReadRun reads a run directory back, in either form (tables, parts
//     or both), checking every file first (validate.go); ReadRunWith and
//     Run.EachHistogram stream the latency buckets (engine/report);
//     Run.Histogram and Histogram.Percentile recompute percentiles from the
//     stored buckets the way HdrHistogram does.
//   - WriteLoadFile writes the result of a one-off `benchflow load --out`.
//
// Parquet files store run_id, trial_id and step dictionary-encoded (their
// column type stays string); docs/performance.md has the costs of writing
// and reading a large run.
//
// Files: writer.go owns the run folder's lifecycle (create, resume, lock,
// commit, finish, the latest link); encode.go turns committed trials into
// the tables' Arrow records; tableio.go writes and reads them as Parquet or
// Arrow IPC; parts.go holds the per-trial parts, the merged reading of
// both forms and compaction; validate.go checks what is read.
//
// The input is TrialRecord (record.go), filled by the executor in
// engine/run from engine/load results and engine/collect samples. The
// tables are defined once, in schema.go; docs/results.md documents every
// column. engine/report owns the summaries, charts and comparisons built
// on top of Run.
package results
