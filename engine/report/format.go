package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/benchflow/benchflow/engine/escape"
	"github.com/benchflow/benchflow/engine/stats"
	"github.com/benchflow/benchflow/engine/units"
)

// Formats Write accepts.
var Formats = []string{"text", "markdown", "csv", "json"}

// Write renders the summary as text (aligned columns), markdown (a GFM
// table), csv (raw numbers, latencies in µs) or json.
func (s *Summary) Write(w io.Writer, format string) error {
	switch format {
	case "", "text":
		return s.writeText(w)
	case "markdown", "md":
		return s.writeMarkdown(w)
	case "csv":
		return s.writeCSV(w)
	case "json":
		return s.writeJSON(w)
	default:
		return fmt.Errorf("writing report: unknown format %q (want %s)", format, strings.Join(Formats, ", "))
	}
}

// header and rows are shared by text and markdown.
func (s *Summary) table() (header []string, rows [][]string) {
	header = append(header, s.Axes...)
	if s.multiStep {
		header = append(header, "step")
	}
	header = append(header, "n", "req/s", "95% CI", "method", "p50 ms", "p99 ms", "p99.9 ms", "errors")
	if s.Baseline != "" {
		header = append(header, "vs "+s.Baseline)
	}
	capacity := s.hasCapacity()
	if capacity {
		header = append(header, "capacity req/s", "limit")
	}
	header = append(header, "flags", "top processes (CPU%)")
	verdicts := s.hasVerdicts()
	if verdicts {
		header = append(header, "verdict")
	}
	_, notes := s.verdictNotes()
	for _, c := range s.Cells {
		var row []string
		for _, p := range c.Params {
			row = append(row, fmt.Sprint(valueOrDash(p.Value)))
		}
		if s.multiStep {
			row = append(row, c.Step)
		}
		row = append(row, strconv.Itoa(len(c.used())))
		if c.N == 0 {
			row = append(row, "-", "-", "-", "-", "-", "-")
		} else {
			row = append(row, units.FormatRate(c.RPS.Value), fmtCI(c.RPS, units.FormatRate), c.RPS.MethodLabel(), units.FormatMS(c.P50US), units.FormatMS(c.P99US), units.FormatMS(c.P999US))
		}
		row = append(row, fmtErrors(c.Errors, c.Requests))
		if s.Baseline != "" {
			if c.Baseline == nil {
				row = append(row, "-")
			} else {
				row = append(row, fmtRatio(*c.Baseline))
			}
		}
		if capacity {
			row = append(row, c.capacityCells()...)
		}
		row = append(row, orDash(c.flags()))
		var ps []string
		for _, p := range c.Processes {
			ps = append(ps, fmt.Sprintf("%s %.1f", p.Label(), p.CPUPct))
		}
		if len(ps) == 0 {
			ps = []string{"-"}
		}
		row = append(row, strings.Join(ps, ", "))
		if verdicts {
			row = append(row, c.Verdict.Word(notes[c]))
		}
		rows = append(rows, row)
	}
	return header, rows
}

func valueOrDash(v any) any {
	if v == nil {
		return "-"
	}
	return v
}

func (s *Summary) title() string {
	return fmt.Sprintf("run %s · pipeline %s · status %s · %d/%d trials ok", s.RunID, s.Pipeline, s.Status, s.TrialsOK, s.Trials)
}

// writeText writes the text report; every line but the table's is
// wrapped to TextWidth columns (the table's cells are short: the
// verdict's evidence is in notes below it).
func (s *Summary) writeText(w io.Writer) error {
	var head, tail bytes.Buffer
	fmt.Fprintln(&head, s.title())
	fmt.Fprintln(&head)
	s.writeNotices(&head, "")
	if _, err := io.WriteString(w, wrapLines(head.String(), TextWidth)); err != nil {
		return err
	}
	header, rows := s.table()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s.writeVerdictNotes(&tail, "")
	if err := s.writeClaimsText(&tail); err != nil {
		return err
	}
	s.writeMethod(&tail, "")
	if err := s.writeWarnings(&tail, ""); err != nil {
		return err
	}
	_, err := io.WriteString(w, wrapLines(tail.String(), TextWidth))
	return err
}

// wrapLines wraps each line of s longer than width at spaces, the
// continuation indented as the line is, plus two.
func wrapLines(s string, width int) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		body := strings.TrimSuffix(l, "\n")
		if utf8.RuneCountInString(body) <= width {
			b.WriteString(l)
			continue
		}
		ind := body[:len(body)-len(strings.TrimLeft(body, " "))]
		for _, part := range wrapText(body, width, ind+"  ") {
			b.WriteString(part + "\n")
		}
	}
	return b.String()
}

func (s *Summary) writeWarnings(w io.Writer, prefix string) error {
	if len(s.Warnings) > 0 {
		fmt.Fprintln(w)
	}
	for _, m := range s.Warnings {
		if _, err := fmt.Fprintf(w, "%swarning: %s\n", prefix, lineText(prefix, m)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Summary) writeMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "**%s**\n\n", mdEscape(s.title()))
	s.writeNotices(w, mdPrefix)
	header, rows := s.table()
	writeMDRow(w, header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
		if i >= len(s.Axes) && header[i] != "step" && header[i] != "verdict" && !strings.HasPrefix(header[i], "top processes") {
			sep[i] = "---:"
		}
	}
	writeMDRow(w, sep)
	for _, r := range rows {
		writeMDRow(w, r)
	}
	s.writeVerdictNotes(w, mdPrefix)
	s.writeClaimsMarkdown(w)
	s.writeMethod(w, mdPrefix)
	return s.writeWarnings(w, mdPrefix)
}

// TextWidth is the width the text report's notes are wrapped to.
const TextWidth = 200

// writeVerdictNotes prints the verdicts' evidence below the table, one
// numbered note per cell the table refers to; in text each note is
// wrapped to TextWidth columns.
func (s *Summary) writeVerdictNotes(w io.Writer, prefix string) {
	notes, _ := s.verdictNotes()
	if len(notes) == 0 {
		return
	}
	fmt.Fprintln(w)
	if prefix == mdPrefix {
		fmt.Fprintf(w, "%sverdicts:  \n", prefix)
		for _, n := range notes {
			fmt.Fprintf(w, "%s%s  \n", prefix, lineText(prefix, n))
		}
		return
	}
	fmt.Fprintln(w, "verdicts:")
	for _, n := range notes {
		for _, l := range wrapText(n, TextWidth-2, "      ") {
			fmt.Fprintln(w, "  "+l)
		}
	}
}

// wrapText cuts s at spaces into lines of at most width runes, the first
// keeping s's leading spaces, the others indented by indent; a word
// longer than a line stays whole.
func wrapText(s string, width int, indent string) []string {
	var out []string
	line := ""
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = lead + word
			if len(out) > 0 {
				line = indent + word
			}
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width:
			out = append(out, line)
			line = indent + word
		default:
			line += " " + word
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// mdPrefix starts the lines of notes, warnings and the method in
// Markdown (a quote); lineText escapes what follows it.
const mdPrefix = "> "

// lineText is one line of a note or warning after prefix: as it is in
// text, escaped (engine/escape) in Markdown.
func lineText(prefix, s string) string {
	if prefix == mdPrefix {
		return mdEscape(s)
	}
	return s
}

func writeMDRow(w io.Writer, cells []string) {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = mdEscape(c)
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(esc, " | "))
}

// mdEscape is engine/escape's Markdown: HTML shown as text, pipes and
// line breaks kept inside their cell.
func mdEscape(s string) string { return escape.Markdown(s) }

func (s *Summary) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	var header []string
	for _, a := range s.Axes {
		header = append(header, "param_"+a)
	}
	header = append(header, "step", "n", "failed", "rps_mean", "rps_ci_low", "rps_ci_high",
		"latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_p999_us", "latency_max_us",
		"requests", "errors", "baseline_ratio", "baseline_ci_low", "baseline_ci_high", "top_processes",
		"rps_ci_method", "baseline_ci_method", "outliers", "rps_geomean", "unsteady",
		"latency_p99_us_rep_geomean", "latency_p99_us_rep_ci_low", "latency_p99_us_rep_ci_high", "rps_arith_mean")
	verdicts := s.hasVerdicts()
	if verdicts {
		header = append(header, csvVerdictHeader...)
	}
	capacity := s.hasCapacity()
	if capacity {
		header = append(header, "capacity_rps", "capacity_ci_low", "capacity_ci_high", "capacity_ci_method", "capacity_limit", "slo")
	}
	if len(s.Claims) > 0 {
		header = append(header, "claims") // name=outcome of the claims reading the cell; claims.parquet has the rest
	}
	if err := cw.Write(s.csvCells(header)); err != nil {
		return err
	}
	for _, c := range s.Cells {
		var row []string
		for _, p := range c.Params {
			if p.Value == nil {
				row = append(row, "")
			} else {
				row = append(row, fmt.Sprint(p.Value))
			}
		}
		row = append(row, c.Step, strconv.Itoa(c.N), strconv.Itoa(c.Failed),
			num(c.RPS.Value), num(c.RPS.Low), num(c.RPS.High),
			num(c.P50US), num(c.P90US), num(c.P99US), num(c.P999US), num(c.MaxUS),
			strconv.FormatInt(c.Requests, 10), strconv.FormatInt(c.Errors, 10))
		if c.Baseline != nil {
			row = append(row, num(c.Baseline.Value), num(c.Baseline.Low), num(c.Baseline.High))
		} else {
			row = append(row, "", "", "")
		}
		var ps []string
		for _, p := range c.Processes {
			ps = append(ps, fmt.Sprintf("%s=%.2f", p.Label(), p.CPUPct))
		}
		row = append(row, strings.Join(ps, ";"), c.RPS.Method)
		if c.Baseline != nil {
			row = append(row, c.Baseline.Method)
		} else {
			row = append(row, "")
		}
		row = append(row, c.outlierList(), num(c.RPS.Value), c.unsteadyList(),
			num(c.P99Reps.Value), num(c.P99Reps.Low), num(c.P99Reps.High), num(stats.Mean(c.usedRPS())))
		if verdicts {
			row = append(row, c.Verdict.csv()...)
		}
		if capacity {
			if cc := c.Capacity; cc != nil {
				row = append(row, num(cc.RPS.Value), num(cc.RPS.Low), num(cc.RPS.High), cc.RPS.Method, cc.limitLabel(), cc.SLO)
			} else {
				row = append(row, "", "", "", "", "", "")
			}
		}
		if len(s.Claims) > 0 {
			row = append(row, s.claimsFor(c))
		}
		if err := cw.Write(s.csvCells(row)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvCells are a csv record's cells as written: neutralised for
// spreadsheets (engine/escape's CSV) unless RawCSV.
func (s *Summary) csvCells(rec []string) []string {
	if s.RawCSV {
		return rec
	}
	return escape.CSVRecord(rec)
}

// num formats a float for csv: empty for NaN, shortest round-trip form.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// jsonInterval is an Interval with null bounds when unknown.
type jsonInterval struct {
	Value  float64  `json:"value"`
	Low    *float64 `json:"ci_low"`
	High   *float64 `json:"ci_high"`
	Method string   `json:"method"`
	N      int      `json:"n"`
}

func toJSONInterval(i stats.Interval) jsonInterval {
	j := jsonInterval{Value: finite(i.Value), Method: i.Method, N: i.N}
	if i.HasCI() {
		lo, hi := i.Low, i.High
		j.Low, j.High = &lo, &hi
	}
	return j
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func (c *Cell) MarshalJSON() ([]byte, error) {
	type plain Cell
	params := map[string]any{}
	for _, p := range c.Params {
		params[p.Name] = p.Value
	}
	var base *jsonInterval
	if c.Baseline != nil {
		b := toJSONInterval(*c.Baseline)
		base = &b
	}
	return json.Marshal(struct {
		Params   map[string]any `json:"params"`
		RPS      jsonInterval   `json:"rps"`
		Baseline *jsonInterval  `json:"baseline_ratio,omitempty"`
		P99Reps  jsonInterval   `json:"latency_p99_us_repetitions"`
		*plain
	}{params, toJSONInterval(c.RPS), base, toJSONInterval(c.P99Reps), (*plain)(c)})
}

func (s *Summary) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// Human formats (rates and latencies: units.FormatRate, units.FormatMS).

func fmtCI(i stats.Interval, f func(float64) string) string {
	if !i.HasCI() {
		return "-"
	}
	return "[" + f(i.Low) + ", " + f(i.High) + "]"
}

func fmtErrors(errs, reqs int64) string {
	if errs == 0 {
		return "0"
	}
	if reqs == 0 {
		return strconv.FormatInt(errs, 10)
	}
	return fmt.Sprintf("%d (%.2f%%)", errs, 100*float64(errs)/float64(reqs))
}

// fmtRatio is "0.912 [0.890, 0.934] paired log-t n=5": the estimate, its
// bounds and how they were computed (a range below 3 samples).
func fmtRatio(i stats.Interval) string {
	if math.IsNaN(i.Value) || math.IsInf(i.Value, 0) {
		return "-" // not a ratio: invalid data, or a cell of 0 req/s
	}
	s := strconv.FormatFloat(i.Value, 'f', 3, 64)
	if i.HasCI() {
		s += " [" + strconv.FormatFloat(i.Low, 'f', 3, 64) + ", " + strconv.FormatFloat(i.High, 'f', 3, 64) + "]"
	}
	if i.Method != "" {
		s += " " + i.MethodLabel()
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
