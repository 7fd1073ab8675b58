package hclconf

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// checkLimits refuses, before parsing, a source larger than
// pipeline.MaxFileSize or nested deeper than pipeline.MaxNesting: the
// parser recurses once per level, and a stack overflow cannot be
// recovered. The lexer it uses is not recursive.
func checkLimits(display string, src []byte) hcl.Diagnostics {
	if len(src) > pipeline.MaxFileSize {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Pipeline file too large",
			Detail:  fmt.Sprintf("%s is %d bytes; a pipeline file is at most %d bytes (16 MiB).", display, len(src), pipeline.MaxFileSize),
			Subject: &hcl.Range{Filename: display, Start: hcl.InitialPos, End: hcl.InitialPos}}}
	}
	return pipeline.CheckNesting(display, src)
}
