package report

import (
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

// TestCompareWithItselfWarns: a run compared with itself reproduces every
// cell by construction, and compare says so.
func TestCompareWithItselfWarns(t *testing.T) {
	a := writeSynthRun(t, t.TempDir(), twoCellSpec("20261130T044500Z-aaaa", 1, 3, 0.01, 10000, 10000))
	c, err := Compare(a, a, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "A and B are the same run") {
		t.Errorf("warnings %q: want one saying A and B are the same run", c.Warnings)
	}
}

// TestSamePipelineComparesPlans: equal plan digests are the same study
// whatever the source bytes; without digests the sources decide.
func TestSamePipelineComparesPlans(t *testing.T) {
	hcl := results.PipelineInfo{SHA256: "aa", PlanSHA256: "pp", Format: "hcl"}
	star := results.PipelineInfo{SHA256: "bb", PlanSHA256: "pp", Format: "star"}
	other := results.PipelineInfo{SHA256: "aa", PlanSHA256: "qq"}
	old := results.PipelineInfo{SHA256: "aa"}
	if !samePipeline(hcl, star) || samePipeline(hcl, other) || !samePipeline(old, hcl) || samePipeline(old, star) {
		t.Error("samePipeline: want twins the same, another plan different, and the source sha256 without a plan digest")
	}
}

// TestCompareNamesTheVariables: the quickstart's reproduction ran with
// duration 1s where the bundle ran 3s; compare names that difference the
// way reproduce does instead of saying only that the pipelines differ.
func TestCompareNamesTheVariables(t *testing.T) {
	a, err := results.ReadRun("../../examples/quickstart/bundle")
	if err != nil {
		t.Fatal(err)
	}
	b, err := results.ReadRun("../../examples/quickstart/reproduced")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := c.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if want := "the runs' variables differ: duration 3s → 1s, so a difference may be intended"; !strings.Contains(text.String(), want) {
		t.Errorf("compare lacks %q:\n%s", want, text.String())
	}
	if strings.Contains(text.String(), "pipelines differ") {
		t.Errorf("compare says the pipelines differ:\n%s", text.String())
	}
	if len(c.Variables) != 1 || c.Variables[0].String() != "duration 3s → 1s" {
		t.Errorf("variables %+v", c.Variables)
	}
}
