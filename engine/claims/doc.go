// Package claims owns what a study claims, declared once: the model of a
// claim block (Claim, Param, Bound and its grammar, ParseBound), its
// decoding from a block's body for both front ends (Decode: engine/hclconf
// hands it the HCL block, engine/starconf the body its claim() builtin
// builds), the metrics a claim may name with their units and how a trials
// row holds each (Metrics: the one list the decoder's errors, the report's
// readers and the docs derive from), the verdicts a verdict claim may name,
// and the labels of a claim's kind and outcome as manifest.json,
// claims.parquet, report and reproduce write them.
//
// It also owns the judging and its wording (judge.go, wording.go): Judge
// reads a ratio or value claim's 95% interval (engine/stats) against its
// bound, with how many more repetitions would likely decide an
// inconclusive one; JudgeVerdict judges a verdict claim on the verdicts of
// its cells' repetitions; FormatValue, EstimateLabel and Subject write a
// claim's values and what it judges as every report shows them.
//
// engine/plan matches claims against the matrix (it owns the cells), and
// engine/report selects a run's cells for each claim, computes the
// interval from their trials (the metrics of a round's cells combined,
// paired by round against the versus cells) and hands it to Judge.
package claims
