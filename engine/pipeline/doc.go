// Package pipeline is the model of a benchmark study: the pipeline, its
// variables, matrix, providers, services and steps (model.go), and the
// per-trial schemas of service bodies and of most step bodies (schema.go;
// engine/steps declares the step kinds, and the load and warm kinds keep
// their schema there). The claims a study states are engine/claims'.
//
// Front ends build it: engine/hclconf from .hcl files, engine/starconf from
// .star files. engine/plan expands it into trials and evaluates bodies per
// trial; engine/run executes the result. This package has no behaviour of its
// own beyond small helpers, so every other engine package can import it.
package pipeline
