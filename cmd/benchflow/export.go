package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/escape"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/scratch"
)

func init() { rootCmd.AddCommand(newExportCmd()) }

// newExportCmd builds `benchflow export`.
func newExportCmd() *cobra.Command {
	var (
		table   string
		format  string
		wheres  []string
		columns string
		outFile string
		raw     bool
		all     bool
	)
	cmd := &cobra.Command{
		Use:   "export RUN",
		Short: "Print one table of a run as CSV or JSON lines, nothing else needed",
		Long: `export prints one table of a run, one line per row, as CSV with a header
(like sqlite3 -csv or duckdb -csv) or as JSON lines (one object per row, keys
in column order, like kubectl get -o json one item at a time). The columns
are the table's own, as docs/results.md lists them; it needs no Python, no
Parquet library and no database.

Tables: trials (default), latency, timeseries, processes, system, network,
probes, agents, claims. A table the run did not write prints its header only.

--where keeps the rows for which every filter holds; a filter is
COLUMN OP VALUE with OP one of = != > >= < <= (e.g. step=main, rps>1000,
status!=ok). Numbers compare as numbers, timestamps as RFC 3339 times,
true/false as booleans and everything else as text; an empty VALUE matches
an empty or null cell. Quote the filter in the shell: > and < redirect.

Rows: the attempts report uses. The attempts of a trial discarded because
the machine was busy (busy_rerun: discarded = true in trials, trial ids
ending in -a1, -a2 …) are left out of every table, as report leaves them out
of every estimate; --all-attempts prints them too.

Values: floats in the shortest decimal form that reads back exactly (never
an exponent: 1297407.5, 0.000012), timestamps in RFC 3339 (UTC), nulls as
an empty CSV field or JSON null.

RUN is a run directory (results/<run-id>) or a results folder, whose
"latest" run is used.`,
		Example: `  benchflow export results/latest > trials.csv
  benchflow export results/latest --where step=main --where 'rps>1000' --columns trial_id,rps,latency_p99_us
  benchflow export results/latest --table timeseries --format jsonl -o timeseries.jsonl
  benchflow export results/latest --all-attempts --columns trial_id,attempt,discarded,discarded_why`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "csv" && format != "jsonl" {
				return fmt.Errorf("unknown --format %q (want csv or jsonl)", format)
			}
			known := false
			for _, n := range results.TableNames {
				known = known || n == table
			}
			if !known {
				return fmt.Errorf("unknown --table %q.%s Tables: %s", table, diag.Suggest(table, results.TableNames), strings.Join(results.TableNames, ", "))
			}
			run, err := results.ReadRun(args[0])
			if err != nil {
				return err
			}
			t, err := run.Table(table)
			if err != nil {
				return err
			}
			if !all {
				dropDiscarded(run, t)
			}
			filters, err := parseWheres(wheres, t.Columns)
			if err != nil {
				return err
			}
			sel, err := selectColumns(columns, t.Columns)
			if err != nil {
				return err
			}
			if outFile == "" {
				return writeTable(cmd.OutOrStdout(), t, filters, sel, format, raw)
			}
			return writeFileAtomic(outFile, func(w io.Writer) error { return writeTable(w, t, filters, sel, format, raw) })
		},
	}
	cmd.Flags().StringVar(&table, "table", results.TableTrials, "the `TABLE` to print: "+strings.Join(results.TableNames, ", "))
	cmd.Flags().StringVar(&format, "format", "csv", "output format: csv or jsonl")
	cmd.Flags().StringArrayVar(&wheres, "where", nil, "keep rows where `COL<OP>VALUE` holds (OP: = != > >= < <=); repeatable, all must hold")
	cmd.Flags().StringVar(&columns, "columns", "", "print only these comma-separated `COLUMNS`, in this order")
	cmd.Flags().BoolVar(&raw, "raw", false, "with --format csv: write cells as they are, for programs (default: a cell beginning with =, +, -, @, a tab or a carriage return that is not a number gets a ' in front, so that a spreadsheet shows it as text instead of running it as a formula)")
	cmd.Flags().BoolVar(&all, "all-attempts", false, "also print the rows of attempts discarded because the machine was busy (left out by default, as report leaves them out of its estimates)")
	cmd.Flags().StringVarP(&outFile, "output", "o", "", "write to `FILE` instead of standard output (a regular file is replaced atomically; a device or FIFO such as /dev/null is written, never replaced)")
	return cmd
}

// dropDiscarded removes from t the rows of the attempts discarded because
// the machine was busy: by trial_id, the ids of the trials rows with
// discarded = true (a table without trial_id is left whole).
func dropDiscarded(run *results.Run, t *results.Table) {
	col := indexOf(t.Columns, "trial_id")
	if col < 0 {
		return
	}
	gone := map[string]bool{}
	for _, r := range run.Trials {
		if r.Discarded {
			gone[r.TrialID] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	kept := t.Rows[:0]
	for _, row := range t.Rows {
		if id, ok := row[col].(string); ok && gone[id] {
			continue
		}
		kept = append(kept, row)
	}
	t.Rows = kept
}

// filter is one --where: column index, operator, the value as given.
type filter struct {
	col   int
	name  string
	op    string
	value string
}

var filterOps = []string{">=", "<=", "!=", "=", ">", "<"}

func parseWheres(wheres, cols []string) ([]filter, error) {
	var fs []filter
	for _, w := range wheres {
		at, op := -1, ""
		for _, o := range filterOps {
			if i := strings.Index(w, o); i > 0 && (at < 0 || i < at || (i == at && len(o) > len(op))) {
				at, op = i, o
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("--where %q: want COLUMN OP VALUE with OP one of = != > >= < <= (e.g. step=main, 'rps>1000')", w)
		}
		name := strings.TrimSpace(w[:at])
		col := indexOf(cols, name)
		if col < 0 {
			return nil, fmt.Errorf("--where %q: the table has no column %q.%s Columns: %s", w, name, diag.Suggest(name, cols), strings.Join(cols, ", "))
		}
		fs = append(fs, filter{col: col, name: name, op: op, value: strings.TrimSpace(w[at+len(op):])})
	}
	return fs, nil
}

func selectColumns(list string, cols []string) ([]int, error) {
	if list == "" {
		sel := make([]int, len(cols))
		for i := range sel {
			sel[i] = i
		}
		return sel, nil
	}
	var sel []int
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		i := indexOf(cols, n)
		if i < 0 {
			return nil, fmt.Errorf("--columns: the table has no column %q.%s Columns: %s", n, diag.Suggest(n, cols), strings.Join(cols, ", "))
		}
		sel = append(sel, i)
	}
	return sel, nil
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// holds reports whether the cell v satisfies f. A value that does not
// parse as the cell's type is an error, so a typo never silently
// filters every row out.
func (f filter) holds(v any) (bool, error) {
	if f.value == "" && (f.op == "=" || f.op == "!=") {
		empty := v == nil || v == ""
		return empty == (f.op == "="), nil
	}
	if v == nil {
		return f.op == "!=", nil
	}
	var c int
	switch x := v.(type) {
	case int64, float64:
		want, err := strconv.ParseFloat(f.value, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return false, fmt.Errorf("--where %s%s%s: %s is a number column and %q is not a number", f.name, f.op, f.value, f.name, f.value)
		}
		if err != nil || math.IsNaN(want) || math.IsInf(want, 0) {
			// NaN compares false with everything and ±Inf (or 1e999,
			// out of range) with nothing a run records: either would
			// filter silently.
			return false, fmt.Errorf("--where %s%s%s: %s is a number column and %q is not a finite number", f.name, f.op, f.value, f.name, f.value)
		}
		got := toFloat(x)
		c = cmpFloat(got, want)
	case bool:
		want, err := strconv.ParseBool(f.value)
		if err != nil {
			return false, fmt.Errorf("--where %s%s%s: %s is true or false, not %q", f.name, f.op, f.value, f.name, f.value)
		}
		c = cmpFloat(b2f(x), b2f(want))
	case time.Time:
		want, err := time.Parse(time.RFC3339Nano, f.value)
		if err != nil {
			return false, fmt.Errorf("--where %s%s%s: %s is a timestamp; give it in RFC 3339 (2026-12-01T20:00:00Z)", f.name, f.op, f.value, f.name)
		}
		c = x.Compare(want)
	default:
		c = strings.Compare(fmt.Sprint(x), f.value)
	}
	switch f.op {
	case "=":
		return c == 0, nil
	case "!=":
		return c != 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	case "<":
		return c < 0, nil
	default:
		return c <= 0, nil
	}
}

func toFloat(v any) float64 {
	if i, ok := v.(int64); ok {
		return float64(i)
	}
	return v.(float64)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// writeTable prints the rows of t that pass filters, the columns sel, as
// csv or jsonl. Csv cells are neutralised for spreadsheets
// (engine/escape's CSV) unless raw.
func writeTable(w io.Writer, t *results.Table, filters []filter, sel []int, format string, raw bool) error {
	bw := bufio.NewWriter(w)
	var cw *csv.Writer
	if format == "csv" {
		cw = csv.NewWriter(bw)
		head := make([]string, len(sel))
		for i, c := range sel {
			head[i] = t.Columns[c]
		}
		if !raw {
			escape.CSVRecord(head)
		}
		if err := cw.Write(head); err != nil {
			return err
		}
	}
	rec := make([]string, len(sel))
rows:
	for _, row := range t.Rows {
		for _, f := range filters {
			ok, err := f.holds(row[f.col])
			if err != nil {
				return err
			}
			if !ok {
				continue rows
			}
		}
		if cw != nil {
			for i, c := range sel {
				rec[i] = csvValue(row[c])
			}
			if !raw {
				escape.CSVRecord(rec)
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
			continue
		}
		bw.WriteByte('{')
		for i, c := range sel {
			if i > 0 {
				bw.WriteByte(',')
			}
			k, _ := json.Marshal(t.Columns[c])
			bw.Write(k)
			bw.WriteByte(':')
			bw.Write(jsonValue(row[c]))
		}
		bw.WriteString("}\n")
	}
	if cw != nil {
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func csvValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		// Decimal, never an exponent (spreadsheets and awk read it).
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

func jsonValue(v any) []byte {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return []byte("null")
		}
		return []byte(strconv.FormatFloat(x, 'f', -1, 64))
	case time.Time:
		v = x.Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}

// writeFileAtomic writes path through a temporary file in its folder,
// renamed into place only when write succeeded; a device or a FIFO
// (/dev/null, /dev/stdout, a pipe) is written in place, never replaced
// (scratch.WriteOutput).
func writeFileAtomic(path string, write func(io.Writer) error) error {
	// The temporary file is recorded first: gc removes a killed export's.
	return scratch.Machine().WriteOutput(path, 0o600, func(f *os.File) error { return write(f) })
}
