package pipeline

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// Limits on what a pipeline may ask for, so that an untrusted or mistyped
// pipeline fails validation with a located error instead of exhausting the
// machine. docs/language.md ("Limits") lists them; each error names the
// limit and how to raise it where it can be raised.
const (
	// MaxRepetitions bounds repetitions (the attribute and --repetitions).
	MaxRepetitions = 10000
	// DefaultMaxTrials bounds the trials of a plan (matrix cells ×
	// repetitions); --max-trials raises it.
	DefaultMaxTrials = 10000
	// MaxNesting bounds the nesting of brackets, braces, parentheses and
	// template interpolations in a pipeline file (HCL and Starlark),
	// checked before parsing.
	MaxNesting = 100
	// MaxFileSize bounds a pipeline file and each file read by file(),
	// templatefile() or load() (16 MiB).
	MaxFileSize = 16 << 20
)

// CheckNesting reports the first place where HCL source nests brackets,
// braces, parentheses or template sequences deeper than
// MaxNesting.
func CheckNesting(display string, src []byte) hcl.Diagnostics {
	toks, _ := hclsyntax.LexConfig(src, display, hcl.InitialPos)
	return checkTokens(toks)
}

// CheckTemplateNesting is CheckNesting for template text (file blocks,
// templatefile()), starting at pos.
func CheckTemplateNesting(display string, src []byte, pos hcl.Pos) hcl.Diagnostics {
	toks, _ := hclsyntax.LexTemplate(src, display, pos)
	return checkTokens(toks)
}

// CheckExpressionNesting is CheckNesting for one expression, starting at pos.
func CheckExpressionNesting(display string, src []byte, pos hcl.Pos) hcl.Diagnostics {
	toks, _ := hclsyntax.LexExpression(src, display, pos)
	return checkTokens(toks)
}

func checkTokens(toks hclsyntax.Tokens) hcl.Diagnostics {
	depth := 0
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
			if depth > MaxNesting {
				return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Nesting too deep",
					Detail:  fmt.Sprintf("Expressions and blocks nest at most %d levels deep (brackets, braces, parentheses, strings and ${…} count).", MaxNesting),
					Subject: t.Range.Ptr()}}
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen,
			hclsyntax.TokenTemplateSeqEnd, hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
