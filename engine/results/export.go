package results

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Table is one table of a run as plain rows, for `benchflow export`: the
// columns in file order and each row's values as string, int64, float64,
// bool, time.Time or nil (a null).
type Table struct {
	Name    string
	Columns []string
	Rows    [][]any
}

// TableNames lists the tables Run.Table returns, in docs/results.md order.
var TableNames = []string{TableTrials, TableLatency, TableTimeseries, TableProcesses,
	TableSystem, TableNetwork, TableProbes, TableAgents, TableClaims}

// Table returns one table of the run (a TableNames entry) with the columns
// and values the file holds, built from the rows ReadRun decoded with the
// same column definitions that write the files.
func (r *Run) Table(name string) (*Table, error) {
	mem := memory.DefaultAllocator
	switch name {
	case TableTrials:
		return tableOf(mem, name, trialColumns(r.axes), r.Trials), nil
	case TableLatency:
		return tableOf(mem, name, latencyColumns, r.Latency), nil
	case TableTimeseries:
		return tableOf(mem, name, timeseriesColumns, r.Timeseries), nil
	case TableProcesses:
		return tableOf(mem, name, processColumns, r.Processes), nil
	case TableSystem:
		return tableOf(mem, name, systemColumns, r.System), nil
	case TableNetwork:
		return tableOf(mem, name, networkColumns, r.Network), nil
	case TableProbes:
		return tableOf(mem, name, probeColumns, r.Probes), nil
	case TableAgents:
		return tableOf(mem, name, agentColumns, r.Agents), nil
	case TableClaims:
		rows, _, err := ReadClaims(r.Dir, r.Format)
		if err != nil {
			return nil, err
		}
		return tableOf(mem, name, claimColumns, rows), nil
	}
	return nil, fmt.Errorf("no table %q (tables: %s)", name, strings.Join(TableNames, ", "))
}

func tableOf[R any](mem memory.Allocator, name string, cols []column[R], rows []R) *Table {
	t := &Table{Name: name, Columns: make([]string, len(cols)), Rows: make([][]any, 0, len(rows))}
	for i, c := range cols {
		t.Columns[i] = c.name
	}
	schema := schemaOf(cols)
	for off := 0; off < len(rows); off += batchRows {
		batch := rows[off:min(off+batchRows, len(rows))]
		rec := buildRecord(mem, schema, cols, batch)
		for i := range batch {
			row := make([]any, len(cols))
			for c := range cols {
				row[c] = valueAt(rec.Column(c), i)
			}
			t.Rows = append(t.Rows, row)
		}
		rec.Release()
	}
	return t
}

func valueAt(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return strings.Clone(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		return time.UnixMicro(int64(a.Value(i))).UTC()
	}
	return a.ValueStr(i)
}
