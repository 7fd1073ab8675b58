// Package steps declares the step kinds a pipeline may use: provision,
// tune, check, exec, warm, load and collect, one file each. A Kind holds
// everything the rest of the engine needs to know about a kind:
//
//   - its name and phase (the implicit DAG order engine/plan applies);
//   - its schema: NewConfig returns the gohcl struct of a step's body,
//     nested blocks included, and Blocks spells those blocks for Starlark;
//     engine/hclconf and engine/starconf check bodies against it;
//   - Validate, run by engine/plan for every trial, returning diagnostics
//     with source ranges (AttrErr, CheckDuration, CheckURL help);
//   - Refs, the services and files a body names, which plan checks exist.
//
// How a kind runs is not declared here: engine/run registers one executor
// per kind (executors.go), but for collect, which runs during a load.
//
// Entry points: Lookup, Names, NewConfig. LoadOptions maps a load or warm
// step's body to engine/load's Options, whose Validate is the one rule for
// the load's limits (reported here at the attribute); SearchOptions maps a
// search block to the capacity search's options.
//
// A kind's file declares a Spec[C] over its schema struct C, whose
// functions take a *C; KindOf turns it into the *Kind (NewConfig and the
// one assertion of the engine's any to *C). A new kind is one such file
// and one entry in kinds (registry.go); a nested block of an existing
// kind is a field of its schema struct (`hcl:"name,block"`) plus a Block
// for Starlark. See docs/extending.md.
package steps
