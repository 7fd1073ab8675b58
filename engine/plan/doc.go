// Package plan expands a pipeline model into trials and evaluates it.
//
// Build resolves variables (--var, --var-file, defaults, validations),
// evaluates the matrix (axes, exclude, include), orders trials
// (interleaved, sequential or seeded random), builds the step DAG (explicit
// references and depends_on plus the implicit phase order provision → tune →
// check/exec → warm → load, with collect attached to the load it names) and
// dry-evaluates every trial so mistakes surface before anything runs.
//
// TrialEval evaluates bodies for one trial at run time; engine/run calls it
// as services come up (SetEndpoint makes service.<name>.* known). Functions
// holds the HCL function table (HCL's standard library plus file,
// fileexists and templatefile). Render and JSON print a plan.
//
// LoadOptions (load_step.go) maps the body of a load or warm step to
// engine/load's Options; validation holds the step to Options.Validate's
// limits and reports each problem at its attribute.
package plan
