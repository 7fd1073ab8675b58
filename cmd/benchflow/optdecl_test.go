package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/load"
)

// TestLoadFlagsAreDeclared: every flag an option declares is a flag of
// `benchflow load`, with the declared one-letter form, so the flag names
// the command's errors derive from load.Declared are flags it has.
func TestLoadFlagsAreDeclared(t *testing.T) {
	f := newLoadCmd().Flags()
	for _, d := range load.Declared {
		if d.Flag == "" {
			continue
		}
		fl := f.Lookup(d.Flag)
		if fl == nil {
			t.Errorf("option %s declares the flag --%s, which benchflow load does not have", d.Field, d.Flag)
			continue
		}
		if fl.Shorthand != d.Short {
			t.Errorf("option %s: --%s has the short form %q, declared %q", d.Field, d.Flag, fl.Shorthand, d.Short)
		}
	}
	if got := loadFlags["connections"]; got != "-c/--connections" {
		t.Errorf("loadFlags[connections] = %q", got)
	}
	if got := loadFlags["protocol"]; got != "--h2" {
		t.Errorf("loadFlags[protocol] = %q", got)
	}
}

// optionTable renders load.Declared as the table of docs/load.md.
func optionTable() string {
	var b strings.Builder
	b.WriteString("| attribute | flag | agent wire | unit | default | limit | meaning |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	code := func(s string) string {
		if s == "" {
			return "–"
		}
		return "`" + s + "`"
	}
	for _, d := range load.Declared {
		wire := code(d.WireKey())
		if d.WireKey() == "" {
			wire = "not sent"
		}
		limit := d.Limit
		if limit == "" {
			limit = "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", code(d.Attr), code(d.FlagName()), wire, d.Unit, d.Default, limit, d.Doc)
	}
	return b.String()
}

// TestDocsOptionTable: the option table of docs/load.md is load.Declared
// as optionTable renders it.
func TestDocsOptionTable(t *testing.T) {
	const begin, end = "<!-- options: generated from load.Declared (engine/load/optdecl.go), checked by TestDocsOptionTable -->\n", "<!-- end of options -->\n"
	b, err := os.ReadFile("../../docs/load.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/load.md has no option table between %q and %q", begin, end)
	}
	if got, want := s[i+len(begin):j], optionTable(); got != want {
		t.Errorf("docs/load.md's option table is not load.Declared; it should read:\n%s", want)
	}
}
