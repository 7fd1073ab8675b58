package report

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/collect"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/stats"
)

// Options tune Summarize.
type Options struct {
	// Baseline is "axis=value": each cell gets its req/s ratio to the cell
	// with the same other parameters and axis=value.
	Baseline string
	// TopProcesses is how many processes (by mean CPU%) each cell lists;
	// 0 means 3, negative means none.
	TopProcesses int
	// ExcludeUnsteady leaves repetitions whose load step failed the
	// steadiness check out of the intervals; the run's own setting
	// (manifest exclude_unsteady) turns it on too.
	ExcludeUnsteady bool
	// NoSeries leaves Cell.Timeseries empty and the timeseries table
	// unread: for output without charts (text, markdown, csv, json), which
	// does not use them.
	NoSeries bool
}

// Summary is a run summarised per matrix cell: what `benchflow report`
// prints.
type Summary struct {
	RunID    string   `json:"run_id"`
	Pipeline string   `json:"pipeline"`
	Status   string   `json:"status"`
	Axes     []string `json:"axes"`
	Baseline string   `json:"baseline,omitempty"`
	Trials   int      `json:"trials"`
	TrialsOK int      `json:"trials_ok"`
	Cells    []*Cell  `json:"cells"`
	Warnings []string `json:"warnings,omitempty"`
	Notices  []string `json:"notices,omitempty"` // what distorts a comparison (explain.go), shown above the table
	// RawCSV writes csv cells as they are, for programs: without it a cell
	// that a spreadsheet would evaluate as a formula is neutralised
	// (engine/escape's CSV). report --raw sets it.
	RawCSV bool `json:"-"`
	// ExcludeUnsteady: unsteady repetitions are left out of the intervals.
	ExcludeUnsteady bool `json:"exclude_unsteady"`
	// Claims are the pipeline's claims judged on this run (claims.go).
	Claims    []ClaimOutcome `json:"claims,omitempty"`
	multiStep bool
	adaptive  string // how adaptive repetitions ended, for the notes
	// p9999 is each trial × step's p99.99 (µs) from its histogram, for
	// claims on latency_p9999_us (claims.go); nil without such a claim.
	p9999 map[[2]string]float64
}

// Cell is one matrix cell (one combination of parameters) × load step,
// aggregated over its successful repetitions.
type Cell struct {
	Params []results.Param `json:"-"`
	Step   string          `json:"step"`
	N      int             `json:"n"`      // repetitions aggregated (status ok)
	Failed int             `json:"failed"` // repetitions not ok, left out
	// Invalid counts the repetitions whose trials row holds a number that
	// is not one (NaN, ±Inf) or a negative count, rate or duration: left
	// out of every figure, and the claims and comparisons reading the
	// cell are not judged (InvalidWhy says which values).
	Invalid    int      `json:"invalid,omitempty"`
	InvalidWhy []string `json:"invalid_values,omitempty"`
	// RPS is the geometric mean req/s over the repetitions used for
	// intervals with a 95% interval on the logs (stats.PositiveCI; the range
	// below 3 repetitions).
	RPS stats.Interval `json:"-"`
	// Latency percentiles (µs) from the histograms of every repetition
	// merged.
	P50US  float64 `json:"latency_p50_us"`
	P90US  float64 `json:"latency_p90_us"`
	P99US  float64 `json:"latency_p99_us"`
	P999US float64 `json:"latency_p999_us"`
	MaxUS  float64 `json:"latency_max_us"`
	// P99Reps is the geometric mean of the repetitions' own p99 with its
	// 95% log-t interval: how much the p99 varies between repetitions
	// (P99US, from the merged histogram, has no interval).
	P99Reps stats.Interval `json:"-"`

	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// Processes are the top processes by CPU% (100 = one core), averaged
	// over samples (PIDs of one name summed) and repetitions.
	Processes []ProcessCPU `json:"top_processes,omitempty"`
	// Baseline is RPS relative to the baseline cell; nil without
	// --baseline or for cells without a baseline.
	Baseline *stats.Interval `json:"-"`

	// Per repetition, in trial order.
	RepRPS   []float64 `json:"rps_samples"`
	RepP99US []float64 `json:"latency_p99_us_samples"`
	TrialIDs []string  `json:"trial_ids"`
	// Samples are the same repetitions with their round and flags.
	Samples []Sample `json:"samples"`

	// Verdict is what limited the repetitions and where the CPU went
	// (explain.go); nil without whole-machine accounting.
	Verdict *CellVerdict `json:"verdict,omitempty"`
	// Capacity aggregates the repetitions' capacity searches (capacity.go);
	// nil unless the step searched under an SLO.
	Capacity *CellCapacity `json:"capacity,omitempty"`
	probes   []results.ProbeRow
	// offered is each repetition's target rate (open loop; ratechart.go).
	offered []float64

	Histogram  results.Histogram `json:"-"`
	Timeseries [][]Point         `json:"-"` // one series per repetition
}

// ProcessCPU is a process name and its mean CPU%.
type ProcessCPU struct {
	Process string  `json:"process"`
	CPUPct  float64 `json:"cpu_pct"`
	// Host is the machine it ran on (the host column), set only when the
	// run sampled several machines (ssh hosts).
	Host string `json:"host,omitempty"`
}

// Label is the process name, "nginx@10.0.0.2" with a host.
func (p ProcessCPU) Label() string {
	if p.Host == "" {
		return p.Process
	}
	return p.Process + "@" + p.Host
}

// Label is "axis=value, …" (and the step when not the only one).
func (c *Cell) Label() string {
	var parts []string
	for _, p := range c.Params {
		parts = append(parts, fmt.Sprintf("%s=%v", p.Name, p.Value))
	}
	if len(parts) == 0 {
		return c.Step
	}
	return strings.Join(parts, ", ")
}

// paramsKey identifies a cell's parameters, whatever the step.
func paramsKey(c *Cell) string {
	var b strings.Builder
	for _, p := range c.Params {
		fmt.Fprintf(&b, "%s=%v\x00", p.Name, p.Value)
	}
	return b.String()
}

// key identifies a cell across runs: params in axis order and the step.
func (c *Cell) key() string {
	var b strings.Builder
	for _, p := range c.Params {
		fmt.Fprintf(&b, "%s=%v\x00", p.Name, p.Value)
	}
	b.WriteString(c.Step)
	return b.String()
}

// Summarize aggregates a run per matrix cell. Warm-up rows and trials that
// did not succeed are left out (counted in Cell.Failed).
func Summarize(run *results.Run, opts Options) (*Summary, error) {
	if run == nil || run.Manifest == nil {
		return nil, errors.New("summarizing: no run")
	}
	s := &Summary{
		RunID: run.Manifest.RunID, Pipeline: run.Manifest.Pipeline.Name, Status: run.Manifest.Status,
		Axes: append([]string(nil), run.Axes...), Baseline: opts.Baseline, Trials: len(run.Manifest.Trials),
		ExcludeUnsteady: opts.ExcludeUnsteady || run.Manifest.ExcludeUnsteady,
	}
	if a := run.Manifest.Adaptive; a != nil {
		s.adaptive = fmt.Sprintf("repetitions: adaptive, %d to %d per cell until the 95%% interval is within ±%g%%; %d rounds; stopped (%s): %s",
			a.Min, a.Max, 100*a.Precision, a.Rounds, a.Stopped, a.Reason)
	}
	for _, t := range run.Manifest.Trials {
		if t.Status == results.StatusOK {
			s.TrialsOK++
		}
	}
	noHist := run.HasTrials() && !run.HasLatency()
	if noHist {
		s.Warnings = append(s.Warnings, "the run has no latency histograms ("+results.TableFile(results.TableLatency, run.Format)+" is missing or empty): percentiles are the means of each repetition's own percentiles from the trials table, not computed from merged histograms")
	}
	cells := map[string]*Cell{}
	var order []*Cell
	steps := map[string]bool{}
	cellOf := map[[2]string]*Cell{} // trial id and step of the rows used
	// The trials rows are read once, in trial order (a run read with
	// StreamTables holds one batch of them at a time): each cell keeps its
	// repetitions' figures, and facts what the verdicts, notices, claims
	// and percentiles need of each row.
	var stepless [][]results.Param // trials that failed before any step
	facts := newTrialFacts(run, noHist)
	// series[k] are the cells' slots for the timeseries of trial × step k.
	type slot struct {
		c *Cell
		i int
	}
	series := map[[2]string][]slot{}
	if err := run.EachTrial(func(t *results.TrialRow) error {
		if t.Discarded {
			// An attempt re-run because the machine was busy: in the
			// tables, out of every estimate (busy_rerun).
			facts.discarded(t)
			return nil
		}
		facts.add(t)
		if t.StepKind == "warm" {
			return nil
		}
		if t.Step == "" {
			var ps []results.Param
			for _, a := range s.Axes {
				ps = append(ps, results.Param{Name: a, Value: t.Param(a)})
			}
			stepless = append(stepless, ps)
			return nil
		}
		c := &Cell{Step: t.Step}
		for _, a := range s.Axes {
			c.Params = append(c.Params, results.Param{Name: a, Value: t.Param(a)})
		}
		if have, ok := cells[c.key()]; ok {
			c = have
		} else {
			cells[c.key()] = c
			order = append(order, c)
			steps[c.Step] = true
		}
		if t.Status != results.StatusOK {
			c.Failed++
			return nil
		}
		if bad := invalidNumbers(t); len(bad) > 0 {
			c.Invalid++
			c.InvalidWhy = append(c.InvalidWhy, fmt.Sprintf("trial %s: %s", t.TrialID, strings.Join(bad, ", ")))
			return nil
		}
		c.addRow(t, s.ExcludeUnsteady)
		k := [2]string{t.TrialID, t.Step}
		cellOf[k] = c
		c.MaxUS = math.Max(c.MaxUS, t.LatencyMaxUS)
		if !opts.NoSeries {
			series[k] = append(series[k], slot{c, len(c.Timeseries)})
			c.Timeseries = append(c.Timeseries, nil)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Each repetition's series, as the timeseries table is read: only the
	// few figures the charts and compare use.
	if !opts.NoSeries {
		if err := run.EachTimeseries(func(r *results.TimeseriesRow) error {
			for _, sl := range series[[2]string{r.TrialID, r.Step}] {
				if why := invalidPoint(r); why != "" {
					sl.c.InvalidWhy = append(sl.c.InvalidWhy, fmt.Sprintf("trial %s, timeseries at %gs: %s", r.TrialID, r.TS, why))
					continue
				}
				sl.c.Timeseries[sl.i] = append(sl.c.Timeseries[sl.i], pointOf(r))
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if err := addProbes(run, cellOf); err != nil {
		return nil, err
	}
	// Each cell's histogram is the merge of its repetitions', built as the
	// latency table is read trial by trial (a run read with
	// StreamLatency never holds every bucket at once).
	merged := map[*Cell]results.Histogram{}
	if claimsRead(run.Manifest, "latency_p9999_us") {
		s.p9999 = map[[2]string]float64{}
	}
	if err := run.EachHistogram(func(trial, step string, h results.Histogram) error {
		if c := cellOf[[2]string{trial, step}]; c != nil {
			merged[c] = results.MergeHistograms(merged[c], h)
		}
		if s.p9999 != nil {
			s.p9999[[2]string{trial, step}] = h.Percentile(99.99)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	order = addStepless(cells, order, stepless)
	s.multiStep = len(steps) > 1
	top := opts.TopProcesses
	if top == 0 {
		top = 3
	}
	procs, err := processCPU(run)
	if err != nil {
		return nil, err
	}
	s.finishCells(order, merged, facts, noHist, procs, top)
	sortCells(order, s.Axes, run)
	s.Cells = order
	s.explain(run, facts, procs)
	if opts.Baseline != "" {
		if err := s.applyBaseline(opts.Baseline); err != nil {
			return nil, err
		}
		s.noteUnexplained()
	}
	s.evaluateClaims(run, facts)
	return s, nil
}

// addRow adds a successful trials row with valid figures to c: one
// repetition (left out of the figures when unsteady and exclude).
func (c *Cell) addRow(t *results.TrialRow, exclude bool) {
	c.N++
	c.RepRPS = append(c.RepRPS, t.RPS)
	c.RepP99US = append(c.RepP99US, t.LatencyP99US)
	c.TrialIDs = append(c.TrialIDs, t.TrialID)
	sm := Sample{TrialID: t.TrialID, Round: int(t.Repetition), RPS: t.RPS, P99US: t.LatencyP99US}
	if t.Unsteady() {
		sm.Unsteady, sm.Excluded = t.SteadyReason, exclude
	}
	c.Samples = append(c.Samples, sm)
	c.Requests += t.Requests
	c.Errors += t.Errors
	if t.TargetRate > 0 {
		c.offered = append(c.offered, t.TargetRate)
	}
	c.addCapacity(t)
}

// addStepless counts a trial without a step row — it failed before
// measuring — as a failed repetition of every cell with its parameters (a
// cell of its own when there is none), and returns order with those cells.
func addStepless(cells map[string]*Cell, order []*Cell, stepless [][]results.Param) []*Cell {
	for _, ps := range stepless {
		probe := &Cell{Params: ps}
		found := false
		for _, c := range order {
			if paramsKey(c) == paramsKey(probe) {
				c.Failed++
				found = true
			}
		}
		if !found {
			probe.Failed = 1
			cells[probe.key()] = probe
			order = append(order, probe)
		}
	}
	return order
}

// finishCells computes each cell's figures once every table is read, and
// the warnings about the repetitions left out.
func (s *Summary) finishCells(order []*Cell, merged map[*Cell]results.Histogram, facts *trialFacts, noHist bool, procs map[string]map[string]float64, top int) {
	for _, c := range order {
		c.flagSamples()
		c.RPS = stats.PositiveCI(c.usedRPS())
		c.P99Reps = stats.PositiveCI(c.usedP99())
		c.finishCapacity()
		c.Histogram = results.MergeHistograms(merged[c])
		c.P50US = c.Histogram.Percentile(50)
		c.P90US = c.Histogram.Percentile(90)
		c.P99US = c.Histogram.Percentile(99)
		c.P999US = c.Histogram.Percentile(99.9)
		if noHist {
			c.P50US, c.P90US, c.P99US, c.P999US = facts.meanPercentiles(c)
		}
		if top > 0 {
			c.Processes = topProcesses(procs, c.TrialIDs, top)
		}
		if c.Failed > 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %d repetition(s) did not succeed and are left out", c.Label(), c.Failed))
		}
		if len(c.InvalidWhy) > 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: invalid values (NaN, ±Inf or negative), left out of every figure; no claim or comparison of the cell is judged: %s", c.Label(), strings.Join(c.InvalidWhy, "; ")))
		}
	}
}

// sortCells orders cells by the matrix declaration order of each axis
// (manifest "matrix" values), then by step; unknown values keep the order
// of first appearance.
func sortCells(cells []*Cell, axes []string, run *results.Run) {
	rank := map[string]map[string]int{}
	for _, a := range axes {
		rank[a] = map[string]int{}
		if vs, ok := run.Manifest.Matrix[a].([]any); ok {
			for i, v := range vs {
				rank[a][fmt.Sprint(v)] = i
			}
		}
	}
	first := map[*Cell]int{}
	for i, c := range cells {
		first[c] = i
	}
	sort.SliceStable(cells, func(i, j int) bool {
		for k, a := range axes {
			vi, vj := fmt.Sprint(cells[i].Params[k].Value), fmt.Sprint(cells[j].Params[k].Value)
			if vi == vj {
				continue
			}
			ri, oki := rank[a][vi]
			rj, okj := rank[a][vj]
			if oki && okj {
				return ri < rj
			}
			if oki != okj {
				return oki
			}
			return first[cells[i]] < first[cells[j]]
		}
		return false
	})
}

// applyBaseline fills Cell.Baseline from "axis=value".
func (s *Summary) applyBaseline(spec string) error {
	name, value, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return fmt.Errorf("parsing baseline %q: want axis=value", spec)
	}
	idx := -1
	for i, a := range s.Axes {
		if a == name {
			idx = i
		}
	}
	if idx < 0 {
		return fmt.Errorf("parsing baseline %q: no matrix axis %q (axes: %s)", spec, name, strings.Join(s.Axes, ", "))
	}
	baseKey := func(c *Cell) string {
		var b strings.Builder
		for i, p := range c.Params {
			if i != idx {
				fmt.Fprintf(&b, "%s=%v\x00", p.Name, p.Value)
			}
		}
		b.WriteString(c.Step)
		return b.String()
	}
	bases := map[string]*Cell{}
	for _, c := range s.Cells {
		if fmt.Sprint(c.Params[idx].Value) == value {
			bases[baseKey(c)] = c
		}
	}
	if len(bases) == 0 {
		var vals []string
		seen := map[string]bool{}
		for _, c := range s.Cells {
			v := fmt.Sprint(c.Params[idx].Value)
			if !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
		return fmt.Errorf("parsing baseline %q: no cell has %s=%s (values: %s)", spec, name, value, strings.Join(vals, ", "))
	}
	for _, c := range s.Cells {
		b := bases[baseKey(c)]
		if b == nil || b.N == 0 || c.N == 0 {
			continue
		}
		r := pairedBaseline(c, b)
		c.Baseline = &r
	}
	return nil
}

// processCPU is, per trial, the mean CPU% of each process name: PIDs of a
// name are summed per sample time, then averaged over sample times. The
// processes table is read in trial order (a trial's rows are
// consecutive), so only the current trial's samples are held.
func processCPU(run *results.Run) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	sums := map[string]map[float64]float64{} // process -> sample time -> CPU% of the current trial
	cur := ""
	flush := func() {
		for proc, byT := range sums {
			// Summed in time order: a float sum in map order differs in
			// its last digits from one report to the next.
			ts := make([]float64, 0, len(byT))
			for t := range byT {
				ts = append(ts, t)
			}
			sort.Float64s(ts)
			total := 0.0
			for _, t := range ts {
				total += byT[t]
			}
			if out[cur] == nil {
				out[cur] = map[string]float64{}
			}
			out[cur][proc] = total / float64(len(byT))
		}
		clear(sums)
	}
	hosts := map[string]bool{}
	err := run.EachProcess(func(p *results.ProcessRow) error {
		if p.Role == "other" {
			return nil // outside the run: in the verdict and the budget (explain.go)
		}
		if p.TrialID != cur {
			flush()
			cur = p.TrialID
		}
		name := p.Process
		if p.OutsideRun {
			// Matched by name, not the run's: never added to the run's
			// process of the same name.
			name += collect.OutsideRunSuffix
		}
		// Per machine: samples of two hosts are not summed.
		key := name + "\x00" + p.Host
		hosts[p.Host] = true
		if sums[key] == nil {
			sums[key] = map[float64]float64{}
		}
		sums[key][p.TS] += p.CPUPct
		return nil
	})
	flush()
	if len(hosts) <= 1 {
		// One machine: names alone, as before the host column.
		for t, m := range out {
			byName := make(map[string]float64, len(m))
			for k, v := range m {
				name, _, _ := strings.Cut(k, "\x00")
				byName[name] += v
			}
			out[t] = byName
		}
	}
	return out, err
}

func topProcesses(procs map[string]map[string]float64, trials []string, n int) []ProcessCPU {
	sum := map[string]float64{}
	for _, t := range trials {
		for p, v := range procs[t] {
			sum[p] += v
		}
	}
	var out []ProcessCPU
	for p, v := range sum {
		name, host, _ := strings.Cut(p, "\x00")
		out = append(out, ProcessCPU{Process: name, Host: host, CPUPct: v / float64(len(trials))})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CPUPct != out[j].CPUPct {
			return out[i].CPUPct > out[j].CPUPct
		}
		return out[i].Label() < out[j].Label()
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
