package bundle

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Section markers of a Markdown file whose tables come from bundles:
//
//	<!-- benchflow:report PATH [--baseline axis=value] -->
//	…generated: what `benchflow report PATH --format markdown` prints…
//	<!-- /benchflow -->
//
//	<!-- benchflow:verdict PATH -->
//	…generated: PATH/reproduction.md, the verdict of `benchflow reproduce`…
//	<!-- /benchflow -->
//
// PATH is relative to the Markdown file's folder. Markers inside fenced
// code blocks (``` … ```) are text, not sections.
var (
	markerStart = regexp.MustCompile(`(?m)^<!-- benchflow:([a-z]+) ([^>]*?) -->[ \t]*\n`)
	markerEnd   = "<!-- /benchflow -->"
)

// Section is one generated section of a Markdown file.
type Section struct {
	Kind string   // "report" or "verdict"
	Path string   // the bundle, relative to the file's folder
	Args []string // what follows the path (report flags)
	Line int      // 1-based line of the start marker
}

// Render produces a section's content (Markdown, ending in a newline).
type Render func(Section) (string, error)

// UpdateMarkdown regenerates every section of src between markers with
// render and returns the new text and the sections whose content changed.
// A start marker without its end, a nested marker or an unknown kind is an
// error naming the line.
func UpdateMarkdown(name string, src []byte, render Render) (out []byte, changed []Section, err error) {
	var b bytes.Buffer
	rest := src
	offset := 0
	fences := fenced(src)
	for {
		loc := markerStart.FindSubmatchIndex(rest)
		if loc != nil && inFence(fences, offset+loc[0]) {
			b.Write(rest[:loc[1]])
			offset += loc[1]
			rest = rest[loc[1]:]
			continue
		}
		if loc == nil {
			if i := bytes.Index(rest, []byte(markerEnd)); i >= 0 && !inFence(fences, offset+i) {
				return nil, nil, fmt.Errorf("%s:%d: %s without a start marker", name, lineOf(src, offset+i), markerEnd)
			}
			b.Write(rest)
			return b.Bytes(), changed, nil
		}
		line := lineOf(src, offset+loc[0])
		kind := string(rest[loc[2]:loc[3]])
		fields := strings.Fields(string(rest[loc[4]:loc[5]]))
		if kind != "report" && kind != "verdict" {
			return nil, nil, fmt.Errorf("%s:%d: unknown section <!-- benchflow:%s --> (want benchflow:report or benchflow:verdict)", name, line, kind)
		}
		if len(fields) == 0 {
			return nil, nil, fmt.Errorf("%s:%d: <!-- benchflow:%s --> names no bundle", name, line, kind)
		}
		sec := Section{Kind: kind, Path: fields[0], Args: fields[1:], Line: line}
		body := rest[loc[1]:]
		end := bytes.Index(body, []byte(markerEnd))
		if end < 0 {
			return nil, nil, fmt.Errorf("%s:%d: <!-- benchflow:%s %s --> has no %s", name, line, kind, sec.Path, markerEnd)
		}
		if nested := markerStart.FindIndex(body[:end]); nested != nil {
			return nil, nil, fmt.Errorf("%s:%d: a section starts inside the one of line %d", name, lineOf(src, offset+loc[1]+nested[0]), line)
		}
		content, err := render(sec)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if content != "" && !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		if string(body[:end]) != content {
			changed = append(changed, sec)
		}
		b.Write(rest[:loc[1]])
		b.WriteString(content)
		b.WriteString(markerEnd)
		consumed := loc[1] + end + len(markerEnd)
		offset += consumed
		rest = rest[consumed:]
	}
}

func lineOf(src []byte, off int) int { return bytes.Count(src[:off], []byte("\n")) + 1 }

// fenced returns the byte ranges [start, end) of the fenced code blocks of
// src (lines starting with ```, optionally indented).
func fenced(src []byte) [][2]int {
	var out [][2]int
	open := -1
	off := 0
	for _, line := range bytes.SplitAfter(src, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimLeft(line, " "), []byte("```")) {
			if open < 0 {
				open = off
			} else {
				out = append(out, [2]int{open, off + len(line)})
				open = -1
			}
		}
		off += len(line)
	}
	if open >= 0 {
		out = append(out, [2]int{open, len(src)})
	}
	return out
}

func inFence(fences [][2]int, at int) bool {
	for _, f := range fences {
		if at >= f[0] && at < f[1] {
			return true
		}
	}
	return false
}
