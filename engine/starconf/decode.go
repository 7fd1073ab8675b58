package starconf

// The fixed declarations (pipeline, variable, output) are decoded from
// synthesized bodies by engine/hclconf's own decoders, so both front ends
// accept and reject the same things with the same messages.

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/pipeline"
)

func decodePipeline(p *pipeline.Pipeline, name string, at hcl.Range, body *hclsyntax.Body) hcl.Diagnostics {
	return hclconf.DecodePipeline(p, name, at, body)
}

func decodeOutput(p *pipeline.Pipeline, body *hclsyntax.Body) hcl.Diagnostics {
	return hclconf.DecodeOutput(p, body)
}

func decodeVariable(name string, at hcl.Range, body *hclsyntax.Body) (*pipeline.Variable, hcl.Diagnostics) {
	return hclconf.DecodeVariable(name, at, body)
}

func decodeClaim(name string, at hcl.Range, body *hclsyntax.Body) (*claims.Claim, hcl.Diagnostics) {
	return claims.Decode(name, at, body)
}

func checkBody(body hcl.Body, v any) hcl.Diagnostics { return hclconf.CheckBody(body, v) }

func validName(s string) bool { return hclconf.ValidName(s) }

func validClaimName(s string) bool { return hclconf.ValidClaimName(s) }

func shortRange(r hcl.Range) string { return hclconf.ShortRange(r) }
