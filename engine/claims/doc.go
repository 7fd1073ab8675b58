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
// engine/plan matches claims against the matrix (it owns the cells), and
// engine/report judges them on a run's trials with its intervals.
package claims
