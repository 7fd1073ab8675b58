// Package escape neutralises what benchflow writes for other programs to
// read — and for a terminal (Terminal: control characters shown, never
// sent) — Markdown (report.md, REPRODUCE.md, reproduction.md, the sections
// report --update writes into a README, report and compare --format
// markdown) and CSV (export, report and compare --format csv). Every
// writer of those formats passes the values it did not write itself —
// names, descriptions, matrix values, environment fields, variables,
// messages — through it, so that a value is shown as text and never
// becomes markup, a broken table row or a spreadsheet formula.
package escape

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Markdown is s as inline Markdown text, in a paragraph or a table cell:
// it renders as s, its HTML shown rather than interpreted, its pipes and
// line breaks inside the one cell. In one pass it escapes
//
//   - '<' as &lt; where it could open HTML (a tag, a closing tag, a
//     comment, a declaration, an autolink: followed by a letter, '/', '!'
//     or '?') and '&' as &amp; where it could start an entity (followed
//     by a letter or '#'); a lone "< 0.7" or "a & b" stays as it is;
//   - the backslash and the pipe with a backslash (a value never ends a
//     table cell, nor escapes the separator after it);
//   - line breaks (\r\n, \n, \r) as <br> (a value never ends a table row,
//     a list item or a quote).
func Markdown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		next := byte(0)
		if i+1 < len(s) {
			next = s[i+1]
		}
		letter := next >= 'a' && next <= 'z' || next >= 'A' && next <= 'Z'
		switch {
		case c == '<' && (letter || next == '/' || next == '!' || next == '?'):
			b.WriteString("&lt;")
		case c == '&' && (letter || next == '#'):
			b.WriteString("&amp;")
		case c == '\\' || c == '|':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\r' && next == '\n':
			b.WriteString("<br>")
			i++
		case c == '\n' || c == '\r':
			b.WriteString("<br>")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// MarkdownCode is s as a Markdown code span (backticks included), in a
// paragraph: the fence is one backtick longer than the longest run of
// backticks in s (padded with spaces when s starts or ends with one), so
// that s never closes it, and line breaks become spaces (a code span
// shows them as spaces anyway, and a blank line would end it). HTML in a
// code span is shown as text.
func MarkdownCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// MarkdownCodeCell is MarkdownCode for a table cell: its pipes are
// escaped too (GFM reads a table row's cells before their code spans,
// and shows \| in a code span in a table as |).
func MarkdownCodeCell(s string) string {
	return MarkdownCode(strings.ReplaceAll(s, "|", `\|`))
}

// number is a cell a spreadsheet reads as a number: a sign, digits, an
// optional fraction and exponent. A negative number starts with '-' and
// is still left as it is.
var number = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$`)

// CSV is one CSV cell neutralised as OWASP's "CSV Injection" page
// recommends: a cell that begins with '=', '+', '-', '@', a tab or a
// carriage return, and is not a number, gets a single quote in front, so
// that a spreadsheet shows it as text instead of evaluating it as a
// formula. Numbers (-3.5, +2, -1e+06) are left as they are. Quoting the
// cell (a comma, a quote, a line break) is the CSV writer's job.
func CSV(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) || number.MatchString(s) {
		return s
	}
	return "'" + s
}

// CSVRecord is CSV applied to every cell of rec, in place; it returns
// rec.
func CSVRecord(rec []string) []string {
	for i, c := range rec {
		rec[i] = CSV(c)
	}
	return rec
}

// Terminal is s for a terminal: every control character but the line
// feed and the tab — the escape that starts a terminal's sequences, the
// carriage return and backspace that overwrite a line, the C1 controls
// (U+0080–U+009F), DEL — and every byte that is not UTF-8 is shown as
// \xHH (\u00HH for C1), so that text from a bundle or a run (a plan's
// arguments, a service's output, a claim's name) is read as written and
// never moves the cursor, erases a line or sets the terminal's title.
// A backslash is left as it is.
func Terminal(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune says whether r is a control character Terminal escapes (or
// the replacement of a byte that is not UTF-8, checked again there).
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == utf8.RuneError:
		return true
	case r == 0x2028 || r == 0x2029 || r == 0x202e || r == 0x200e || r == 0x200f || (r >= 0x2066 && r <= 0x2069) || (r >= 0x202a && r <= 0x202d):
		// Line separators and bidirectional overrides: text that
		// reads otherwise than it is.
		return true
	}
	return false
}

// TerminalWriter passes what is written to W through Terminal, line by
// line (a line is written whole once its line feed arrives; Flush writes
// what is left). It is safe for concurrent use.
type TerminalWriter struct {
	W    io.Writer
	mu   sync.Mutex
	line []byte
}

func (t *TerminalWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line = append(t.line, p...)
	for {
		i := bytes.IndexByte(t.line, '\n')
		if i < 0 {
			break
		}
		if _, err := io.WriteString(t.W, Terminal(string(t.line[:i+1]))); err != nil {
			return 0, err
		}
		t.line = t.line[i+1:]
	}
	// A line that never ends is written in pieces, not held forever.
	if len(t.line) > 64<<10 {
		if _, err := io.WriteString(t.W, Terminal(string(t.line))); err != nil {
			return 0, err
		}
		t.line = t.line[:0]
	}
	return len(p), nil
}

// Flush writes what is left of a last line without a line feed.
func (t *TerminalWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.line) == 0 {
		return nil
	}
	_, err := io.WriteString(t.W, Terminal(string(t.line)))
	t.line = nil
	return err
}
