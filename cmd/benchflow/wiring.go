package main

import (
	"github.com/benchflow/benchflow/engine/run"
	"github.com/benchflow/benchflow/engine/starconf/script"

	_ "github.com/benchflow/benchflow/providers/standard" // built-in providers
)

func init() {
	// Load steps with script = "…" use Starlark request scripts.
	run.RequesterFactory = script.NewRequester
}
