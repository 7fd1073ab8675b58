package starconf_test

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/starconf"
)

// TestAdaptiveRepetitionsTwins: both front ends read adaptive repetitions
// (and the plain number) into the same model and plan, and reject the
// same mistakes.
func TestAdaptiveRepetitionsTwins(t *testing.T) {
	for _, tc := range []struct {
		hcl, star string
		want      *pipeline.Adaptive
		reps      int
		err       string
	}{
		{`repetitions = { min = 4, max = 30, precision = "3%", budget = "20m" }`,
			`repetitions = {"min": 4, "max": 30, "precision": "3%", "budget": "20m"}`,
			&pipeline.Adaptive{Min: 4, Max: 30, Precision: 0.03, Budget: 20 * time.Minute}, 4, ""},
		{`repetitions = { max = 10, precision = "5%" }`, `repetitions = {"max": 10, "precision": "5%"}`,
			&pipeline.Adaptive{Min: 3, Max: 10, Precision: 0.05}, 3, ""},
		{`repetitions = 5`, `repetitions = 5`, nil, 5, ""},
		{`repetitions = { max = 10 }`, `repetitions = {"max": 10}`, nil, 0, "Missing repetitions.precision"},
		{`repetitions = { max = 2, precision = "5%" }`, `repetitions = {"max": 2, "precision": "5%"}`, nil, 0, "below min"},
		{`repetitions = { max = 9, precision = "5%", mx = 1 }`, `repetitions = {"max": 9, "precision": "5%", "mx": 1}`, nil, 0, `Did you mean "max"?`},
		{"repetitions = { max = 9, precision = \"5%\" }\n  order = \"sequential\"", `repetitions = {"max": 9, "precision": "5%"}, order = "sequential"`, nil, 0, "need interleaved order"},
	} {
		h := "pipeline \"p\" {\n  " + tc.hcl + "\n}\nmatrix {\n  x = [1, 2]\n}\nstep \"load\" \"m\" {\n  target = \"http://127.0.0.1:1/\"\n}\n"
		s := "pipeline(\"p\", " + tc.star + ")\nmatrix(x = [1, 2])\nstep.load(\"m\", target = \"http://127.0.0.1:1/\")\n"
		fsys := fstest.MapFS{"p.hcl": {Data: []byte(h)}, "p.star": {Data: []byte(s)}}
		hp, hd := hclconf.Parse(fsys, "p.hcl", "p.hcl")
		sp, sd := starconf.Parse(fsys, "p.star", "p.star")
		if tc.err != "" {
			if !strings.Contains(hd.Error(), tc.err) || !strings.Contains(sd.Error(), tc.err) {
				t.Errorf("%s: errors\n  hcl:  %v\n  star: %v\nwant both to say %q", tc.hcl, hd, sd, tc.err)
			}
			continue
		}
		if hd.HasErrors() || sd.HasErrors() {
			t.Fatalf("%s: hcl %v, star %v", tc.hcl, hd, sd)
		}
		if diff := cmp.Diff(tc.want, hp.Adaptive); diff != "" || hp.Repetitions != tc.reps {
			t.Errorf("%s: hcl repetitions %d adaptive (-want +got):\n%s", tc.hcl, hp.Repetitions, diff)
		}
		if diff := cmp.Diff(hp.Adaptive, sp.Adaptive); diff != "" || sp.Repetitions != hp.Repetitions {
			t.Errorf("%s: star differs from hcl (-hcl +star):\n%s", tc.star, diff)
		}
		var out [2]string
		for i, p := range []*pipeline.Pipeline{hp, sp} {
			pl, d := plan.Build(p, plan.Inputs{})
			if d.HasErrors() {
				t.Fatal(d)
			}
			var b strings.Builder
			pl.WriteText(&b)
			out[i] = b.String()
		}
		if out[0] != out[1] {
			t.Errorf("plans differ:\n--- hcl\n%s\n--- star\n%s", out[0], out[1])
		}
		if tc.want != nil && !strings.Contains(out[0], "adaptive repetitions: ") {
			t.Errorf("plan does not show adaptive repetitions:\n%s", out[0])
		}
	}
}
