package starconf

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

func TestRenameLoadAttr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"step.load(\"x\")", "step.LOAD(\"x\")"},
		{"during = step.load.main", "during = step.LOAD.main"},
		{"x = 'step.load' # a.load\n", "x = 'step.load' # a.load\n"},
		{"s = \"\"\"\n.load \\\"\"\" \"\"\"\ny.load", "s = \"\"\"\n.load \\\"\"\" \"\"\"\ny.LOAD"},
		{"x.loader + x.load_all", "x.loader + x.load_all"},
		{"load(\"lib.star\", \"f\")", "load(\"lib.star\", \"f\")"},
		{"a.load", "a.LOAD"},
		{"'unterminated .load", "'unterminated .load"},
	} {
		if got := string(renameLoadAttr([]byte(tc.in))); got != tc.want {
			t.Errorf("renameLoadAttr(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// eval runs a Starlark expression with the reference roots predeclared and
// evaluates its HCL form with vars.
func eval(t *testing.T, expr string, vars map[string]cty.Value) (string, cty.Value) {
	t.Helper()
	b := &builder{seen: map[string]hcl.Range{}, sources: map[string]*source{}}
	v, err := starlark.EvalOptions(&syntax.FileOptions{}, &starlark.Thread{}, "e.star", renameLoadAttr([]byte(expr)), b.predeclared())
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	e, err := converter{rng: hcl.Range{Filename: "e.star"}}.expr(v, "value")
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	val, diags := e.Value(&hcl.EvalContext{Variables: vars, Functions: map[string]function.Function{
		"upper": stdlib.UpperFunc, "format": stdlib.FormatFunc,
	}})
	if diags.HasErrors() {
		t.Fatalf("%s: %s", expr, diags.Error())
	}
	return v.String(), val
}

func TestReferencesBecomeHCL(t *testing.T) {
	vars := map[string]cty.Value{
		"service": cty.ObjectVal(map[string]cty.Value{"web": cty.ObjectVal(map[string]cty.Value{
			"url":   cty.StringVal("http://127.0.0.1:8080"),
			"ports": cty.ObjectVal(map[string]cty.Value{"http": cty.NumberIntVal(8080)}),
		})}),
		"matrix": cty.ObjectVal(map[string]cty.Value{"size": cty.StringVal("4KiB"), "n": cty.NumberIntVal(3)}),
		"step":   cty.ObjectVal(map[string]cty.Value{"load": cty.ObjectVal(map[string]cty.Value{"main": cty.StringVal("load.main")})}),
		"var":    cty.ObjectVal(map[string]cty.Value{"list": cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")})}),
	}
	for _, tc := range []struct {
		expr, str string
		want      cty.Value
	}{
		{`service.web.url`, `${service.web.url}`, cty.StringVal("http://127.0.0.1:8080")},
		{`service.web.ports["http"]`, `${service.web.ports["http"]}`, cty.NumberIntVal(8080)},
		{`var.list[1]`, `${var.list[1]}`, cty.StringVal("b")},
		{`service.web.url + "/x?size=" + matrix.size`, `${service.web.url}/x?size=${matrix.size}`, cty.StringVal("http://127.0.0.1:8080/x?size=4KiB")},
		{`"GET " + service.web.url`, `GET ${service.web.url}`, cty.StringVal("GET http://127.0.0.1:8080")},
		{`step.load.main`, `${step.load.main}`, cty.StringVal("load.main")},
		{`"n=${matrix.n * 2}"`, `"n=${matrix.n * 2}"`, cty.StringVal("n=6")},
		{`hcl("matrix.n > 2 ? \"big\" : \"small\"")`, `${matrix.n > 2 ? "big" : "small"}`, cty.StringVal("big")},
		// Formatting a reference makes a template: the same value.
		{`"/item/%s" % matrix.n`, `"/item/${matrix.n}"`, cty.StringVal("/item/3")},
		{`"{}-{}".format(matrix.size, service.web.url + "/")`, `"${matrix.size}-${service.web.url}/"`, cty.StringVal("4KiB-http://127.0.0.1:8080/")},
		{`str(matrix.n)`, `"${matrix.n}"`, cty.NumberIntVal(3)},
		{`fn.upper(matrix.size)`, `${upper(matrix.size)}`, cty.StringVal("4KIB")},
		{`fn.format("%s-%d", "n", matrix.n)`, `${format("%s-%d", "n", matrix.n)}`, cty.StringVal("n-3")},
		{`{"a": [1, 2.5, True, None], "b": matrix.size}`, `{"a": [1, 2.5, True, None], "b": ${matrix.size}}`,
			cty.ObjectVal(map[string]cty.Value{
				"a": cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.NumberFloatVal(2.5), cty.True, cty.NullVal(cty.DynamicPseudoType)}),
				"b": cty.StringVal("4KiB"),
			})},
		{`1 << 70`, `1180591620717411303424`, cty.MustParseNumberVal("1180591620717411303424")},
	} {
		str, got := eval(t, tc.expr, vars)
		if str != tc.str {
			t.Errorf("%s: String() = %s, want %s", tc.expr, str, tc.str)
		}
		if !got.RawEquals(tc.want) && !(got.Type() == tc.want.Type() && got.Equals(tc.want).True()) {
			t.Errorf("%s = %#v, want %#v", tc.expr, got, tc.want)
		}
	}
}

func TestBadValuesAreErrors(t *testing.T) {
	b := &builder{seen: map[string]hcl.Range{}, sources: map[string]*source{}}
	for _, tc := range []struct{ expr, want string }{
		{`len`, "a builtin_function_or_method cannot be used as a pipeline value"},
		{`{1: "a"}`, "keys must be strings"},
		{`"${unterminated"`, "invalid template"},
	} {
		v, err := starlark.EvalOptions(&syntax.FileOptions{}, &starlark.Thread{}, "e.star", tc.expr, b.predeclared())
		if err != nil {
			t.Fatal(err)
		}
		_, err = converter{}.expr(v, "value")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.expr, err, tc.want)
		}
	}
	for _, tc := range []struct{ expr, want string }{
		{`{matrix.size: 1}`, "unhashable"},
		{`(service.web.url + "/").x`, "has no .x field"},
		{`var("x")`, "var is not callable"},
		{`matrix.size * 2`, "unknown binary op"},
	} {
		_, err := starlark.EvalOptions(&syntax.FileOptions{}, &starlark.Thread{}, "e.star", tc.expr, b.predeclared())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.expr, err, tc.want)
		}
	}
}
