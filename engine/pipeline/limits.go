package pipeline

import (
	"fmt"

	"github.com/benchflow/benchflow/engine/userfile"
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
	// MaxExpressionDepth bounds how deep an HCL expression nests once
	// parsed: brackets, plus operators chained at one level (a + b + c
	// and a ? b : c ? d : e nest once per operator, !!!x once per !,
	// x[a][b] once per index), checked before parsing, since parsing and
	// evaluating recurse once per level.
	MaxExpressionDepth = 1000
	// MaxFileSize bounds a pipeline file and each file read by file(),
	// templatefile() or load() (16 MiB).
	MaxFileSize = userfile.MaxSize
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
	// chain[i] counts the operators chained at bracket level i since the
	// last separator; total is their sum plus the levels.
	chain := []int{0}
	opens := []hclsyntax.TokenType{hclsyntax.TokenNil}
	total := 0
	prev := hclsyntax.TokenNil
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash, hclsyntax.TokenPercent,
			hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
			hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq,
			hclsyntax.TokenQuestion, hclsyntax.TokenDot:
			chain[len(chain)-1]++
			total++
		case hclsyntax.TokenOBrack:
			switch prev {
			case hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCBrace, hclsyntax.TokenIdent, hclsyntax.TokenCQuote, hclsyntax.TokenNumberLit:
				chain[len(chain)-1]++ // an index: x[a][b] nests
				total++
			}
		case hclsyntax.TokenComma, hclsyntax.TokenEqual, hclsyntax.TokenFatArrow:
			total -= chain[len(chain)-1]
			chain[len(chain)-1] = 0
		case hclsyntax.TokenNewline:
			// Newlines end an expression in a body or an object, not
			// inside parentheses, brackets or ${…}.
			if len(chain) == 1 || opens[len(opens)-1] == hclsyntax.TokenOBrace {
				total -= chain[len(chain)-1]
				chain[len(chain)-1] = 0
			}
		}
		if total+len(chain) > MaxExpressionDepth {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Expression too deep",
				Detail:  fmt.Sprintf("An expression nests at most %d levels deep once parsed (each bracket, and each operator or index chained at one level, counts: a + b + …, !!…x, a ? b : c ? …); split it into local values.", MaxExpressionDepth),
				Subject: t.Range.Ptr()}}
		}
		prev = t.Type
		switch t.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen,
			hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl, hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			depth++
			chain = append(chain, 0)
			opens = append(opens, t.Type)
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
			if len(chain) > 1 {
				// A bracketed expression is one term of the level around it.
				total -= chain[len(chain)-1]
				chain, opens = chain[:len(chain)-1], opens[:len(opens)-1]
			}
		}
	}
	return nil
}
