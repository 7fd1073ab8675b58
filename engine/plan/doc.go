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
// as services come up (SetEndpoint makes service.<name>.* known).
// TrialEval.PrepareService (service.go) is the one evaluation of a
// service — ports, self.*, body, files — that the dry run, `benchflow
// render` and the run share, each with its plan.Placement;
// ServiceProvider and AgentsProvider resolve a provider block. Functions
// holds the HCL function table (HCL's standard library plus file,
// fileexists and templatefile). Render and JSON print a plan.
//
// Build also matches every claim block to the cells it selects and the
// load step it judges (claims.go: Plan.Claims), so a claim about an axis,
// a value or a metric the pipeline does not have is an error before
// anything runs; after the run engine/report computes each claim's
// interval and engine/claims judges it.
//
// What a step kind is (its schema, phase, validation and run function) is
// declared in engine/steps; plan looks each step's kind up there to decode,
// validate and order it.
package plan
