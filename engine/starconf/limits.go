package starconf

import (
	"fmt"

	"go.starlark.net/syntax"

	"github.com/benchflow/benchflow/engine/pipeline"
)

// checkSource refuses, before parsing, a file larger than
// pipeline.MaxFileSize or whose brackets nest deeper than
// pipeline.MaxNesting: the parser recurses once per level, and a stack
// overflow cannot be recovered. It skips strings and comments.
func checkSource(shown string, src []byte) error {
	if len(src) > pipeline.MaxFileSize {
		return &limitError{pos: syntax.MakePosition(&shown, 1, 1), summary: "Pipeline file too large",
			msg: fmt.Sprintf("%s is %d bytes; a pipeline file is at most %d bytes (16 MiB)", shown, len(src), pipeline.MaxFileSize)}
	}
	line, col := int32(1), int32(1)
	depth := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
			continue
		case c == '\'' || c == '"':
			quote := string(c)
			if i+2 < len(src) && src[i+1] == c && src[i+2] == c {
				quote = string([]byte{c, c, c})
			}
			j := i + len(quote)
			for j < len(src) {
				if src[j] == '\\' {
					j += 2
					continue
				}
				if len(quote) == 1 && src[j] == '\n' {
					break // unterminated: the parser reports it
				}
				if j+len(quote) <= len(src) && string(src[j:j+len(quote)]) == quote {
					j += len(quote)
					break
				}
				j++
			}
			if j > len(src) {
				j = len(src)
			}
			for _, b := range src[i:j] {
				if b == '\n' {
					line++
					col = 1
				} else {
					col++
				}
			}
			i = j - 1
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
			if depth > pipeline.MaxNesting {
				return &limitError{pos: syntax.MakePosition(&shown, line, col), summary: "Nesting too deep",
					msg: fmt.Sprintf("Brackets, braces and parentheses nest at most %d levels deep", pipeline.MaxNesting)}
			}
		case c == ')' || c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return nil
}

// limitError is a file refused before parsing for one of the limits.
type limitError struct {
	pos          syntax.Position
	summary, msg string
}

func (e *limitError) Error() string { return fmt.Sprintf("%s: %s", e.pos, e.msg) }
