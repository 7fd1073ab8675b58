package starconf

import (
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"go.starlark.net/syntax"
)

// source is one executed file: its bytes and the calls it contains, indexed
// by the position of their opening parenthesis (what the interpreter
// reports as a call frame's position).
type source struct {
	name       string
	src        []byte
	lineStarts []int
	calls      map[[2]int32]*syntax.CallExpr
}

func newSource(name string, src []byte, f *syntax.File) *source {
	s := &source{name: name, src: src, lineStarts: []int{0}, calls: map[[2]int32]*syntax.CallExpr{}}
	for i, b := range src {
		if b == '\n' {
			s.lineStarts = append(s.lineStarts, i+1)
		}
	}
	if f != nil {
		syntax.Walk(f, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.CallExpr); ok {
				s.calls[[2]int32{c.Lparen.Line, c.Lparen.Col}] = c
			}
			return true
		})
	}
	return s
}

// pos converts a Starlark position (1-based line and rune column) into an
// HCL position with a byte offset.
func (s *source) pos(p syntax.Position) hcl.Pos {
	line, col := int(p.Line), int(p.Col)
	if line < 1 {
		return hcl.InitialPos
	}
	if col < 1 {
		col = 1
	}
	off := len(s.src)
	if line-1 < len(s.lineStarts) {
		off = s.lineStarts[line-1]
		for r := 1; r < col && off < len(s.src) && s.src[off] != '\n'; r++ {
			_, n := utf8.DecodeRune(s.src[off:])
			off += n
		}
	}
	return hcl.Pos{Line: line, Column: col, Byte: off}
}

func (s *source) rng(start, end syntax.Position) hcl.Range {
	r := hcl.Range{Filename: s.name, Start: s.pos(start), End: s.pos(end)}
	if !end.IsValid() || r.End.Byte < r.Start.Byte {
		r.End = r.Start
	}
	return r
}

func (s *source) nodeRange(n syntax.Node) hcl.Range {
	start, end := n.Span()
	return s.rng(start, end)
}

// site is where a builtin was called from: the file and the call
// expression (nil when the call cannot be found, e.g. through a
// function value called indirectly).
type site struct {
	src  *source
	call *syntax.CallExpr
	at   hcl.Range // the call expression, or the call position
}

// kwarg returns the ranges of keyword argument name (name and value).
func (s site) kwarg(name string) (nameRange, valueRange hcl.Range) {
	if s.call != nil {
		for _, a := range s.call.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				if id, ok := b.X.(*syntax.Ident); ok && id.Name == name {
					return s.src.nodeRange(id), s.src.nodeRange(b.Y)
				}
			}
		}
	}
	return s.at, s.at
}

// arg returns the range of the i-th positional argument.
func (s site) arg(i int) hcl.Range {
	if s.call != nil {
		n := 0
		for _, a := range s.call.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				continue
			}
			if n == i {
				return s.src.nodeRange(a)
			}
			n++
		}
	}
	return s.at
}

// argStart returns the position just inside the quotes of the i-th
// positional argument when it is a string literal, for parsing the string
// as HCL with accurate positions.
func (s site) argStart(i int) hcl.Pos {
	r := s.arg(i)
	if s.call != nil {
		n := 0
		for _, a := range s.call.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				continue
			}
			if n == i {
				if lit, ok := a.(*syntax.Literal); ok && lit.Token == syntax.STRING && len(lit.Raw) > 0 && (lit.Raw[0] == '"' || lit.Raw[0] == '\'') {
					p := r.Start
					p.Column++
					p.Byte++
					return p
				}
			}
			n++
		}
	}
	return r.Start
}
