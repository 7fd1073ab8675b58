package steps

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/benchflow/benchflow/engine/agent"
	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/pipeline"
)

// declaredValue is a value of a declared option that is not its default,
// as a step writes it.
func declaredValue(t *testing.T, d load.OptionDecl) string {
	t.Helper()
	switch d.Attr {
	case "keepalive":
		return "false"
	case "engine":
		return `"epoll"`
	case "protocol":
		return `"h2"`
	}
	switch d.Unit {
	case "count":
		return "7"
	case "duration":
		return `"3ms"`
	case "rate":
		return "2.5"
	case "bool":
		return "true"
	case "name", "file":
		return `"n.example"`
	case "list":
		return `["status==200"]`
	case "stages":
		return `["1s:100"]`
	}
	t.Fatalf("option %s: no test value for unit %q", d.Field, d.Unit)
	return ""
}

// TestEveryDeclaredOptionReachesTheAgent writes every declared option in a
// load step, decodes the step, sends its options the way the controller
// sends them to a remote agent (JSON in a StartRequest) and reads them
// back the way the agent does: each option must arrive with the value the
// step gave it. An option the wire forgets (a load.Options field tagged
// json:"-" without a reason to stay local) fails here,
// where a remote agent would silently run with the default.
func TestEveryDeclaredOptionReachesTheAgent(t *testing.T) {
	var src strings.Builder
	src.WriteString("target = \"http://127.0.0.1:1/\"\n")
	for _, d := range load.Declared {
		if d.Attr != "" {
			fmt.Fprintf(&src, "%s = %s\n", d.Attr, declaredValue(t, d))
		}
	}
	f, diags := hclparse.NewParser().ParseHCL([]byte(src.String()), "step.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var c LoadConfig
	if diags := gohcl.DecodeBody(f.Body, nil, &c); diags.HasErrors() {
		t.Fatalf("a step with every declared attribute does not decode: %s\n%s", diags, src.String())
	}
	opts, errs := loadSettings(pipeline.KindLoad, &c, nil, parseDurations(&c))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	b, err := json.Marshal(agent.StartRequest{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	var req agent.StartRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	got := req.Options
	var wire struct{ Options map[string]any }
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	sent := reflect.ValueOf(opts)
	arrived := reflect.ValueOf(got)
	for _, d := range load.Declared {
		v := sent.FieldByName(d.Field)
		if !v.IsValid() {
			t.Errorf("declared option %s is not a field of load.Options", d.Field)
			continue
		}
		if d.WireKey() == "" {
			// A local option (cacert: a file LoadOptions reads) never
			// travels; the controller refuses it for agents.
			if d.Local == "" {
				t.Errorf("option %s has no wire key and no reason to stay local", d.Field)
			}
			continue
		}
		if v.IsZero() {
			t.Errorf("option %s: the step attribute %q does not reach load.Options (loadSettings)", d.Field, d.Attr)
			continue
		}
		if _, ok := wire.Options[d.WireKey()]; !ok {
			t.Errorf("option %s: the agent wire has no key %q (the JSON tag of its load.Options field)", d.Field, d.WireKey())
		}
		if a := arrived.FieldByName(d.Field); !reflect.DeepEqual(a.Interface(), v.Interface()) {
			t.Errorf("option %s: sent %v, the agent gets %v (its load.Options JSON tag)", d.Field, v.Interface(), a.Interface())
		}
	}
	// Every key of the wire is a declared option (or the targets).
	declared := map[string]bool{"targets": true}
	for _, d := range load.Declared {
		declared[d.WireKey()] = true
	}
	for k := range wire.Options {
		if !declared[k] {
			t.Errorf("wire key %q is not declared in load.Declared", k)
		}
	}
}

// TestEveryOptionIsDeclared: every field of load.Options is declared in
// load.Declared, except what the front ends build rather than a user
// choosing one value; every declared attribute is in the step schema.
func TestEveryOptionIsDeclared(t *testing.T) {
	built := map[string]bool{"Targets": true, "Progress": true, "Requester": true, "OnResponse": true, "OnStart": true, "CACertPEM": true}
	declared := map[string]bool{}
	for _, d := range load.Declared {
		if declared[d.Field] {
			t.Errorf("option %s declared twice", d.Field)
		}
		declared[d.Field] = true
	}
	ot := reflect.TypeOf(load.Options{})
	for i := 0; i < ot.NumField(); i++ {
		if f := ot.Field(i); !declared[f.Name] && !built[f.Name] {
			t.Errorf("load.Options.%s is not declared in load.Declared (engine/load/optdecl.go)", f.Name)
		}
	}
	attrs := map[string]bool{}
	ct := reflect.TypeOf(LoadConfig{})
	for i := 0; i < ct.NumField(); i++ {
		attrs[strings.Split(ct.Field(i).Tag.Get("hcl"), ",")[0]] = true
	}
	for _, d := range load.Declared {
		if d.Attr != "" && !attrs[d.Attr] {
			t.Errorf("option %s: attribute %q is not in steps.LoadConfig", d.Field, d.Attr)
		}
	}
}
