// Package units is the one parser of each kind of value a user writes:
// durations, percentages and sizes. Both pipeline front ends (HCL and
// Starlark), every step and every CLI flag read their values through it, so
// an attribute and the flag of the same setting accept the same forms and
// refuse the others with the same message. docs/language.md ("Values")
// lists the grammar of each kind.
//
// Rates (requests per second) are plain numbers on both sides (an HCL or
// Starlark number, a float flag) and need no parser here; their bounds are
// load.Options.Validate and load.SearchOptions.Validate.
//
// It also writes sizes, rates and latencies back as the reports print
// them (FormatSize, FormatRate, FormatMS), so engine/report's tables and
// engine/claims' wording show a value alike.
//
// The package imports only the standard library, so every layer may use it.
package units
