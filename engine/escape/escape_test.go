package escape

import (
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, 4 KiB":              "plain text, 4 KiB",
		"ratio 0.39 < 0.7, 0.85 > 0.5":   "ratio 0.39 < 0.7, 0.85 > 0.5",
		"a & b":                          "a & b",
		"<img src=x onerror=alert(1)>":   "&lt;img src=x onerror=alert(1)>",
		"</td><script>x</script>":        "&lt;/td>&lt;script>x&lt;/script>",
		"<!-- /benchflow -->":            "&lt;!-- /benchflow -->",
		"<?php ?> <!DOCTYPE>":            "&lt;?php ?> &lt;!DOCTYPE>",
		"<https://example.com>":          "&lt;https://example.com>",
		"&lt; &#60; &amp;":               "&amp;lt; &amp;#60; &amp;amp;",
		"a|b":                            `a\|b`,
		`ends in \`:                      `ends in \\`,
		`a\|b`:                           `a\\\|b`,
		"one\ntwo\r\nthree\rfour":        "one<br>two<br>three<br>four",
		"| --- | ---: |":                 `\| --- \| ---: \|`,
		"=HYPERLINK(\"http://x\",\"y\")": "=HYPERLINK(\"http://x\",\"y\")",
	} {
		if got := Markdown(in); got != want {
			t.Errorf("Markdown(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkdownCode(t *testing.T) {
	for in, want := range map[string]string{
		"x":            "`x`",
		"a`b":          "``a`b``",
		"``x":          "``` ``x ```",
		"x`":           "`` x` ``",
		"<b>bold</b>":  "`<b>bold</b>`",
		"one\ntwo\r\n": "`one two `",
		"a|b":          "`a|b`",
	} {
		if got := MarkdownCode(in); got != want {
			t.Errorf("MarkdownCode(%q) = %q, want %q", in, got, want)
		}
	}
	if got := MarkdownCodeCell("a|`b`"); got != "`` a\\|`b` ``" {
		t.Errorf("MarkdownCodeCell = %q", got)
	}
}

func TestCSV(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "",
		"plain":                    "plain",
		"=1+2":                     "'=1+2",
		"=HYPERLINK(\"http://x\")": "'=HYPERLINK(\"http://x\")",
		"+x":                       "'+x",
		"-2+3":                     "'-2+3",
		"-cmd|' /C calc'!A0":       "'-cmd|' /C calc'!A0",
		"@SUM(A1)":                 "'@SUM(A1)",
		"\tx":                      "'\tx",
		"\rx":                      "'\rx",
		"-3.5":                     "-3.5",
		"+2":                       "+2",
		"-1e+06":                   "-1e+06",
		"-.5":                      "-.5",
		"-Inf":                     "'-Inf",
		"-":                        "'-",
		"2026-12-01T20:00:00Z":     "2026-12-01T20:00:00Z",
		"x=1":                      "x=1",
		" =1":                      " =1",
	} {
		if got := CSV(in); got != want {
			t.Errorf("CSV(%q) = %q, want %q", in, got, want)
		}
	}
	rec := CSVRecord([]string{"=a", "1", "-2"})
	if strings.Join(rec, ",") != "'=a,1,-2" {
		t.Errorf("CSVRecord = %q", rec)
	}
}

func TestTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 日本\n\ttab": "plain text, é and 日本\n\ttab",
		"\x1b[2K\rfake line":          `\x1b[2K\x0dfake line`,
		"bell\a del\x7f":              `bell\x07 del\x7f`,
		"c1 \u009b31m":                `c1 \u009b31m`,
		"bad \xff byte":               `bad \xff byte`,
		"rtl \u202eevil":              `rtl \u202eevil`,
		`back\slash`:                  `back\slash`,
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
	var b strings.Builder
	w := &TerminalWriter{W: &b}
	w.Write([]byte("one\x1b]0;title\x07\ntw"))
	w.Write([]byte("o\r"))
	w.Flush()
	if want := `one\x1b]0;title\x07` + "\n" + `two\x0d`; b.String() != want {
		t.Errorf("TerminalWriter wrote %q, want %q", b.String(), want)
	}
}
