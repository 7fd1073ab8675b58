package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
)

// claimRun is a run in memory: deploy {host, nat} × log {on, off}, reps
// rounds. Round r shares a machine factor across cells (drift), nat
// delivers natShare of host's req/s, each cell with its own small jitter.
func claimRun(reps int, natShare float64, claims ...results.ClaimSpec) *results.Run {
	m := &results.Manifest{RunID: "20261201T200000Z-clms", Status: results.RunOK, Axes: []string{"deploy", "log"},
		Matrix: map[string]any{"deploy": []any{"host", "nat"}, "log": []any{"on", "off"}}, Claims: claims}
	m.Pipeline.Name = "claims"
	run := &results.Run{Manifest: m, Axes: []string{"deploy", "log"}}
	drift := []float64{1, 0.7, 1.2, 0.9, 1.1, 0.8}
	jitter := []float64{0.01, -0.02, 0.015, -0.005, 0.02, -0.01, 0.0, 0.01}
	i := 0
	for r := 1; r <= reps; r++ {
		for _, d := range []string{"host", "nat"} {
			for _, l := range []string{"on", "off"} {
				rps := 1000 * drift[(r-1)%len(drift)] * (1 + jitter[i%len(jitter)])
				verdict := "server-bound"
				if d == "nat" {
					rps *= natShare
					verdict = "infrastructure-bound"
				}
				if l == "off" {
					rps *= 1.5
				}
				id := fmt.Sprintf("t%02d", i)
				m.Trials = append(m.Trials, results.TrialEntry{TrialID: id, Repetition: r, Status: results.StatusOK})
				run.Trials = append(run.Trials, results.TrialRow{RunID: m.RunID, TrialID: id, Repetition: int64(r), Step: "main", StepKind: "load",
					Params: []results.Param{{Name: "deploy", Value: d}, {Name: "log", Value: l}}, Status: results.StatusOK,
					RPS: rps, Requests: int64(rps), DurationS: 1, LatencyP99US: 2000 / drift[(r-1)%len(drift)], Verdict: verdict})
				i++
			}
		}
	}
	return run
}

func natClaim(name, bound string) results.ClaimSpec {
	b, err := claims.ParseBound(bound, "")
	if err != nil {
		panic(err)
	}
	return results.ClaimSpec{Name: name, Kind: claims.KindRatio, Metric: "rps", Step: "main",
		Cell: map[string]any{"deploy": "nat"}, Versus: map[string]any{"deploy": "host"}, Bound: bound, BoundOp: b.Op, BoundValue: b.Value}
}

func outcomes(t *testing.T, run *results.Run) map[string]ClaimOutcome {
	t.Helper()
	outs, err := EvaluateClaims(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != len(run.Manifest.Claims) {
		t.Fatalf("%d outcomes for %d claims", len(outs), len(run.Manifest.Claims))
	}
	m := map[string]ClaimOutcome{}
	for _, o := range outs {
		m[o.Name] = o
	}
	return m
}

func TestClaimRatioOutcomes(t *testing.T) {
	p99, _ := claims.ParseBound("< 10ms", claims.UnitLatency)
	run := claimRun(4, 0.5,
		natClaim("holds", "< 0.6"),
		natClaim("fails", "> 0.6"),
		natClaim("straddles", "< 0.5"),
		results.ClaimSpec{Name: "p99", Kind: claims.KindValue, Metric: "latency_p99_us", Step: "main",
			Cell: map[string]any{"deploy": "host", "log": "off"}, Bound: "< 10ms", BoundOp: p99.Op, BoundValue: p99.Value},
		results.ClaimSpec{Name: "proxy", Kind: claims.KindVerdict, Step: "main", Cell: map[string]any{"deploy": "nat"}, Verdict: "infrastructure-bound"},
		results.ClaimSpec{Name: "not-proxy", Kind: claims.KindVerdict, Step: "main", Cell: map[string]any{"deploy": "host"}, Verdict: "infrastructure-bound"},
	)
	got := outcomes(t, run)
	want := map[string]string{"holds": claims.Holds, "fails": claims.Fails, "straddles": claims.Inconclusive, "p99": claims.Holds,
		"proxy": claims.Holds, "not-proxy": claims.Fails}
	for name, w := range want {
		if got[name].Outcome != w {
			t.Errorf("claim %s: %s (%s), want %s", name, got[name].Outcome, got[name].Detail, w)
		}
	}

	// The ratio is the paired one of the report: per round, the geometric
	// mean over log on/off of nat over that of host; the round factor
	// (drift: ±30%) cancels, so the interval is narrow.
	var num, den []float64
	for r := 1; r <= 4; r++ {
		var n, d []float64
		for _, tr := range run.Trials {
			if int(tr.Repetition) != r {
				continue
			}
			if tr.Param("deploy") == "nat" {
				n = append(n, tr.RPS)
			} else {
				d = append(d, tr.RPS)
			}
		}
		num = append(num, math.Sqrt(n[0]*n[1]))
		den = append(den, math.Sqrt(d[0]*d[1]))
	}
	iv := stats.PairedRatio(num, den)
	h := got["holds"]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(h.Estimate, iv.Value) || !near(h.Low, iv.Low) || !near(h.High, iv.High) || h.Method != stats.MethodPairedLogT || h.N != 4 {
		t.Errorf("holds: %v [%v, %v] %s n=%d, want the paired ratio %v [%v, %v]", h.Estimate, h.Low, h.High, h.Method, h.N, iv.Value, iv.Low, iv.High)
	}
	if h.High/h.Low > 1.1 {
		t.Errorf("paired interval [%v, %v] is wide: the round factor did not cancel", h.Low, h.High)
	}
	if h.Cell != "deploy=nat" || h.Versus != "deploy=host" || h.Bound != "< 0.6" {
		t.Errorf("holds: cell %q versus %q bound %q", h.Cell, h.Versus, h.Bound)
	}

	s := got["straddles"]
	if s.MoreRepetitions <= 0 || !strings.Contains(s.Detail, "straddles the bound") || !strings.Contains(s.Detail, "more repetition") {
		t.Errorf("inconclusive claim: more=%d, detail %q", s.MoreRepetitions, s.Detail)
	}
	if got["proxy"].Estimate != 1 || got["proxy"].N != 8 {
		t.Errorf("verdict claim: estimate %v of %d, want 1 of 8", got["proxy"].Estimate, got["proxy"].N)
	}
}

func TestClaimWithoutInterval(t *testing.T) {
	got := outcomes(t, claimRun(2, 0.5, natClaim("two-rounds", "< 0.6")))["two-rounds"]
	if got.Outcome != claims.Inconclusive || got.MoreRepetitions != 1 || !strings.Contains(got.Detail, "no 95% interval") {
		t.Errorf("2 rounds: %s, more %d, %q; want inconclusive, 1 more, no interval", got.Outcome, got.MoreRepetitions, got.Detail)
	}
}

func TestClaimFormats(t *testing.T) {
	run := claimRun(3, 0.5, natClaim("nat-costs-half", "< 0.6"), natClaim("nat-is-free", "> 0.95"))
	s, err := Summarize(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, md, csvb, js, page bytes.Buffer
	for f, b := range map[string]*bytes.Buffer{"text": &text, "markdown": &md, "csv": &csvb, "json": &js} {
		if err := s.Write(b, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claims: 1 holds, 1 fails", "nat-costs-half", "holds", "rps deploy=nat / deploy=host", "< 0.6"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "**Claims: 1 holds, 1 fails**") || !strings.Contains(md.String(), "| nat-is-free | fails |") {
		t.Errorf("markdown lacks the claims table:\n%s", md.String())
	}
	recs, err := csv.NewReader(&csvb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, h := range recs[0] {
		if h == "claims" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("csv has no claims column: %v", recs[0])
	}
	byCell := map[string]string{}
	for _, r := range recs[1:] {
		byCell[r[0]+"/"+r[1]] = r[col]
	}
	if byCell["nat/on"] != "nat-costs-half=holds;nat-is-free=fails" || byCell["host/off"] != "nat-costs-half=holds;nat-is-free=fails" {
		t.Errorf("csv claims column: %v", byCell)
	}
	var doc struct {
		Claims []map[string]any `json:"claims"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Claims) != 2 || doc.Claims[0]["outcome"] != "holds" || doc.Claims[0]["ci_low"] == nil || doc.Claims[1]["outcome"] != "fails" {
		t.Errorf("json claims: %v", doc.Claims)
	}
	h := page.String()
	chart, table := strings.Index(h, `id="chart-rps"`), strings.Index(h, `data-chart="rps"`)
	next := strings.Index(h, `id="chart-latency"`)
	if chart < 0 || table < chart || (next >= 0 && table > next) {
		t.Errorf("HTML: the rps claims are not next to the rps chart (chart at %d, claims at %d, next chart at %d)", chart, table, next)
	}
	if !strings.Contains(h, `id="claim-nat-is-free"`) || !strings.Contains(h, `class="p fails"`) {
		t.Error("HTML lacks the claim rows with their outcome")
	}
}

func TestClaimJSONWithoutInterval(t *testing.T) {
	o := ClaimOutcome{Name: "x", Outcome: claims.Inconclusive, Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"estimate":null`) || !strings.Contains(string(b), `"ci_low":null`) {
		t.Errorf("NaN bounds are not null: %s", b)
	}
}

func TestClaimsParquetRoundTrip(t *testing.T) {
	run := claimRun(3, 0.5, natClaim("nat-costs-half", "< 0.6"))
	outs, err := EvaluateClaims(run)
	if err != nil {
		t.Fatal(err)
	}
	run.Dir, run.Format = t.TempDir(), results.FormatParquet
	if _, ok, err := RecordedClaims(run); ok || err != nil {
		t.Fatalf("no claims.parquet yet: ok %v, %v", ok, err)
	}
	if err := results.WriteClaims(run.Dir, run.Format, ClaimRows(run.Manifest.RunID, run.Manifest.Claims, outs)); err != nil {
		t.Fatal(err)
	}
	back, ok, err := RecordedClaims(run)
	if err != nil || !ok {
		t.Fatalf("reading claims.parquet: ok %v, %v", ok, err)
	}
	if diff := cmp.Diff(outs, back, cmp.AllowUnexported(ClaimOutcome{}), cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".cells"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("claims.parquet differs from the evaluation (-evaluated +read):\n%s", diff)
	}
}

// TestClaimNamesMatch keeps the front ends' lists equal to what the
// report can judge: every metric has a reader, every verdict is one the
// collect step gives.
func TestClaimNamesMatch(t *testing.T) {
	for _, m := range claims.Metrics {
		// The report reads p99.99 from the histograms (Summary.p9999);
		// every other metric is a numeric trials column, or a CPU time per
		// request of numeric columns.
		if m.FromHistograms() {
			if m.Name != "latency_p9999_us" {
				t.Errorf("claim metric %s is read from the histograms, which the report does only for latency_p9999_us", m.Name)
			}
			continue
		}
		if metricReader(m.Name) == nil {
			t.Errorf("claim metric %s has no reader: no numeric trials column of that name", m.Name)
		}
		for _, c := range m.PerRequest {
			if results.TrialNumber(c) == nil {
				t.Errorf("claim metric %s: %s is not a numeric trials column", m.Name, c)
			}
		}
	}
	verdicts := []string{collect.VerdictServer, collect.VerdictInfra, collect.VerdictLoader, collect.VerdictNotCPU, collect.VerdictNoisy, collect.VerdictUnclear}
	if diff := cmp.Diff(verdicts, claims.Verdicts); diff != "" {
		t.Errorf("claim verdicts differ from engine/collect's (-collect +pipeline):\n%s", diff)
	}
}

// tailRun is claimRun with, in every trial, p50 = p99 / tail (with a
// little jitter per trial) and a latency histogram whose p99.99 is 20 ms
// (20 of 100,000 requests; the others at 1 ms).
func tailRun(tail float64, claims ...results.ClaimSpec) *results.Run {
	run := claimRun(4, 0.5, claims...)
	jitter := []float64{0.03, -0.02, 0.01, -0.03, 0.02}
	for i := range run.Trials {
		t := &run.Trials[i]
		t.LatencyP50US = t.LatencyP99US / (tail * (1 + jitter[i%len(jitter)]))
		run.Latency = append(run.Latency,
			results.LatencyRow{RunID: t.RunID, TrialID: t.TrialID, Step: t.Step, LowerUS: 990, UpperUS: 1010, Count: 99980},
			results.LatencyRow{RunID: t.RunID, TrialID: t.TrialID, Step: t.Step, LowerUS: 19900, UpperUS: 20100, Count: 20})
	}
	return run
}

func metricClaim(name, metric, versusMetric, bound string, cell map[string]any) results.ClaimSpec {
	b, err := claims.ParseBound(bound, "")
	if err != nil {
		panic(err)
	}
	return results.ClaimSpec{Name: name, Kind: claims.KindRatio, Metric: metric, VersusMetric: versusMetric, Step: "main",
		Cell: cell, Bound: bound, BoundOp: b.Op, BoundValue: b.Value}
}

// TestClaimMetricRatio: a claim dividing two metrics of the same trials
// is judged on the per-trial ratios: the round's drift (±30%, shared by
// both metrics of a trial) cancels, and p99.99 comes from the histograms.
func TestClaimMetricRatio(t *testing.T) {
	nat := map[string]any{"deploy": "nat"}
	run := tailRun(4,
		metricClaim("tail-holds", "latency_p99_us", "latency_p50_us", "> 3", nat),
		metricClaim("tail-fails", "latency_p99_us", "latency_p50_us", "> 5", nil),
		metricClaim("tail-close", "latency_p99_us", "latency_p50_us", "< 4", nat),
		metricClaim("p9999", "latency_p9999_us", "latency_p50_us", "> 3", nil),
	)
	got := outcomes(t, run)
	want := map[string]string{"tail-holds": claims.Holds, "tail-fails": claims.Fails, "tail-close": claims.Inconclusive, "p9999": claims.Holds}
	for name, w := range want {
		if got[name].Outcome != w {
			t.Errorf("claim %s: %s (%s), want %s", name, got[name].Outcome, got[name].Detail, w)
		}
	}
	// The estimate is the per-round geometric mean over the selected
	// cells of each trial's p99/p50, with the log-t interval over rounds.
	var rounds []float64
	for r := 1; r <= 4; r++ {
		var rs []float64
		for _, tr := range run.Trials {
			if int(tr.Repetition) == r && tr.Param("deploy") == "nat" {
				rs = append(rs, tr.LatencyP99US/tr.LatencyP50US)
			}
		}
		rounds = append(rounds, math.Sqrt(rs[0]*rs[1]))
	}
	iv := stats.PositiveCI(rounds)
	h := got["tail-holds"]
	if math.Abs(h.Estimate-iv.Value) > 1e-9 || math.Abs(h.Low-iv.Low) > 1e-9 || math.Abs(h.High-iv.High) > 1e-9 || h.Method != stats.MethodPairedLogT || h.N != 4 {
		t.Errorf("tail-holds: %v [%v, %v] %s n=%d, want %v [%v, %v] paired log-t n=4", h.Estimate, h.Low, h.High, h.Method, h.N, iv.Value, iv.Low, iv.High)
	}
	if h.High/h.Low > 1.2 {
		t.Errorf("tail-holds: interval [%v, %v] is wide: the round's drift did not cancel", h.Low, h.High)
	}
	if p := got["p9999"]; p.Estimate < 20 {
		t.Errorf("p9999: estimate %v, want 40×drift (p99.99 of the histograms, 20 ms, over the trials p50, 0.5 ms/drift)", p.Estimate)
	}
	if h.VersusMetric != "latency_p50_us" || h.Versus != "" || !strings.Contains(h.row()[2], "latency_p99_us / latency_p50_us deploy=nat") {
		t.Errorf("tail-holds reads as %q (versus_metric %q)", h.row()[2], h.VersusMetric)
	}

	// A trial with no p50 leaves its round out, and says so.
	run.Trials[0].LatencyP50US = 0
	got = outcomes(t, run)
	if o := got["tail-fails"]; o.N != 3 || !strings.Contains(o.Detail, "1 round(s) left out") {
		t.Errorf("tail-fails without one p50: n=%d, %s", o.N, o.Detail)
	}
}

// TestClaimMetricRatioFormats: every report format and claims.parquet
// carry the second metric.
func TestClaimMetricRatioFormats(t *testing.T) {
	run := tailRun(4, metricClaim("tail", "latency_p99_us", "latency_p50_us", "> 3", map[string]any{"deploy": "nat"}))
	s, err := Summarize(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, md, csvb, js, page bytes.Buffer
	for f, b := range map[string]*bytes.Buffer{"text": &text, "markdown": &md, "csv": &csvb, "json": &js} {
		if err := s.Write(b, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteHTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String(), "html": page.String()} {
		if !strings.Contains(out, "latency_p99_us / latency_p50_us deploy=nat") {
			t.Errorf("%s report lacks the claim's two metrics:\n%s", name, out)
		}
	}
	if !strings.Contains(csvb.String(), "tail=holds") {
		t.Errorf("csv lacks the claim on its cells:\n%s", csvb.String())
	}
	var doc struct {
		Claims []map[string]any `json:"claims"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Claims) != 1 || doc.Claims[0]["versus_metric"] != "latency_p50_us" || doc.Claims[0]["outcome"] != "holds" {
		t.Errorf("json claims: %v", doc.Claims)
	}
	h := page.String()
	if chart, table := strings.Index(h, `id="chart-latency"`), strings.Index(h, `id="claim-tail"`); chart < 0 || table < chart {
		t.Errorf("HTML: the latency claim is not next to the latency chart (chart at %d, claim at %d)", chart, table)
	}
	run.Dir, run.Format = t.TempDir(), results.FormatParquet
	if err := results.WriteClaims(run.Dir, run.Format, ClaimRows(run.Manifest.RunID, run.Manifest.Claims, s.Claims)); err != nil {
		t.Fatal(err)
	}
	back, ok, err := RecordedClaims(run)
	if err != nil || !ok || len(back) != 1 || back[0].VersusMetric != "latency_p50_us" || back[0].Outcome != claims.Holds {
		t.Fatalf("claims.parquet: %+v, ok %v, %v", back, ok, err)
	}
}

// TestClaimCPUPerRequest: the CPU µs per request of the service, the
// infrastructure, the loader and their sum are claim metrics, judged like
// any other: a ratio of cells (nat costs the service more per request
// than host), a ratio of two metrics of one trial (the proxy costs more
// than the server), and a value. Each trial's shares are its req/s times
// a per-request cost, so the round's drift cancels in the per-request
// figures.
func TestClaimCPUPerRequest(t *testing.T) {
	nat := map[string]any{"deploy": "nat"}
	host := map[string]any{"deploy": "host"}
	service := metricClaim("nat-costs-the-server", "cpu_service_us_per_req", "", "> 1.2", nat)
	service.Versus = map[string]any{"deploy": "host"}
	stack, err := claims.ParseBound("< 40us/req", claims.MetricUnit("cpu_stack_us_per_req"))
	if err != nil || stack.Value != 40 {
		t.Fatalf("ParseBound(< 40us/req) = %v, %v; want 40", stack, err)
	}
	run := claimRun(4, 0.5,
		service,
		metricClaim("proxy-costs-more", "cpu_infra_us_per_req", "cpu_service_us_per_req", "> 1", nat),
		metricClaim("proxy-costs-less", "cpu_infra_us_per_req", "cpu_service_us_per_req", "< 1", nat),
		results.ClaimSpec{Name: "host-stack", Kind: claims.KindValue, Metric: "cpu_stack_us_per_req", Step: "main",
			Cell: host, Bound: stack.Text, BoundOp: stack.Op, BoundValue: stack.Value},
	)
	jitter := []float64{0.02, -0.01, 0.015, -0.02, 0.01}
	for i := range run.Trials {
		tr := &run.Trials[i]
		j := 1 + jitter[i%len(jitter)]
		// µs per request: host 20 service + 1 infra + 5 loader; nat 30 + 40 + 5.
		svc, infra := 20.0, 1.0
		if tr.Param("deploy") == "nat" {
			svc, infra = 30, 40
		}
		tr.CPUServicePct = tr.RPS * svc * j / 1e4
		tr.CPUInfraPct = tr.RPS * infra * j / 1e4
		tr.CPULoaderPct = tr.RPS * 5 / 1e4
	}
	got := outcomes(t, run)
	want := map[string]string{"nat-costs-the-server": claims.Holds, "proxy-costs-more": claims.Holds, "proxy-costs-less": claims.Fails, "host-stack": claims.Holds}
	for name, w := range want {
		if got[name].Outcome != w {
			t.Errorf("claim %s: %s (%s), want %s", name, got[name].Outcome, got[name].Detail, w)
		}
	}
	if e := got["nat-costs-the-server"].Estimate; math.Abs(e-1.5) > 0.05 {
		t.Errorf("nat-costs-the-server: estimate %v, want about 30/20 = 1.5", e)
	}
	if e := got["proxy-costs-more"].Estimate; math.Abs(e-40.0/30) > 0.01 {
		t.Errorf("proxy-costs-more: estimate %v, want 40/30", e)
	}
	h := got["host-stack"]
	if math.Abs(h.Estimate-26) > 1 {
		t.Errorf("host-stack: estimate %v µs/req, want about 20+1+5 = 26", h.Estimate)
	}
	if l := h.row()[3]; !strings.Contains(l, "µs/req") {
		t.Errorf("host-stack reads %q, want the estimate in µs/req", l)
	}
	// Without requests there is no CPU per request: the trial's round is
	// left out of a ratio of two metrics rather than counted as free.
	run.Trials[2].RPS = 0
	got = outcomes(t, run)
	if o := got["proxy-costs-more"]; o.N != 3 || !strings.Contains(o.Detail, "1 round(s) left out") {
		t.Errorf("proxy-costs-more without one trial's req/s: n=%d, %s", o.N, o.Detail)
	}
}

// TestClaimCountsNotJudged: a claim with no trial is counted as not
// judged, apart from the inconclusive ones.
func TestClaimCountsNotJudged(t *testing.T) {
	got := ClaimCounts([]ClaimOutcome{{Outcome: claims.Inconclusive}, {Outcome: claims.NotJudged}, {Outcome: claims.NotJudged}, {Outcome: claims.Holds}})
	if got != "1 holds, 1 inconclusive, 2 not judged" {
		t.Errorf("ClaimCounts = %q", got)
	}
}
