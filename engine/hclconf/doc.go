// Package hclconf is the HCL front end: it decodes a .hcl pipeline file into
// the model of engine/pipeline.
//
// Entry points: ParseFile (from disk) and Parse/ParseSource (from an fs.FS,
// as tests do with fstest.MapFS). Decoding is the first of two phases: the
// fixed blocks (pipeline, variable, locals, matrix, output) are decoded here
// and bodies are checked for structure (unknown arguments and blocks, with
// suggestions); service, step and provider bodies are kept as hcl.Body and
// evaluated per trial by engine/plan, which owns expression evaluation,
// functions and the step DAG. engine/diag renders the diagnostics.
package hclconf
