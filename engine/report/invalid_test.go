package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/results"
)

// valueClaim is a value claim on metric of cell.
func valueClaim(name, metric, bound string, cell map[string]any) results.ClaimSpec {
	b, err := claims.ParseBound(bound, claims.MetricUnit(metric))
	if err != nil {
		panic(err)
	}
	return results.ClaimSpec{Name: name, Kind: claims.KindValue, Metric: metric, Step: "main",
		Cell: cell, Bound: bound, BoundOp: b.Op, BoundValue: b.Value}
}

// TestInvalidValuesNotJudged: a trials row holding NaN, ±Inf or a
// negative rate, latency, count or duration is left out of every figure;
// the claims reading its cell say "invalid" and name the trial, column and
// value instead of holding or failing; claims on other cells are judged;
// the report's warnings and text show it; compare does not judge the
// pair. A claim metric that is no measured column (a CPU share) is
// checked the same way, negative percentages excepted.
func TestInvalidValuesNotJudged(t *testing.T) {
	nat := map[string]any{"deploy": "nat", "log": "on"}
	host := map[string]any{"deploy": "host", "log": "on"}
	type edit struct {
		name, column, want string
		set                func(*results.TrialRow)
	}
	edits := []edit{
		{"NaN rps", "rps", "rps NaN", func(t *results.TrialRow) { t.RPS = math.NaN() }},
		{"+Inf rps", "rps", "rps +Inf", func(t *results.TrialRow) { t.RPS = math.Inf(1) }},
		{"-Inf p99", "latency_p99_us", "latency_p99_us -Inf", func(t *results.TrialRow) { t.LatencyP99US = math.Inf(-1) }},
		{"negative p99", "latency_p99_us", "latency_p99_us -2000 (negative)", func(t *results.TrialRow) { t.LatencyP99US = -2000 }},
		{"negative duration", "duration_s", "duration_s -1 (negative)", func(t *results.TrialRow) { t.DurationS = -1 }},
		{"negative requests", "requests", "requests -5 (negative)", func(t *results.TrialRow) { t.Requests = -5 }},
		{"NaN CPU share", "cpu_service_pct", "cpu_service_pct NaN", func(t *results.TrialRow) { t.CPUServicePct = math.NaN() }},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			run := claimRun(4, 0.5, natClaim("nat-half", "< 0.6"), valueClaim("nat-value", "rps", "> 1", nat),
				valueClaim("nat-cpu", "cpu_service_pct", ">= 0", nat), valueClaim("host-value", "rps", "> 1", host))
			for i := range run.Trials {
				run.Trials[i].CPUServicePct = 50
			}
			var bad string
			for i := range run.Trials {
				tr := &run.Trials[i]
				if tr.Params[0].Value == "nat" && tr.Params[1].Value == "on" && tr.Repetition == 2 {
					e.set(tr)
					bad = tr.TrialID
				}
			}
			outs := outcomes(t, run)
			readers := []string{"nat-half", "nat-value", "nat-cpu"}
			if e.column == "cpu_service_pct" {
				// The CPU share is read by the claim on it only.
				readers = []string{"nat-cpu"}
				if o := outs["nat-value"]; o.Outcome != claims.Holds {
					t.Errorf("nat-value: %s (%s), want holds: the CPU share is not its metric", o.Outcome, o.Detail)
				}
			}
			for _, name := range readers {
				o := outs[name]
				if o.Outcome != claims.Invalid || !strings.Contains(o.Detail, "trial "+bad) || !strings.Contains(o.Detail, e.want) {
					t.Errorf("%s: %s (%s), want invalid naming trial %s and %q", name, o.Outcome, o.Detail, bad, e.want)
				}
			}
			if o := outs["host-value"]; o.Outcome != claims.Holds {
				t.Errorf("host-value: %s (%s), want holds: its cell is valid", o.Outcome, o.Detail)
			}
			s, err := Summarize(run, Options{TopProcesses: -1})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := s.Write(&b, "text"); err != nil {
				t.Fatal(err)
			}
			for _, c := range s.Cells {
				if math.IsNaN(c.RPS.Value) || math.IsInf(c.RPS.Value, 0) || c.RPS.Value < 0 {
					t.Errorf("%s: req/s %v judged from the invalid row", c.Label(), c.RPS.Value)
				}
			}
			if e.column != "cpu_service_pct" && (!strings.Contains(b.String(), "invalid values") || !strings.Contains(b.String(), e.want)) {
				t.Errorf("the report does not show the invalid values:\n%s", b.String())
			}
			if !strings.Contains(b.String(), "invalid") {
				t.Errorf("the report does not show the invalid claim:\n%s", b.String())
			}
			if e.column == "cpu_service_pct" {
				return
			}
			// compare: the pair holding the row is not judged, the others are.
			a := claimRun(4, 0.5)
			a.Manifest.RunID = "20261201T190000Z-aaaa"
			c, err := Compare(a, run, CompareOptions{FailAbove: 0.05})
			if err != nil {
				t.Fatal(err)
			}
			judged := 0
			for _, p := range c.Pairs {
				inv := strings.HasPrefix(p.Label, "deploy=nat, log=on")
				if inv != (p.Verdict == VerdictInvalid) || inv != (p.LatencyVerdict == VerdictInvalid) || (inv && p.Regression) {
					t.Errorf("pair %s: verdicts %q / %q regression %v", p.Label, p.Verdict, p.LatencyVerdict, p.Regression)
				}
				if !inv {
					judged++
				}
			}
			if judged != 3 || !strings.Contains(strings.Join(c.Warnings, "\n"), e.want) {
				t.Errorf("%d pairs judged, want 3; warnings %q", judged, c.Warnings)
			}
			b.Reset()
			if err := c.Write(&b, "text"); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(line, "deploy=nat, log=on ") && (!strings.Contains(line, VerdictInvalid) || strings.Contains(line, "NaN") || strings.Contains(line, "Inf")) {
					t.Errorf("compare's row of the pair: %s", line)
				}
			}
		})
	}
	// A negative unattributed CPU share is measurement noise, not
	// invalid.
	run := claimRun(4, 0.5, valueClaim("unattributed", "cpu_unattributed_pct", "< 5", nat))
	for i := range run.Trials {
		run.Trials[i].CPUUnattributedPct = -0.5
	}
	if o := outcomes(t, run)["unattributed"]; o.Outcome == claims.Invalid {
		t.Errorf("a negative unattributed share: %s (%s)", o.Outcome, o.Detail)
	}
}
