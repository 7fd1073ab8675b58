package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchflow/benchflow/engine/escape"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
	"github.com/benchflow/benchflow/engine/units"
)

// Verdicts of a comparison (B relative to A).
const (
	VerdictFaster       = "faster"
	VerdictSlower       = "slower"
	VerdictNoDifference = "no significant difference"
	VerdictInsufficient = "insufficient data"
	// VerdictInvalid: a cell of the pair holds invalid values (NaN, ±Inf,
	// negative): not judged.
	VerdictInvalid       = "invalid data"
	minSamplesForVerdict = 3
)

// ReproducedTooNoisy is Pair.Reproduced for a pair whose req/s ratio
// interval is wider than ×/÷TooNoisyFactor: the runs cannot tell a
// difference of that size from none, so "yes" would say nothing.
const ReproducedTooNoisy = "too noisy"

// TooNoisyFactor bounds the req/s ratio interval of a pair that can be
// called reproduced: an interval wider than ×/÷1.5 (from ×0.667 to ×1.5
// around the estimate) is "not judged: too noisy" (docs/statistics.md).
const TooNoisyFactor = 1.5

// TooNoisyText is what a reader sees for a pair that is too noisy to
// judge: the width and what would narrow it.
func TooNoisyText(r stats.Interval) string {
	return fmt.Sprintf("not judged: too noisy (×/÷%.3f)", math.Exp(r.HalfWidth()))
}

// TooNoisyHelp says what a too noisy pair means and what would help.
func TooNoisyHelp(n int, widest float64) string {
	return fmt.Sprintf("too noisy: %d cell(s) have a req/s ratio interval wider than ×/÷%g (the widest ×/÷%.3f), so a difference of that size cannot be told from none; more repetitions (--repetitions) or a quieter machine would narrow it",
		n, TooNoisyFactor, widest)
}

// CompareOptions tune Compare.
type CompareOptions struct {
	// FailAbove is the regression threshold as a fraction (0.05 = 5%): a
	// pair regresses when B is significantly slower than A in req/s by more
	// than FailAbove, or has a significantly higher p99 by more than
	// FailAbove. 0 disables the check.
	FailAbove float64
}

// EnvironmentChange is one environment field recorded otherwise in A and
// B ("(absent)" where a run did not record it); the mitigations are one
// line ("mitigations (3 differ)").
type EnvironmentChange struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
	// Docker: a field of the container engine, which explains only
	// the cells the docker provider deployed.
	Docker bool `json:"docker,omitempty"`
}

// Comparison pairs the cells of two runs by parameters.
type Comparison struct {
	A        string   `json:"run_a"`
	B        string   `json:"run_b"`
	Axes     []string `json:"axes"`
	Pairs    []*Pair  `json:"pairs"`
	OnlyA    []string `json:"only_in_a,omitempty"`
	OnlyB    []string `json:"only_in_b,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Environment lists the recorded environment fields that differ
	// between A and B (results.Differences, ranked as reproduce ranks
	// them: CPU, kernel, virtualization, versions — the Nomad, Consul,
	// APISIX and etcd a run used among them — then the rest); Rounded
	// counts the sysctls within 1% left out.
	Environment        []EnvironmentChange `json:"environment,omitempty"`
	EnvironmentRounded int                 `json:"environment_rounded,omitempty"`
	FailAbove          float64             `json:"fail_above,omitempty"`
	Regressions        []string            `json:"regressions,omitempty"`
	// SamePipeline is true when both runs ran the same pipeline source
	// (equal sha256): then a difference is not expected, and each pair
	// says whether it reproduced.
	SamePipeline bool `json:"same_pipeline"`
	// Variables are the pipeline variables B ran with otherwise than A
	// (a --var): named, A → B, when the pipelines differ by them.
	Variables []VariableDifference `json:"variables,omitempty"`
	// ReproducedN counts the pairs that reproduced, of ReproJudged pairs
	// that could be judged.
	ReproducedN int `json:"reproduced"`
	ReproJudged int `json:"reproduced_of"`
	// TooNoisy counts the pairs not judged because their req/s ratio
	// interval is wider than ×/÷TooNoisyFactor (Pair.Reproduced "too
	// noisy"); they are not among ReproJudged.
	TooNoisy int `json:"too_noisy,omitempty"`
	// RawCSV writes csv cells as they are (compare --raw); see
	// Summary.RawCSV.
	RawCSV bool `json:"-"`
}

// Pair is one cell present in both runs.
type Pair struct {
	Label string `json:"cell"`
	Step  string `json:"step"`
	A     *Cell  `json:"-"`
	B     *Cell  `json:"-"`
	// Basis is what the samples are: "repetitions" when both cells have
	// at least 3, else "intervals" (per-interval req/s and p99 from
	// timeseries.parquet; a weaker test, since intervals are correlated).
	Basis    string         `json:"basis"`
	RPSRatio stats.Interval `json:"-"` // req/s B / A (geometric means), 95% Welch interval on logs
	P99Ratio stats.Interval `json:"-"` // p99 B / A (geometric means), 95% Welch interval on logs
	Verdict  string         `json:"verdict"`
	// LatencyVerdict is the p99 verdict: "faster" means a lower p99 in B.
	LatencyVerdict string `json:"p99_verdict"`
	Regression     bool   `json:"regression"`
	// Reproduced is "yes" when B's req/s estimate lies inside A's 95%
	// interval or the req/s verdict is no significant difference, "no"
	// otherwise, "" when it cannot be judged (fewer than 3 samples), and
	// "too noisy" (ReproducedTooNoisy) instead of "yes" when the req/s
	// ratio interval is wider than ×/÷TooNoisyFactor.
	Reproduced string `json:"reproduced,omitempty"`
}

// Compare pairs the cells of a and b by parameters and step and judges each
// pair by the ratio B/A of the geometric means with a 95% Welch t interval
// on the logs (the runs are independent: no pairing across runs):
// "faster" when the interval of the req/s ratio lies above 1, "slower"
// below, else "no significant difference". Each pair also says whether it
// reproduced (Pair.Reproduced).
func Compare(a, b *results.Run, opts CompareOptions) (*Comparison, error) {
	if a == nil || b == nil {
		return nil, errors.New("comparing: missing run")
	}
	if opts.FailAbove < 0 || math.IsNaN(opts.FailAbove) {
		return nil, fmt.Errorf("comparing: negative threshold %v", opts.FailAbove)
	}
	// The per-interval series are needed only for a cell with too few
	// repetitions to judge on (judge): summarise without them first, so
	// two long runs are never held interval by interval.
	opts2 := Options{TopProcesses: -1, NoSeries: true}
	sa, err := Summarize(a, opts2)
	if err != nil {
		return nil, err
	}
	sb, err := Summarize(b, opts2)
	if err != nil {
		return nil, err
	}
	if fewRepetitions(sa) || fewRepetitions(sb) {
		opts2.NoSeries = false
		if sa, err = Summarize(a, opts2); err != nil {
			return nil, err
		}
		if sb, err = Summarize(b, opts2); err != nil {
			return nil, err
		}
	}
	c := &Comparison{A: sa.RunID, B: sb.RunID, Axes: sa.Axes, FailAbove: opts.FailAbove,
		SamePipeline: samePipeline(a.Manifest.Pipeline, b.Manifest.Pipeline), Variables: VariableDifferences(a.Manifest, b.Manifest)}
	if a.Manifest.RunID != "" && a.Manifest.RunID == b.Manifest.RunID {
		c.Warnings = append(c.Warnings, fmt.Sprintf("A and B are the same run (%s): every cell reproduces by construction; compare two runs to test reproducibility", a.Manifest.RunID))
	}
	if a.Manifest.RunID == "" || a.Manifest.RunID != b.Manifest.RunID {
		var changes []results.Change
		changes, c.EnvironmentRounded = results.Changes(results.Differences(a.Manifest, b.Manifest))
		for _, ch := range changes {
			c.Environment = append(c.Environment, EnvironmentChange{Field: ch.Name, A: ch.Bundle, B: ch.Here, Docker: ch.Docker})
		}
	}
	fa, fb := a.Manifest.Fingerprint(), b.Manifest.Fingerprint()
	switch {
	case fa == "" || fb == "":
		c.Warnings = append(c.Warnings, "cannot tell whether both runs come from the same environment (no environment fingerprint)")
	case fa != fb:
		c.Warnings = append(c.Warnings, fmt.Sprintf("the runs come from different environments (fingerprint %s vs %s): differences may come from the machine, not the change", fa, fb))
	}
	if strings.Join(sa.Axes, ",") != strings.Join(sb.Axes, ",") {
		c.Warnings = append(c.Warnings, fmt.Sprintf("matrix axes differ (%s vs %s): only cells with equal parameters are paired", strings.Join(sa.Axes, ","), strings.Join(sb.Axes, ",")))
	}
	inB := map[string]*Cell{}
	for _, cb := range sb.Cells {
		inB[cb.key()] = cb
	}
	seen := map[string]bool{}
	for _, ca := range sa.Cells {
		cb := inB[ca.key()]
		if cb == nil {
			c.OnlyA = append(c.OnlyA, ca.Label())
			continue
		}
		seen[ca.key()] = true
		p := judge(ca, cb)
		if p.Reproduced == ReproducedTooNoisy {
			c.TooNoisy++
		} else if p.Reproduced != "" {
			c.ReproJudged++
			if p.Reproduced == "yes" {
				c.ReproducedN++
			}
		}
		if opts.FailAbove > 0 {
			slow := p.Verdict == VerdictSlower && 1-p.RPSRatio.Value > opts.FailAbove
			lat := p.LatencyVerdict == VerdictSlower && p.P99Ratio.Value-1 > opts.FailAbove
			if slow || lat {
				p.Regression = true
				var why []string
				if slow {
					why = append(why, fmt.Sprintf("req/s ×%.3f", p.RPSRatio.Value))
				}
				if lat {
					why = append(why, fmt.Sprintf("p99 ×%.3f", p.P99Ratio.Value))
				}
				c.Regressions = append(c.Regressions, fmt.Sprintf("%s: %s (threshold %s)", p.Label, strings.Join(why, ", "), fmtPct(opts.FailAbove)))
			}
		}
		c.Pairs = append(c.Pairs, p)
	}
	for _, cb := range sb.Cells {
		if !seen[cb.key()] {
			c.OnlyB = append(c.OnlyB, cb.Label())
		}
	}
	for _, p := range c.Pairs {
		for _, x := range []struct {
			run  string
			cell *Cell
		}{{"A", p.A}, {"B", p.B}} {
			if len(x.cell.InvalidWhy) > 0 {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s in %s: invalid values, not compared: %s", p.Label, x.run, strings.Join(x.cell.InvalidWhy, "; ")))
			}
		}
	}
	if len(c.Pairs) == 0 {
		c.Warnings = append(c.Warnings, "no cell has the same parameters in both runs")
	}
	return c, nil
}

// samePipeline: both runs ran the same study — equal plans when both
// recorded one (an HCL pipeline and its Starlark twin, or one pipeline
// run with other repetitions), else the same source.
func samePipeline(a, b results.PipelineInfo) bool {
	if a.PlanSHA256 != "" && b.PlanSHA256 != "" {
		return a.PlanSHA256 == b.PlanSHA256
	}
	return a.SHA256 != "" && a.SHA256 == b.SHA256
}

// fewRepetitions reports whether some cell has too few repetitions for a
// verdict on them, so that judge pools its intervals instead.
func fewRepetitions(s *Summary) bool {
	for _, c := range s.Cells {
		if len(c.usedRPS()) < minSamplesForVerdict || len(c.usedP99()) < minSamplesForVerdict {
			return true
		}
	}
	return false
}

func judge(a, b *Cell) *Pair {
	p := &Pair{Label: a.Label(), Step: a.Step, A: a, B: b, Basis: "repetitions"}
	if len(a.InvalidWhy) > 0 || len(b.InvalidWhy) > 0 {
		p.Verdict, p.LatencyVerdict = VerdictInvalid, VerdictInvalid
		p.RPSRatio, p.P99Ratio = stats.NoCI(math.NaN(), 0), stats.NoCI(math.NaN(), 0)
		return p
	}
	ra, rb, la, lb := a.usedRPS(), b.usedRPS(), a.usedP99(), b.usedP99()
	if len(ra) < minSamplesForVerdict || len(rb) < minSamplesForVerdict {
		p.Basis = "intervals"
		ra, la = intervalSamples(a)
		rb, lb = intervalSamples(b)
	}
	p.RPSRatio = stats.WelchRatio(rb, ra)
	p.P99Ratio = stats.WelchRatio(lb, la)
	if len(ra) < minSamplesForVerdict || len(rb) < minSamplesForVerdict {
		p.Verdict, p.LatencyVerdict = VerdictInsufficient, VerdictInsufficient
		// Still report the point estimates of the cells themselves.
		p.RPSRatio = stats.NoCI(b.RPS.Value/a.RPS.Value, min(a.N, b.N))
		p.P99Ratio = stats.NoCI(b.P99US/a.P99US, min(a.N, b.N))
		return p
	}
	p.Verdict = verdict(p.RPSRatio, false)
	p.LatencyVerdict = verdict(p.P99Ratio, true)
	switch {
	case p.Verdict == VerdictNoDifference:
		p.Reproduced = "yes"
	case a.RPS.IsCI() && b.RPS.Value >= a.RPS.Low && b.RPS.Value <= a.RPS.High:
		p.Reproduced = "yes"
	case p.Verdict == VerdictFaster || p.Verdict == VerdictSlower:
		p.Reproduced = "no"
	}
	// Agreement within an interval that spans a large difference either
	// way says nothing: such a pair is not judged. A significant
	// difference ("no") stands however wide its interval.
	if h := p.RPSRatio.HalfWidth(); p.Reproduced == "yes" && !math.IsNaN(h) && math.Exp(h) > TooNoisyFactor {
		p.Reproduced = ReproducedTooNoisy
	}
	return p
}

// verdict reads a ratio interval; lowerIsBetter for latencies.
func verdict(r stats.Interval, lowerIsBetter bool) string {
	switch {
	case !r.HasCI():
		return VerdictInsufficient
	case r.Low > 1:
		if lowerIsBetter {
			return VerdictSlower
		}
		return VerdictFaster
	case r.High < 1:
		if lowerIsBetter {
			return VerdictFaster
		}
		return VerdictSlower
	default:
		return VerdictNoDifference
	}
}

// intervalSamples pools the per-interval req/s and p99 of every
// repetition, leaving out partial intervals (shorter than 90% of the
// longest).
func intervalSamples(c *Cell) (rps, p99 []float64) {
	longest := 0.0
	for _, ts := range c.Timeseries {
		for _, r := range ts {
			longest = math.Max(longest, r.IntervalS)
		}
	}
	for _, ts := range c.Timeseries {
		for _, r := range ts {
			if r.IntervalS < 0.9*longest || r.Requests == 0 {
				continue
			}
			rps = append(rps, r.RPS)
			if r.P99US > 0 {
				p99 = append(p99, r.P99US)
			}
		}
	}
	return rps, p99
}

// Failed reports whether any pair regressed beyond FailAbove.
func (c *Comparison) Failed() bool { return len(c.Regressions) > 0 }

// Write renders the comparison as text, markdown, csv or json.
func (c *Comparison) Write(w io.Writer, format string) error {
	switch format {
	case "", "text", "markdown", "md":
		return c.writeTable(w, format == "markdown" || format == "md")
	case "csv":
		return c.writeCSV(w)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	default:
		return fmt.Errorf("writing comparison: unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
}

func (c *Comparison) rows() (header []string, rows [][]string) {
	header = []string{"cell", "n A/B", "req/s A", "req/s B", "req/s B/A [95% CI] method", "p99 ms A", "p99 ms B", "p99 B/A [95% CI] method", "verdict", "reproduced"}
	multi := false
	for _, p := range c.Pairs {
		if p.Step != c.Pairs[0].Step {
			multi = true
		}
	}
	for _, p := range c.Pairs {
		label := p.Label
		if multi {
			label += " · " + p.Step
		}
		v := p.Verdict
		if p.LatencyVerdict != p.Verdict && p.LatencyVerdict != VerdictInsufficient {
			v += "; p99 " + latencyWord(p.LatencyVerdict)
		}
		if p.Basis == "intervals" && p.Verdict != VerdictInsufficient {
			v += " (per interval)"
		}
		if p.Regression {
			v += " REGRESSION"
		}
		rpsRatio, p99Ratio := fmtRatio(p.RPSRatio), fmtRatio(p.P99Ratio)
		if p.Basis == "intervals" && p.Verdict != VerdictInsufficient {
			// The test ran on the loads' 1 s intervals, not on the n
			// repetitions the n column counts: the method says so.
			rpsRatio += fmt.Sprintf(" on %d intervals", p.RPSRatio.N)
			p99Ratio += fmt.Sprintf(" on %d intervals", p.P99Ratio.N)
		}
		rep := orDash(p.Reproduced)
		if p.Reproduced == ReproducedTooNoisy {
			rep = TooNoisyText(p.RPSRatio)
		}
		rows = append(rows, []string{label, fmt.Sprintf("%d/%d", p.A.N, p.B.N),
			units.FormatRate(p.A.RPS.Value), units.FormatRate(p.B.RPS.Value), rpsRatio,
			units.FormatMS(p.A.P99US), units.FormatMS(p.B.P99US), p99Ratio, v, rep})
	}
	return header, rows
}

func latencyWord(v string) string {
	switch v {
	case VerdictFaster:
		return "lower"
	case VerdictSlower:
		return "higher"
	default:
		return "unchanged"
	}
}

func (c *Comparison) writeTable(w io.Writer, md bool) error {
	title := fmt.Sprintf("A = %s, B = %s", c.A, c.B)
	header, rows := c.rows()
	if md {
		fmt.Fprintf(w, "**%s**\n\n", mdEscape(title))
		writeMDRow(w, header)
		sep := make([]string, len(header))
		for i := range sep {
			sep[i] = "---:"
		}
		sep[0], sep[len(sep)-2], sep[len(sep)-1] = "---", "---", "---"
		writeMDRow(w, sep)
		for _, r := range rows {
			writeMDRow(w, r)
		}
	} else {
		fmt.Fprintln(w, title)
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	prefix := ""
	if md {
		prefix = mdPrefix
	}
	var notes []string
	for _, l := range c.OnlyA {
		notes = append(notes, "only in A: "+l)
	}
	for _, l := range c.OnlyB {
		notes = append(notes, "only in B: "+l)
	}
	for _, m := range c.Warnings {
		notes = append(notes, "warning: "+m)
	}
	notes = append(notes, c.environmentNotes()...)
	for _, m := range c.Regressions {
		notes = append(notes, "regression: "+m)
	}
	if s := c.reproSummary(); s != "" {
		notes = append(notes, s)
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, prefix+lineText(prefix, n)); err != nil {
			return err
		}
	}
	return nil
}

// compareEnvShown bounds the environment lines of a text or markdown
// comparison; --format json lists them all.
const compareEnvShown = 12

// environmentNotes are the environment lines under the table: one per
// differing field, A → B, the first compareEnvShown of them.
func (c *Comparison) environmentNotes() []string {
	var out []string
	for i, e := range c.Environment {
		if i == compareEnvShown {
			out = append(out, fmt.Sprintf("environment: %d more fields differ (--format json lists them)", len(c.Environment)-compareEnvShown))
			break
		}
		docker := ""
		if e.Docker {
			docker = " (docker provider's cells only)"
		}
		out = append(out, fmt.Sprintf("environment: %s: %s → %s%s", e.Field, e.A, e.B, docker))
	}
	if c.EnvironmentRounded > 0 {
		out = append(out, fmt.Sprintf("environment: and %d sysctls within 1%% (not listed)", c.EnvironmentRounded))
	}
	return out
}

func (c *Comparison) writeCSV(w io.Writer) error {
	var b strings.Builder
	b.WriteString("cell,step,basis,n_a,n_b,rps_a,rps_b,rps_ratio,rps_ratio_ci_low,rps_ratio_ci_high,p99_us_a,p99_us_b,p99_ratio,p99_ratio_ci_low,p99_ratio_ci_high,verdict,p99_verdict,regression,ratio_ci_method,reproduced\n")
	for _, p := range c.Pairs {
		cell := func(s string) string {
			if !c.RawCSV {
				s = escape.CSV(s)
			}
			return csvQuote(s)
		}
		fields := []string{cell(p.Label), cell(p.Step), p.Basis, strconv.Itoa(p.A.N), strconv.Itoa(p.B.N),
			num(p.A.RPS.Value), num(p.B.RPS.Value), num(p.RPSRatio.Value), num(p.RPSRatio.Low), num(p.RPSRatio.High),
			num(p.A.P99US), num(p.B.P99US), num(p.P99Ratio.Value), num(p.P99Ratio.Low), num(p.P99Ratio.High),
			cell(p.Verdict), cell(p.LatencyVerdict), strconv.FormatBool(p.Regression), p.RPSRatio.Method, p.Reproduced}
		b.WriteString(strings.Join(fields, ",") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func csvQuote(s string) string {
	if strings.ContainsAny(s, ",\"\r\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func (p *Pair) MarshalJSON() ([]byte, error) {
	type plain Pair
	return json.Marshal(struct {
		N        [2]int       `json:"n"`
		RPS      [2]float64   `json:"rps"`
		P99      [2]float64   `json:"latency_p99_us"`
		RPSRatio jsonInterval `json:"rps_ratio"`
		P99Ratio jsonInterval `json:"p99_ratio"`
		*plain
	}{[2]int{p.A.N, p.B.N}, [2]float64{finite(p.A.RPS.Value), finite(p.B.RPS.Value)}, [2]float64{p.A.P99US, p.B.P99US},
		toJSONInterval(p.RPSRatio), toJSONInterval(p.P99Ratio), (*plain)(p)})
}

func fmtPct(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

// reproSummary is the one-line reproducibility verdict: "reproduced: 7 of
// 8 cells …", then what was too noisy to judge; "" when no pair could be
// judged.
func (c *Comparison) reproSummary() string {
	if c.ReproJudged == 0 && c.TooNoisy == 0 {
		return ""
	}
	var not []string
	for _, p := range c.Pairs {
		if p.Reproduced == "no" {
			not = append(not, p.Label)
		}
	}
	widest, noisiest := 0.0, 0.0
	for _, p := range c.Pairs {
		h := p.RPSRatio.HalfWidth()
		switch {
		case p.Reproduced == ReproducedTooNoisy && h > noisiest:
			noisiest = h
		case p.Reproduced != "" && p.Reproduced != ReproducedTooNoisy && h > widest:
			widest = h
		}
	}
	s := fmt.Sprintf("reproduced: %d of %d cells (B's req/s inside A's 95%% interval, or no significant difference; the widest req/s ratio interval is ×/÷%.3f)",
		c.ReproducedN, c.ReproJudged, math.Exp(widest))
	if c.ReproJudged == 0 {
		s = "reproduced: no cell could be judged"
	}
	if len(not) > 0 {
		s += "; not reproduced: " + strings.Join(not, "; ")
	}
	if c.TooNoisy > 0 {
		s += "; not judged, " + TooNoisyHelp(c.TooNoisy, math.Exp(noisiest))
	}
	if !c.SamePipeline {
		s += " — " + c.pipelineDifference() + ", so a difference may be intended"
	}
	return s
}

// pipelineDifference says how the two runs' studies differ: by the
// variables B set otherwise ("variables differ: duration 3s → 1s"), else
// by the pipeline.
func (c *Comparison) pipelineDifference() string {
	if len(c.Variables) == 0 {
		return "the runs' pipelines differ"
	}
	return "the runs' variables differ: " + VariablesText(c.Variables)
}

// VariableDifference is a pipeline variable whose value in one run (B,
// here) is not the other's (A, the bundle).
type VariableDifference struct {
	Name   string `json:"name"`
	Bundle string `json:"bundle"`
	Here   string `json:"here"`
}

func (d VariableDifference) String() string { return d.Name + " " + d.Bundle + " → " + d.Here }

// VariablesText is "duration 3s → 1s, connections 16 → 1".
func VariablesText(vs []VariableDifference) string {
	parts := make([]string, len(vs))
	for i, d := range vs {
		parts[i] = d.String()
	}
	return strings.Join(parts, ", ")
}

// VariableDifferences compares the effective variables of two runs, by
// name ("(not set)" where a run has none of that name).
func VariableDifferences(a, b *results.Manifest) []VariableDifference {
	str := func(v any, ok bool) string {
		if !ok {
			return "(not set)"
		}
		if s, isStr := v.(string); isStr {
			return s
		}
		j, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(j)
	}
	names := map[string]bool{}
	for k := range a.Pipeline.Variables {
		names[k] = true
	}
	for k := range b.Pipeline.Variables {
		names[k] = true
	}
	var out []VariableDifference
	for k := range names {
		va, oka := a.Pipeline.Variables[k]
		vb, okb := b.Pipeline.Variables[k]
		if x, y := str(va, oka), str(vb, okb); x != y {
			out = append(out, VariableDifference{Name: k, Bundle: x, Here: y})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
