// Package starconf is the Starlark front end: it runs a .star pipeline file
// and builds the same model (engine/pipeline) as the HCL front end
// (engine/hclconf) does for the equivalent .hcl file.
//
// Entry points: ParseFile (from disk), Parse and ParseSource (from an
// fs.FS, as tests do with fstest.MapFS) and ParseContext (with a context
// that cancels execution and explicit limits).
//
// The file runs once, in a locked-down interpreter (explicit
// syntax.FileOptions, a bounded number of execution steps, load() confined
// to the pipeline's folder). Builtins such as pipeline(), matrix(),
// service() and step.load() record declarations; service, step and
// provider bodies become synthesized *hclsyntax.Body values whose ranges
// point at the Starlark call, so engine/plan evaluates them per trial
// exactly as it evaluates HCL bodies. Values known only per trial
// (matrix.deploy, service.nginx.url, step.load.main, file("x.tmpl")) are
// references: Starlark values that become HCL expressions.
//
// The sibling package engine/starconf/script runs request scripts for load
// steps (`script = "requests.star"`, `benchflow load -s`).
package starconf
