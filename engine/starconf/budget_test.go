package starconf_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/starconf"
)

// leakyAllocs build about 16 MiB each (with a 64 KiB string s, within a
// 1 MiB budget) through operations other than *, + and extend(): each must
// fail with the budget's error at its line, before it allocates.
var leakyAllocs = []string{
	`x = "".join([s] * 256)`,
	`x = "-".join([s for i in range(256)])`,
	`x = ("%s" * 256) % tuple([s] * 256)`,
	`x = "%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s%(a)s" % {"a": s}`,
	`x = "%9999999d" % 1`,
	"x = s\nfor i in range(8):\n    x = \"%s%s\" % (x, x)",
	"x = s\nfor i in range(8):\n    x %= ()\n    x = x.format() + x.format()",
	`x = ("{0}" * 256).format(s)`,
	`x = ("{v}" * 256).format(v = s)`,
	`x = "{:9999999}".format(1)`,
	`x = ("y" * 256).replace("y", s)`,
	`x = ("y" * 256).replace("", s)`,
	`x = s.split("x")`,
	`x = list(s.elems())`,
	`x = sorted(s.elems())`,
	`x = tuple(s.elems())`,
	`x = zip(s.elems(), s.elems())`,
	`x = enumerate(s.elems())`,
	`x = str([s] * 256)`,
	`x = repr([[s] * 16] * 16)`,
}

func TestAllocationBudgetCoversBuilders(t *testing.T) {
	for _, code := range leakyAllocs {
		src := "pipeline(\"p\")\ns = \"x\" * 65536\n" + code + "\n"
		fsys := fstest.MapFS{"main.star": {Data: []byte(src)}}
		_, diags := starconf.ParseContext(context.Background(), fsys, "main.star", "main.star", starconf.Options{MaxAlloc: 1 << 20})
		if len(diags) != 1 || diags[0].Summary != "Memory budget exceeded" {
			t.Errorf("%s: want one Memory budget exceeded, got %v", code, diags)
			continue
		}
		if l := diags[0].Subject.Start.Line; l < 3 {
			t.Errorf("%s: error at line %d, want the line of the operation", code, l)
		}
	}
}

// The checked builders still do what they did, within the budget.
func TestAllocationBudgetKeepsMeaning(t *testing.T) {
	src := `pipeline("p")
checks = [
    ",".join(["a", "b"]) == "a,b",
    "%s-%d" % ("a", 3) == "a-3",
    "%d" % 7 == "7",
    7 % 3 == 1,
    "{}/{x}".format(1, x = 2) == "1/2",
    "aXa".replace("X", "b") == "aba",
    "a,b".split(",") == ["a", "b"],
    list("ab".elems()) == ["a", "b"],
    sorted([3, 1, 2]) == [1, 2, 3],
    list(zip([1, 2], "ab".elems())) == [(1, "a"), (2, "b")],
    list(enumerate(["a"])) == [(0, "a")],
    dict(a = 1) == {"a": 1},
    str([1, "a"]) == '[1, "a"]',
    tuple([1]) == (1,),
    list(reversed([1, 2])) == [2, 1],
    len(set([1, 1, 2])) == 2,
]
if not all(checks):
    fail("checks: %s" % checks)
v = "x"
v %= ()
`
	fsys := fstest.MapFS{"main.star": {Data: []byte(src)}}
	_, diags := starconf.Parse(fsys, "main.star", "main.star")
	for _, d := range diags {
		if d.Severity == 0 || strings.Contains(d.Summary, "No steps") {
			continue
		}
		t.Errorf("%s: %s", d.Summary, d.Detail)
	}
}
