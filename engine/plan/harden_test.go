package plan_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
)

// What the documentation promises about service attributes validates:
// service.<name>.ports.<port> for a declared port block, and expressions
// on a service's URL whose value is known only once it runs.
func TestServicePlaceholdersValidate(t *testing.T) {
	src := `
pipeline "p" {}
service "web" {
  command = ["true"]
  port "http" {}
}
step "check" "a" {
  url = substr(service.web.url, 0, 4) == "http" ? "${service.web.url}/" : "bad"
}
step "load" "b" {
  target   = "http://127.0.0.1:${service.web.ports.http}/"
  requests = 1
}
`
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if _, diags := plan.Build(p, plan.Inputs{}); diags.HasErrors() {
		t.Fatal(diags)
	}
}

func TestParseSizeRange(t *testing.T) {
	for _, s := range []string{"9999999999999999999999", "2TiB", "1e400"} {
		if n, err := plan.ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, n)
		}
	}
	if n, err := plan.ParseSize("1GiB"); err != nil || n != 1<<30 {
		t.Errorf("ParseSize(1GiB) = %d, %v", n, err)
	}
}

func TestTemplateNestingLimit(t *testing.T) {
	deep := strings.Repeat("${", 500) + "1" + strings.Repeat("}", 500)
	_, err := plan.RenderTemplate("deep.tmpl", deep, nil, plan.Functions(nil))
	if err == nil || !strings.Contains(err.Error(), "deep.tmpl:1,") || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Fatalf("err = %v, want a located nesting error", err)
	}
}
