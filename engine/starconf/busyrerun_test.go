package starconf

import (
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/pipeline"
)

// TestBusyRerun: busy_rerun is on by default (pipeline.DefaultBusyRerun),
// and both front ends decode it alike.
func TestBusyRerun(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, c := range []struct {
		hcl, star string
		want      int
	}{
		{`pipeline "p" {}`, `pipeline("p")`, pipeline.DefaultBusyRerun},
		{`pipeline "p" { busy_rerun = 0 }`, `pipeline("p", busy_rerun = 0)`, 0},
		{`pipeline "p" { busy_rerun = 5 }`, `pipeline("p", busy_rerun = 5)`, 5},
	} {
		p, d := hclconf.ParseSource(fsys, "p.hcl", []byte(c.hcl))
		if d.HasErrors() {
			t.Fatalf("%s: %v", c.hcl, d)
		}
		if p.BusyRerun != c.want {
			t.Errorf("%s: BusyRerun %d, want %d", c.hcl, p.BusyRerun, c.want)
		}
		p, d = ParseSource(fsys, "p.star", []byte(c.star))
		if d.HasErrors() {
			t.Fatalf("%s: %v", c.star, d)
		}
		if p.BusyRerun != c.want {
			t.Errorf("%s: BusyRerun %d, want %d", c.star, p.BusyRerun, c.want)
		}
	}
	if _, d := ParseSource(fsys, "p.star", []byte(`pipeline("p", busy_rerun = 11)`)); !d.HasErrors() || d[0].Summary != "Invalid busy_rerun" {
		t.Errorf("busy_rerun = 11: %v, want Invalid busy_rerun", d)
	}
}

// TestBusyGiveUp: busy_give_up defaults to pipeline.DefaultBusyGiveUp, 0
// (strict) is kept, both front ends decode it alike, and a negative one is
// a located error.
func TestBusyGiveUp(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, c := range []struct {
		hcl, star string
		want      int
	}{
		{`pipeline "p" {}`, `pipeline("p")`, pipeline.DefaultBusyGiveUp},
		{`pipeline "p" { busy_give_up = 0 }`, `pipeline("p", busy_give_up = 0)`, 0},
		{`pipeline "p" { busy_give_up = 7 }`, `pipeline("p", busy_give_up = 7)`, 7},
	} {
		p, d := hclconf.ParseSource(fsys, "p.hcl", []byte(c.hcl))
		if d.HasErrors() {
			t.Fatalf("%s: %v", c.hcl, d)
		}
		if p.BusyGiveUp != c.want {
			t.Errorf("%s: BusyGiveUp %d, want %d", c.hcl, p.BusyGiveUp, c.want)
		}
		p, d = ParseSource(fsys, "p.star", []byte(c.star))
		if d.HasErrors() {
			t.Fatalf("%s: %v", c.star, d)
		}
		if p.BusyGiveUp != c.want {
			t.Errorf("%s: BusyGiveUp %d, want %d", c.star, p.BusyGiveUp, c.want)
		}
	}
	_, d := hclconf.ParseSource(fsys, "p.hcl", []byte("pipeline \"p\" {\n  busy_give_up = -1\n}"))
	if !d.HasErrors() || d[0].Summary != "Invalid busy_give_up" || d[0].Subject == nil || d[0].Subject.Start.Line != 2 {
		t.Errorf("busy_give_up = -1: %v, want Invalid busy_give_up at line 2", d)
	}
}

// TestClaimNameMayStartWithADigit: a claim is never referred to in an
// expression, so "1M-requests" is a name in both front ends; a name
// starting with a dash is a located error.
func TestClaimNameMayStartWithADigit(t *testing.T) {
	fsys := fstest.MapFS{}
	const body = `
matrix {
  size = ["6"]
}
step "load" "main" {
  target   = "http://127.0.0.1:1/"
  requests = 1
}
`
	for _, name := range []string{"1M-requests", "-x"} {
		src := `pipeline "p" {}` + body + `claim "` + name + `" {
  metric = "rps"
  cell   = { size = "6" }
  value  = "> 1"
}
`
		p, d := hclconf.ParseSource(fsys, "p.hcl", []byte(src))
		if name == "-x" {
			if !d.HasErrors() || d[0].Summary != "Invalid claim name" || d[0].Subject == nil {
				t.Errorf("claim %q: %v, want Invalid claim name, located", name, d)
			}
			continue
		}
		if d.HasErrors() || len(p.Claims) != 1 || p.Claims[0].Name != name {
			t.Errorf("claim %q: %v", name, d)
		}
	}
	if _, d := ParseSource(fsys, "p.star", []byte(`pipeline("p")
matrix(size = ["6"])
step.load("main", target = "http://127.0.0.1:1/", requests = 1)
claim("1M-requests", metric = "rps", cell = {"size": "6"}, value = "> 1")
`)); d.HasErrors() {
		t.Errorf("Starlark claim 1M-requests: %v", d)
	}
}
