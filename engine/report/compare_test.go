package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
)

// twoCellSpec is a small run whose cells have the given mean req/s.
func twoCellSpec(id string, seed uint64, reps int, noise float64, rps ...float64) runSpec {
	spec := runSpec{id: id, reps: reps, seed: seed, fingerprint: "fp-a", seconds: 3, samples: 100}
	logs := []string{"on", "off"}
	for i, r := range rps {
		spec.cells = append(spec.cells, cellSpec{deploy: "bare", log: logs[i], rps: r, noise: noise, medianUS: 200})
	}
	return spec
}

func TestCompareGolden(t *testing.T) {
	dir := t.TempDir()
	// A: both cells at 10,000 req/s. B: "on" unchanged (same distribution,
	// another sample), "off" 10% faster; 1% noise, 5 repetitions.
	a := writeSynthRun(t, dir, twoCellSpec("20261130T044500Z-aaaa", 1, 5, 0.01, 10000, 10000))
	b := writeSynthRun(t, dir, twoCellSpec("20261130T050000Z-bbbb", 2, 5, 0.01, 10000, 11000))
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pairs) != 2 {
		t.Fatalf("%d pairs", len(c.Pairs))
	}
	if v := c.Pairs[0].Verdict; v != VerdictNoDifference {
		t.Errorf("equal distributions: verdict %q, want %q (ratio %+v)", v, VerdictNoDifference, c.Pairs[0].RPSRatio)
	}
	if v := c.Pairs[1].Verdict; v != VerdictFaster {
		t.Errorf("10%% shift: verdict %q, want %q (ratio %+v)", v, VerdictFaster, c.Pairs[1].RPSRatio)
	}
	if r := c.Pairs[1].RPSRatio; !(r.Low < 1.1 && 1.1 < r.High) {
		t.Errorf("10%% shift: CI %+v does not contain 1.1", r)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings on the same environment: %v", c.Warnings)
	}
	for _, f := range []string{"text", "markdown", "json", "csv"} {
		var buf bytes.Buffer
		if err := c.Write(&buf, f); err != nil {
			t.Fatal(err)
		}
		golden(t, "compare."+f+".golden", buf.Bytes())
	}

	// Reversed, with a threshold: B→A is 10% slower, a regression above 5%
	// but not above 20%.
	r, err := Compare(b, a, CompareOptions{FailAbove: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pairs[1].Verdict != VerdictSlower || !r.Failed() || len(r.Regressions) != 1 || r.Pairs[0].Regression {
		t.Errorf("reversed: verdict %q failed %v regressions %v", r.Pairs[1].Verdict, r.Failed(), r.Regressions)
	}
	if r, _ := Compare(b, a, CompareOptions{FailAbove: 0.20}); r.Failed() {
		t.Errorf("10%% drop flagged above a 20%% threshold: %v", r.Regressions)
	}
}

func TestCompareEnvironmentAndCells(t *testing.T) {
	dir := t.TempDir()
	a := writeSynthRun(t, dir, twoCellSpec("20261130T044500Z-cccc", 3, 1, 0.01, 10000, 10000))
	spec := twoCellSpec("20261130T050000Z-dddd", 4, 1, 0.01, 10000)
	spec.fingerprint = "fp-other"
	b := writeSynthRun(t, dir, spec)
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "different environments") {
		t.Errorf("warnings = %v", c.Warnings)
	}
	if len(c.Pairs) != 1 || len(c.OnlyA) != 1 || c.OnlyA[0] != "deploy=bare, access_log=off" {
		t.Errorf("pairs %d, only in A %v", len(c.Pairs), c.OnlyA)
	}
	// One repetition each: judged on intervals (3 per run here).
	if p := c.Pairs[0]; p.Basis != "intervals" || p.Verdict == "" {
		t.Errorf("single repetition: basis %q verdict %q", p.Basis, p.Verdict)
	}
	var buf bytes.Buffer
	c.Write(&buf, "text")
	if !strings.Contains(buf.String(), "warning: the runs come from different environments") || !strings.Contains(buf.String(), "only in A: deploy=bare, access_log=off") {
		t.Errorf("text output lacks the warning or the unmatched cell:\n%s", buf.String())
	}
	if _, err := Compare(a, b, CompareOptions{FailAbove: -1}); err == nil {
		t.Error("negative threshold accepted")
	}
}

// TestVerdictCalibration checks the verdict's error rates on many samples
// drawn from known distributions: equal means rarely give a verdict, a 10%
// shift with 1% noise always does.
func TestVerdictCalibration(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	draw := func(n int, mean, sd float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = mean + sd*rng.NormFloat64()
		}
		return xs
	}
	const runs = 300
	falsePos, misses := 0, 0
	for i := 0; i < runs; i++ {
		if verdict(stats.WelchRatio(draw(5, 1000, 10), draw(5, 1000, 10)), false) != VerdictNoDifference {
			falsePos++
		}
		if verdict(stats.WelchRatio(draw(5, 1100, 11), draw(5, 1000, 10)), false) != VerdictFaster {
			misses++
		}
	}
	// The nominal rate is 5%; allow for sampling error over 300 runs.
	if rate := float64(falsePos) / runs; rate > 0.09 {
		t.Errorf("false positive rate %.3f with equal distributions", rate)
	}
	if misses != 0 {
		t.Errorf("a 10%% shift with 1%% noise was missed %d times in %d", misses, runs)
	}
	t.Logf("false positives %d/%d, misses %d/%d", falsePos, runs, misses, runs)
}

// TestCompareListsEnvironment: compare names each environment field that
// differs, A → B, the stack versions the providers reported among them
// (a Nomad client upgraded between the runs shows although the
// fingerprint, which covers the machine, does not move), and lists none
// when the environments agree.
func TestCompareListsEnvironment(t *testing.T) {
	dir := t.TempDir()
	a := writeSynthRun(t, dir, twoCellSpec("20261130T044500Z-eeee", 5, 3, 0.01, 10000, 10000))
	b := writeSynthRun(t, dir, twoCellSpec("20261130T050000Z-ffff", 6, 3, 0.01, 10000, 10000))
	same, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(same.Environment) != 0 {
		t.Errorf("same environment: %+v", same.Environment)
	}
	stack := func(r *results.Run, client string) {
		for i := range r.Manifest.Trials {
			r.Manifest.Trials[i].Services = []results.ServiceEntry{{Name: "web", Type: "nomad",
				Versions: map[string]string{"nomad_client": client, "apisix": "3.9.1"}}}
		}
	}
	stack(a, "1.6.5")
	stack(b, "1.7.0")
	if b.Manifest.Environment == nil {
		b.Manifest.Environment = map[string]any{}
	}
	b.Manifest.Environment["kernel_release"] = "6.99.0-test"
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, e := range c.Environment {
		fields = append(fields, e.Field+"="+e.A+"→"+e.B)
	}
	kernelA := "(absent)"
	if v, ok := a.Manifest.Environment["kernel_release"]; ok {
		kernelA = fmt.Sprint(v)
	}
	want := []string{"kernel_release=" + kernelA + "→6.99.0-test", "services.nomad.nomad_client=1.6.5→1.7.0"}
	if strings.Join(fields, "|") != strings.Join(want, "|") {
		t.Errorf("environment = %v, want %v (kernel before versions)", fields, want)
	}
	var text, js bytes.Buffer
	if err := c.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "environment: services.nomad.nomad_client: 1.6.5 → 1.7.0\n") {
		t.Errorf("text lacks the nomad_client line:\n%s", text.String())
	}
	if err := c.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Environment []EnvironmentChange `json:"environment"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded.Environment) != 2 ||
		decoded.Environment[1] != (EnvironmentChange{Field: "services.nomad.nomad_client", A: "1.6.5", B: "1.7.0"}) {
		t.Errorf("json environment = %+v, %v:\n%s", decoded.Environment, err, js.String())
	}
}

// TestReproducedTooNoisy: a pair whose req/s ratio interval is wider than
// ×/÷TooNoisyFactor is "too noisy", not "yes" (the runs could not tell a
// large difference from none), and the table and summary say so with the
// width and what would help; a significant difference stays "no" however
// wide its interval, and a precise agreement stays "yes".
func TestReproducedTooNoisy(t *testing.T) {
	dir := t.TempDir()
	// "on": equal means, 25% noise, 3 repetitions a side: a wide interval
	// around 1. "off": B ten times faster, same noise.
	a := writeSynthRun(t, dir, twoCellSpec("20261130T044500Z-nnn1", 11, 3, 0.25, 10000, 10000))
	b := writeSynthRun(t, dir, twoCellSpec("20261130T050000Z-nnn2", 12, 3, 0.25, 10000, 100000))
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noisy, shifted := c.Pairs[0], c.Pairs[1]
	if w := math.Exp(noisy.RPSRatio.HalfWidth()); !(w > TooNoisyFactor) || noisy.Verdict != VerdictNoDifference {
		t.Fatalf("the fixture should give a wide no-difference interval: ×/÷%.3f, %q", w, noisy.Verdict)
	}
	if noisy.Reproduced != ReproducedTooNoisy {
		t.Errorf("a ×/÷%.2f interval: reproduced %q, want %q", math.Exp(noisy.RPSRatio.HalfWidth()), noisy.Reproduced, ReproducedTooNoisy)
	}
	if shifted.Verdict != VerdictFaster || shifted.Reproduced != "no" {
		t.Errorf("×10 with the same noise: verdict %q reproduced %q, want faster, no", shifted.Verdict, shifted.Reproduced)
	}
	if c.TooNoisy != 1 || c.ReproJudged != 1 || c.ReproducedN != 0 {
		t.Errorf("too noisy %d, judged %d, reproduced %d; want 1, 1, 0", c.TooNoisy, c.ReproJudged, c.ReproducedN)
	}
	var buf bytes.Buffer
	if err := c.Write(&buf, "text"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("not judged: too noisy (×/÷%.3f)", math.Exp(noisy.RPSRatio.HalfWidth())),
		"reproduced: 0 of 1 cells",
		"not judged, too noisy: 1 cell(s) have a req/s ratio interval wider than ×/÷1.5",
		"more repetitions (--repetitions) or a quieter machine",
	} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("compare lacks %q:\n%s", s, buf.String())
		}
	}

	// The same study with 1% noise agrees within a narrow interval: yes.
	qa := writeSynthRun(t, dir, twoCellSpec("20261130T044500Z-qqq1", 11, 3, 0.01, 10000, 10000))
	qb := writeSynthRun(t, dir, twoCellSpec("20261130T050000Z-qqq2", 12, 3, 0.01, 10000, 10000))
	q, err := Compare(qa, qb, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range q.Pairs {
		if p.Reproduced != "yes" {
			t.Errorf("%s with 1%% noise: reproduced %q (ratio %+v), want yes", p.Label, p.Reproduced, p.RPSRatio)
		}
	}
	if q.TooNoisy != 0 {
		t.Errorf("1%% noise: %d pairs too noisy", q.TooNoisy)
	}
}
