// Package report turns a run read by engine/results into what people
// read: a summary table per matrix cell, charts, and the comparison of two
// runs.
//
// Entry points:
//
//   - Summarize aggregates a run per matrix cell (geometric mean req/s
//     with a 95% t interval on the logs over repetitions, the range below
//     3; p50/p99/p99.9 from the merged histograms, errors, MAD outlier
//     flags, top processes by CPU%, optional ratio to a baseline cell
//     paired by round); Summary.Write renders it as text, markdown, csv or
//     json; WriteHTML writes a self-contained page with SVG charts;
//     WritePNG writes the same charts as PNG files.
//   - EvaluateClaims judges the claims recorded in a run's manifest
//     (claim blocks) with the same intervals: claims.go selects each
//     claim's cells, reads its metric from their trials and computes the
//     interval, and engine/claims judges it (holds, fails or
//     inconclusive, with how many more repetitions would likely decide)
//     and words it; Summarize fills Summary.Claims and every format shows
//     them; RecordedClaims reads claims.parquet back, ClaimRows builds it.
//   - Compare pairs the cells of two runs, judges each pair with a Welch
//     interval on the log ratio and says whether it reproduced;
//     Comparison.Write renders it.
//
// The statistics on plain samples (intervals, the t quantile, the MAD
// rule) live in engine/stats; samples.go applies them per repetition
// (flags); docs/statistics.md explains them.
//
// The cmd/benchflow report and compare commands are thin wrappers around
// these. Reading and writing the tables is engine/results' job.
package report
