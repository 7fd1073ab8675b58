package bundle

import (
	"errors"
	"strings"
	"testing"
)

// TestUpdateMarkdown: sections between markers are replaced by what
// render returns, text outside them is kept byte for byte, changed
// sections are reported, and broken markers are errors naming the line.
func TestUpdateMarkdown(t *testing.T) {
	src := "# T\n\nintro\n<!-- benchflow:report b1 --baseline deploy=host -->\nold\n<!-- /benchflow -->\nmiddle\n<!-- benchflow:verdict b2 -->\nsame\n<!-- /benchflow -->\nend\n"
	var seen []Section
	out, changed, err := UpdateMarkdown("R.md", []byte(src), func(s Section) (string, error) {
		seen = append(seen, s)
		if s.Kind == "verdict" {
			return "same\n", nil
		}
		return "| new |", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "# T\n\nintro\n<!-- benchflow:report b1 --baseline deploy=host -->\n| new |\n<!-- /benchflow -->\nmiddle\n<!-- benchflow:verdict b2 -->\nsame\n<!-- /benchflow -->\nend\n"
	if string(out) != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	if len(seen) != 2 || seen[0].Path != "b1" || strings.Join(seen[0].Args, " ") != "--baseline deploy=host" || seen[0].Line != 4 || seen[1].Line != 8 {
		t.Errorf("sections %+v", seen)
	}
	if len(changed) != 1 || changed[0].Path != "b1" {
		t.Errorf("changed %+v, want b1 only", changed)
	}
	// Markers inside a fenced code block are text.
	fencedSrc := "how:\n```\n<!-- benchflow:report b -->\n<!-- /benchflow -->\n```\n"
	out, changed, err = UpdateMarkdown("R.md", []byte(fencedSrc), func(Section) (string, error) { return "", errors.New("rendered a fenced marker") })
	if err != nil || string(out) != fencedSrc || len(changed) != 0 {
		t.Errorf("fenced markers: %v, %q, %v", err, out, changed)
	}
	for bad, msg := range map[string]string{
		"a\n<!-- benchflow:report b -->\nno end\n":                                        "R.md:2: <!-- benchflow:report b --> has no <!-- /benchflow -->",
		"a\n<!-- /benchflow -->\n":                                                        "R.md:2: <!-- /benchflow --> without a start marker",
		"<!-- benchflow:table b -->\n<!-- /benchflow -->\n":                               "R.md:1: unknown section",
		"<!-- benchflow:report a -->\n<!-- benchflow:report b -->\n<!-- /benchflow -->\n": "R.md:2: a section starts inside the one of line 1",
	} {
		_, _, err := UpdateMarkdown("R.md", []byte(bad), func(Section) (string, error) { return "", nil })
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", bad, err, msg)
		}
	}
}
