package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/engine/claims"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
)

// ClaimOutcome is one claim of the pipeline judged on a run: holds when
// the whole 95% interval is on the claimed side of the bound, fails when
// the whole interval is on the other side, inconclusive when it straddles
// the bound (or there is no interval).
type ClaimOutcome struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Kind        string `json:"kind"` // "ratio", "value" or "verdict"
	Metric      string `json:"metric,omitempty"`
	Step        string `json:"step"`
	Cell        string `json:"cell"`             // "deploy=docker-nat"; "" for every cell
	Versus      string `json:"versus,omitempty"` // ratio claims
	// VersusMetric is the denominator of a ratio of two metrics of the
	// same trials (Metric / VersusMetric per trial); "" otherwise.
	VersusMetric string `json:"versus_metric,omitempty"`
	Bound        string `json:"bound"`   // "< 0.6", "= infrastructure-bound"
	Outcome      string `json:"outcome"` // claims.Holds, claims.Fails or claims.Inconclusive
	// Estimate is the ratio or the value (in the metric's unit) with its
	// 95% interval [Low, High] (NaN when there is none; JSON null); for a
	// verdict claim the share of the repetitions that had the verdict.
	Estimate float64 `json:"-"`
	Low      float64 `json:"-"`
	High     float64 `json:"-"`
	Method   string  `json:"method,omitempty"` // Method* of the interval
	N        int     `json:"n"`                // repetitions (or paired rounds)
	// MoreRepetitions is, when inconclusive, about how many more
	// repetitions per cell would likely decide the claim, from the
	// interval's width shrinking as 1/√n; 0 when unknown.
	MoreRepetitions int    `json:"more_repetitions,omitempty"`
	Detail          string `json:"detail"`

	unit  string  // claims.EstimateUnit: a claims.Unit*, "" for a ratio
	cells []*Cell // the summary cells the claim reads (cell and versus)
}

// MarshalJSON writes the estimate and bounds as numbers or null.
func (o ClaimOutcome) MarshalJSON() ([]byte, error) {
	type plain ClaimOutcome
	opt := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		Estimate *float64 `json:"estimate"`
		Low      *float64 `json:"ci_low"`
		High     *float64 `json:"ci_high"`
		plain
	}{opt(o.Estimate), opt(o.Low), opt(o.High), plain(o)})
}

// EvaluateClaims judges the claims recorded in the run's manifest against
// its trials, with the intervals of engine/stats (stats.PairedRatio for a
// ratio, stats.PositiveCI for a value). A run without claims gives none.
func EvaluateClaims(run *results.Run) ([]ClaimOutcome, error) {
	s, err := Summarize(run, Options{TopProcesses: -1})
	if err != nil {
		return nil, err
	}
	return s.Claims, nil
}

// RecordedClaims reads the outcomes apply recorded in claims.parquet; ok
// is false when the run has no such table (EvaluateClaims recomputes them
// from the trials).
func RecordedClaims(run *results.Run) (out []ClaimOutcome, ok bool, err error) {
	if run == nil {
		return nil, false, errors.New("reading claims: no run")
	}
	rows, ok, err := results.ReadClaims(run.Dir, run.Format)
	if err != nil || !ok {
		return nil, ok, err
	}
	for _, r := range rows {
		out = append(out, ClaimOutcome{Name: r.Claim, Description: r.Description, Kind: r.Kind, Metric: r.Metric, Step: r.Step,
			Cell: r.Cell, Versus: r.Versus, VersusMetric: r.VersusMetric, Bound: r.Bound, Outcome: r.Outcome, Estimate: r.Estimate, Low: r.Low, High: r.High,
			Method: r.Method, N: int(r.N), MoreRepetitions: int(r.MoreRepetitions), Detail: r.Detail, unit: claims.EstimateUnit(r.Kind, r.Metric)})
	}
	return out, true, nil
}

// ClaimRows converts outcomes into claims.parquet rows.
func ClaimRows(runID string, specs []results.ClaimSpec, outs []ClaimOutcome) []results.ClaimRow {
	rows := make([]results.ClaimRow, len(outs))
	for i, o := range outs {
		rows[i] = results.ClaimRow{RunID: runID, Claim: o.Name, Description: o.Description, Kind: o.Kind, Metric: o.Metric, Step: o.Step,
			Cell: o.Cell, Versus: o.Versus, VersusMetric: o.VersusMetric, Bound: o.Bound, Outcome: o.Outcome, Estimate: o.Estimate, Low: o.Low, High: o.High,
			Method: o.Method, N: int64(o.N), MoreRepetitions: int64(o.MoreRepetitions), Detail: o.Detail}
		if i < len(specs) {
			rows[i].BoundOp, rows[i].BoundValue = specs[i].BoundOp, specs[i].BoundValue
		}
	}
	return rows
}

// InvalidClaims names the claims not judged for invalid values.
func InvalidClaims(outs []ClaimOutcome) []string {
	var out []string
	for _, o := range outs {
		if o.Outcome == claims.Invalid {
			out = append(out, o.Name)
		}
	}
	return out
}

// FailedClaims names the claims that fail.
func FailedClaims(outs []ClaimOutcome) []string {
	var out []string
	for _, o := range outs {
		if o.Outcome == claims.Fails {
			out = append(out, o.Name)
		}
	}
	return out
}

// claimsRead reports whether one of the manifest's claims reads metric
// (as its metric or its versus_metric).
func claimsRead(m *results.Manifest, metric string) bool {
	if m == nil {
		return false
	}
	for _, c := range m.Claims {
		if c.Metric == metric || c.VersusMetric == metric {
			return true
		}
	}
	return false
}

// metricReader reads a claim metric from a trials row, as claims.Metrics
// declares it: the trials column of its name, or the CPU time per request
// of the columns it names; nil for a metric read from the histograms
// (factGetter) or one this benchflow does not know.
func metricReader(name string) func(*results.TrialRow) float64 {
	m, ok := claims.LookupMetric(name)
	switch {
	case !ok || m.FromHistograms():
		return nil
	case len(m.PerRequest) > 0:
		rps := results.TrialNumber("rps")
		var parts []func(*results.TrialRow) float64
		for _, c := range m.PerRequest {
			parts = append(parts, results.TrialNumber(c))
		}
		return func(t *results.TrialRow) float64 {
			sum := 0.0
			for _, p := range parts {
				sum += p(t)
			}
			return claims.CPUPerRequest(sum, rps(t))
		}
	}
	return results.TrialNumber(name)
}

// factGetter reads a claim metric of a trial from its facts: stored, the
// value kept as the trials row was read (a trials column), or
// latency_p9999_us from the trial's histogram (Summary.p9999, read after
// the trials rows); nil for a metric this benchflow does not know.
func (s *Summary) factGetter(metric string, stored func(*rowFacts) float64) func(*rowFacts) float64 {
	m, ok := claims.LookupMetric(metric)
	if ok && m.FromHistograms() {
		return func(r *rowFacts) float64 {
			v, ok := s.p9999[r.key]
			if !ok {
				return math.NaN() // no histogram for this trial
			}
			return v
		}
	}
	if !ok {
		return nil
	}
	return stored
}

// evaluateClaims judges every claim of the run's manifest on s.
// facts holds each row's value of every claim's metric (newTrialFacts).
func (s *Summary) evaluateClaims(run *results.Run, facts *trialFacts) {
	specs := run.Manifest.Claims
	if len(specs) == 0 {
		return
	}
	for i, sp := range specs {
		s.Claims = append(s.Claims, s.evaluateClaim(sp, i, facts.rows))
	}
}

// evaluateClaim judges claim sp, the i-th of the manifest.
func (s *Summary) evaluateClaim(sp results.ClaimSpec, i int, rows map[[2]string]*rowFacts) ClaimOutcome {
	o := ClaimOutcome{Name: sp.Name, Description: sp.Description, Kind: sp.Kind, Metric: sp.Metric, Step: sp.Step,
		Cell: specString(sp.Cell, s.Axes), Versus: specString(sp.Versus, s.Axes), VersusMetric: sp.VersusMetric, Bound: sp.Bound,
		Estimate: math.NaN(), Low: math.NaN(), High: math.NaN(), unit: claims.EstimateUnit(sp.Kind, sp.Metric)}
	var cells, versus []*Cell
	for _, c := range s.Cells {
		if c.Step == sp.Step && cellHas(c, sp.Cell) {
			cells = append(cells, c)
		}
	}
	if why := invalidCells(cells); why != "" {
		o.cells = cells
		o.judged(claims.InvalidValues(why))
		return o
	}
	if sp.Kind == claims.KindVerdict {
		o.Bound = "= " + sp.Verdict
		o.cells = cells
		s.judgeVerdict(&o, sp, cells, rows)
		return o
	}
	get := s.factGetter(sp.Metric, func(r *rowFacts) float64 { return r.claims[i] })
	if get == nil {
		o.judged(claims.UnknownMetric(sp.Metric))
		return o
	}
	var getV func(*rowFacts) float64
	if sp.VersusMetric != "" {
		if getV = s.factGetter(sp.VersusMetric, func(r *rowFacts) float64 { return r.versus[i] }); getV == nil {
			o.judged(claims.UnknownMetric(sp.VersusMetric))
			return o
		}
	}
	if len(cells) == 0 {
		o.judged(claims.NoRepetitions())
		return o
	}
	if why := invalidMetric(cells, sp.Metric, get, rows); why != "" {
		o.cells = cells
		o.judged(claims.InvalidValues(why))
		return o
	}
	if getV != nil {
		if why := invalidMetric(cells, sp.VersusMetric, getV, rows); why != "" {
			o.cells = cells
			o.judged(claims.InvalidValues(why))
			return o
		}
	}
	bound := claims.Bound{Op: sp.BoundOp, Value: sp.BoundValue, Text: sp.Bound}
	var iv stats.Interval
	left := 0 // rounds left out of a ratio of two metrics (no value)
	switch {
	case sp.Kind == claims.KindRatio && getV != nil:
		iv, left = metricRatio(cells, get, getV, rows)
	case sp.Kind == claims.KindRatio:
		for _, c := range cells {
			v := s.versusOf(c, sp.Versus)
			if v == nil {
				o.judged(claims.NoCounterpart(c.Label(), o.Versus))
				o.cells = cells
				return o
			}
			versus = append(versus, v)
		}
		if why := invalidCells(versus); why == "" {
			why = invalidMetric(versus, sp.Metric, get, rows)
			if why != "" {
				o.cells = append(cells, versus...)
				o.judged(claims.InvalidValues(why))
				return o
			}
		} else {
			o.cells = append(cells, versus...)
			o.judged(claims.InvalidValues(why))
			return o
		}
		iv = groupRatio(cells, versus, get, rows)
	default:
		_, vals := groupRounds(cells, get, rows)
		iv = stats.PositiveCI(vals)
	}
	o.cells = append(cells, versus...)
	o.Estimate, o.Low, o.High, o.Method, o.N = iv.Value, iv.Low, iv.High, iv.Method, iv.N
	o.judged(claims.Judge(iv, bound, o.unit))
	if left > 0 {
		o.Detail += claims.LeftOut(left, sp.Metric, sp.VersusMetric)
	}
	return o
}

// metricRatio is the ratio of two metrics of the same cells: per trial
// get/getV (the two metrics of one trial pair naturally), per round the
// geometric mean over the cells, then the log-t interval over the rounds
// (reported as paired log-t: the pairs are the trials). A round in which a
// trial has no positive, finite ratio (p50 of 0, no histogram) is left
// out and counted in left.
func metricRatio(cells []*Cell, get, getV func(*rowFacts) float64, rows map[[2]string]*rowFacts) (iv stats.Interval, left int) {
	ratio := func(t *rowFacts) float64 {
		a, b := get(t), getV(t)
		if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			return math.NaN()
		}
		return a / b
	}
	_, vals := groupRounds(cells, ratio, rows)
	var rs []float64
	for _, v := range vals {
		if math.IsNaN(v) {
			left++
			continue
		}
		rs = append(rs, v)
	}
	iv = stats.PositiveCI(rs)
	if iv.Method == stats.MethodLogT {
		iv.Method = stats.MethodPairedLogT
	}
	return iv, left
}

// groupRatio is the ratio of the cells to their versus cells: per round,
// the geometric mean of the cells over the geometric mean of their versus
// cells, then the paired interval over the rounds (stats.PairedRatio). When
// fewer than 3 rounds pair but each side has 3, the sides are taken as
// independent (stats.WelchRatio).
func groupRatio(cells, versus []*Cell, get func(*rowFacts) float64, rows map[[2]string]*rowFacts) stats.Interval {
	nr, nv := groupRounds(cells, get, rows)
	dr, dv := groupRounds(versus, get, rows)
	den := map[int]float64{}
	for i, r := range dr {
		den[r] = dv[i]
	}
	var num, base []float64
	for i, r := range nr {
		if d, ok := den[r]; ok {
			num = append(num, nv[i])
			base = append(base, d)
		}
	}
	if len(num) < stats.MinSamplesForCI && len(nv) >= stats.MinSamplesForCI && len(dv) >= stats.MinSamplesForCI {
		return stats.WelchRatio(nv, dv)
	}
	return stats.PairedRatio(num, base)
}

// groupRounds is, for each round in which every cell has a used
// repetition, the geometric mean of the cells' metric (the arithmetic
// mean when a value is not positive), in round order.
func groupRounds(cells []*Cell, get func(*rowFacts) float64, rows map[[2]string]*rowFacts) (rounds []int, vals []float64) {
	per := map[int][]float64{}
	for _, c := range cells {
		for _, sm := range c.used() {
			t := rows[[2]string{sm.TrialID, c.Step}]
			if t == nil {
				continue
			}
			per[sm.Round] = append(per[sm.Round], get(t))
		}
	}
	for r, xs := range per {
		if len(xs) == len(cells) {
			rounds = append(rounds, r)
		}
	}
	sort.Ints(rounds)
	for _, r := range rounds {
		vals = append(vals, stats.GeoMean(per[r]))
	}
	return rounds, vals
}

// judgeVerdict counts, per selected cell, the verdicts of its used
// repetitions and has claims.JudgeVerdict judge the claim on them.
func (s *Summary) judgeVerdict(o *ClaimOutcome, sp results.ClaimSpec, cells []*Cell, rows map[[2]string]*rowFacts) {
	var counts []claims.CellVerdicts
	for _, c := range cells {
		count := map[string]int{}
		for _, sm := range c.used() {
			t := rows[[2]string{sm.TrialID, c.Step}]
			if t == nil || t.verdict == "" {
				continue
			}
			count[t.verdict]++
		}
		counts = append(counts, claims.CellVerdicts{Label: c.Label(), Counts: count})
	}
	var j claims.Judgement
	j, o.Estimate, o.N = claims.JudgeVerdict(sp.Verdict, counts)
	o.judged(j)
}

// judged sets the outcome, the detail and the repetitions that would
// likely decide it from j.
func (o *ClaimOutcome) judged(j claims.Judgement) {
	o.Outcome, o.Detail, o.MoreRepetitions = j.Outcome, j.Detail, j.MoreRepetitions
}

// versusOf is the cell with c's parameters but those of versus, same step.
func (s *Summary) versusOf(c *Cell, versus map[string]any) *Cell {
	for _, o := range s.Cells {
		if o.Step != c.Step || !cellHas(o, versus) {
			continue
		}
		same := true
		for i, p := range c.Params {
			if _, over := versus[p.Name]; over {
				continue
			}
			if i >= len(o.Params) || !sameValue(o.Params[i].Value, p.Value) {
				same = false
			}
		}
		if same {
			return o
		}
	}
	return nil
}

func cellHas(c *Cell, want map[string]any) bool {
	for k, v := range want {
		found := false
		for _, p := range c.Params {
			if p.Name == k && sameValue(p.Value, v) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sameValue compares parameter values across their JSON round trip (a
// manifest's numbers read back as float64).
func sameValue(a, b any) bool {
	sa, sb := fmt.Sprint(a), fmt.Sprint(b)
	if sa == sb {
		return true
	}
	fa, ea := strconv.ParseFloat(sa, 64)
	fb, eb := strconv.ParseFloat(sb, 64)
	return ea == nil && eb == nil && fa == fb
}

// specString renders a claim's cell in axis order: "deploy=nat, log=on".
func specString(m map[string]any, axes []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, a := range axes {
		if v, ok := m[a]; ok {
			parts = append(parts, fmt.Sprintf("%s=%v", a, plainNumber(v)))
			seen[a] = true
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("%s=%v", k, plainNumber(m[k])))
	}
	return strings.Join(parts, ", ")
}

// plainNumber prints an integral float64 without an exponent.
func plainNumber(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return int64(f)
	}
	return v
}

// claimsFor are the claims that read cell c, as "name=outcome".
func (s *Summary) claimsFor(c *Cell) string {
	var out []string
	for _, o := range s.Claims {
		for _, x := range o.cells {
			if x == c {
				out = append(out, o.Name+"="+o.Outcome)
				break
			}
		}
	}
	return strings.Join(out, ";")
}

// claimCounts is "1 holds, 1 fails, 1 inconclusive, 1 not judged".
func (s *Summary) claimCounts() string {
	n := map[string]int{}
	for _, o := range s.Claims {
		n[o.Outcome]++
	}
	var parts []string
	for _, k := range []string{claims.Holds, claims.Fails, claims.Inconclusive, claims.Invalid, claims.NotJudged} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return strings.Join(parts, ", ")
}
