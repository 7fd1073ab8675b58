package main

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every flag of every command is in docs/cli.md, in that command's section
// ("### `benchflow NAME …`", up to the next heading): by its long form
// (--name) or, for the wrk-style flags the section lists by letter, its
// shorthand (-c). A flag added without its line in cli.md fails here.
func TestCLIDocsEveryFlag(t *testing.T) {
	src, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := cliSections(string(src))
	var missing []string
	for _, c := range rootCmd.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		text, ok := sections[c.Name()]
		if !ok {
			missing = append(missing, "benchflow "+c.Name()+": no section")
			continue
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" || documentsFlag(text, f) {
				return
			}
			missing = append(missing, "benchflow "+c.Name()+" --"+f.Name)
		})
	}
	persistent := sections[""] + strings.Join(mapValues(sections), "\n")
	rootCmd.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" && !documentsFlag(persistent, f) {
			missing = append(missing, "benchflow --"+f.Name)
		}
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("docs/cli.md does not mention:\n  %s", strings.Join(missing, "\n  "))
	}
}

var cliHeadingRE = regexp.MustCompile("^### `benchflow ([a-z-]+)")

// cliSections maps a command's name to the text of its section; "" holds
// what stands before the first command's section.
func cliSections(doc string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			if m := cliHeadingRE.FindStringSubmatch(line); m != nil {
				name = m[1]
			} else if name != "" {
				name = "-" + name // a later heading: not the command's section
			}
		}
		out[name] += line + "\n"
	}
	return out
}

func documentsFlag(text string, f *pflag.Flag) bool {
	if regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(text) {
		return true
	}
	return f.Shorthand != "" && regexp.MustCompile("`-"+regexp.QuoteMeta(f.Shorthand)+"[` =]").MatchString(text)
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
