// Package report turns a run read by engine/results into what people
// read: a summary table per matrix cell, charts, and the comparison of two
// runs.
//
// Entry points:
//
//   - Summarize aggregates a run per matrix cell (mean req/s with a 95%
//     t interval over repetitions, p50/p99/p99.9 from the merged
//     histograms, errors, top processes by CPU%, optional ratio to a
//     baseline cell); Summary.Write renders it as text, markdown, csv or
//     json; WriteHTML writes a self-contained page with SVG charts;
//     WritePNG writes the same charts as PNG files.
//   - Compare pairs the cells of two runs and judges each pair with a
//     bootstrap of the ratio of means; Comparison.Write renders it.
//
// The cmd/benchflow report and compare commands are thin wrappers around
// these. Reading and writing the tables is engine/results' job.
package report
