package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/benchflow/benchflow/engine/scratch"
)

// batchRows bounds the rows held in one Arrow record while writing.
const batchRows = 64 * 1024

// Table file names without extension.
const (
	TableTrials     = "trials"
	TableLatency    = "latency"
	TableTimeseries = "timeseries"
	TableProcesses  = "processes"
	TableSystem     = "system"
	TableNetwork    = "network"
	TableProbes     = "probes"
)

// TableFile returns the file name of a table in format ("trials.parquet").
func TableFile(table, format string) string {
	if format == FormatArrow {
		return table + ".arrow"
	}
	return table + ".parquet"
}

// buildRecord converts rows into one Arrow record of schema (which must
// match cols). The caller releases it.
func buildRecord[R any](mem memory.Allocator, schema *arrow.Schema, cols []column[R], rows []R) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for c := range cols {
		cols[c].put(b.Field(c), rows)
	}
	return b.NewRecordBatch()
}

// writeTable writes rows to path (atomically) as Parquet (zstd) or Arrow
// IPC (zstd), with the schema version in the key-value metadata.
func writeTable[R any](mem memory.Allocator, j *scratch.Journal, path, format string, cols []column[R], rows []R) error {
	return writeTableVia(writeFileAtomic, mem, j, path, format, cols, rows)
}

// putFunc writes a file through write: writeFileAtomic for a run's
// tables, (*scratch.Journal).WriteOutput for a file a user named.
type putFunc func(j *scratch.Journal, path string, write func(f *os.File) error) error

// writeOutput writes what a user named (load --out): a device or a FIFO
// is written in place, a regular file or an absent path atomically.
func writeOutput(j *scratch.Journal, path string, write func(f *os.File) error) error {
	return j.WriteOutput(path, 0o644, write)
}

func writeTableVia[R any](put putFunc, mem memory.Allocator, j *scratch.Journal, path, format string, cols []column[R], rows []R) error {
	schema := schemaOf(cols)
	var recs []arrow.RecordBatch
	for off := 0; off < len(rows); off += batchRows {
		rec := buildRecord(mem, schema, cols, rows[off:min(off+batchRows, len(rows))])
		defer rec.Release()
		recs = append(recs, rec)
	}
	return writeRecordsVia(put, mem, j, path, format, schema, recs, nil)
}

// writeRecords writes recs (all of schema) to path atomically; Parquet row
// groups hold up to a million rows whatever the size of the records.
// With runs (a per-trial table), recs hold only the columns after the id
// columns and runs[i] the id columns of recs[i] (see trialData).
func writeRecords(mem memory.Allocator, j *scratch.Journal, path, format string, schema *arrow.Schema, recs []arrow.RecordBatch, runs []idRuns) error {
	return writeRecordsVia(writeFileAtomic, mem, j, path, format, schema, recs, runs)
}

func writeRecordsVia(put putFunc, mem memory.Allocator, j *scratch.Journal, path, format string, schema *arrow.Schema, recs []arrow.RecordBatch, runs []idRuns) error {
	var nonEmpty []arrow.RecordBatch
	var nonEmptyRuns []idRuns
	for i, r := range recs {
		if r != nil && r.NumRows() > 0 {
			nonEmpty = append(nonEmpty, r)
			if runs != nil {
				nonEmptyRuns = append(nonEmptyRuns, runs[i])
			}
		}
	}
	// Many small records (one per trial) cost a fixed overhead each in the
	// Parquet writer: write them as one. For Parquet, the id columns repeat
	// one value over long runs of rows: they become dictionary arrays
	// (built without hashing every value), which the writer stores as a
	// dictionary page and run-length encoded indices; the file's column
	// type stays string.
	var one arrow.RecordBatch
	var dictCols []string
	if len(nonEmpty) > 0 {
		var err error
		one, dictCols, err = concatRecords(mem, schema, nonEmpty, nonEmptyRuns, format != FormatArrow)
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		defer one.Release()
	}
	return put(j, path, func(f *os.File) error {
		if format == FormatArrow {
			w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd())
			if err != nil {
				return err
			}
			if one != nil {
				if err := w.Write(one); err != nil {
					w.Close()
					return err
				}
			}
			return w.Close()
		}
		schema := schema
		if one != nil {
			schema = one.Schema()
		}
		opts := []parquet.WriterProperty{
			parquet.WithAllocator(mem),
			parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithMaxRowGroupLength(1 << 20),
			// Dictionary encoding costs a hash lookup per value; ids
			// repeat on consecutive rows, which zstd compresses as well.
			parquet.WithDictionaryDefault(false),
			// Min/max statistics of strings cost a comparison per value:
			// run_id is one value per file and step a handful, so only
			// trial_id keeps them (for row-group pruning in queries).
			parquet.WithStatsFor("run_id", false),
			parquet.WithStatsFor("step", false),
		}
		for _, c := range dictCols {
			opts = append(opts, parquet.WithDictionaryFor(c, true))
		}
		props := parquet.NewWriterProperties(opts...)
		// The writer closes an io.Closer on Close; the file must stay open
		// for the fsync, so hide its Close method.
		return writeParquet(struct{ io.Writer }{f}, schema, one, props)
	})
}

// idColumns are the columns concatRecords may turn into dictionaries.
var idColumns = map[string]bool{"run_id": true, "trial_id": true, "step": true}

// idNames are the first three columns of every per-trial table, in order.
var idNames = [numIDs]string{"run_id", "trial_id", "step"}

const numIDs = 3

// idRun is a run of consecutive rows holding one value of an id column.
type idRun struct {
	val string
	n   int
}

// idRuns are a per-trial record's run_id, trial_id and step columns as
// runs of equal values, listed when the trial is sealed (a few runs per
// trial) so that joining the trials' id columns into dictionaries does
// not compare millions of strings at every commit.
type idRuns [numIDs][]idRun

// concatRecords concatenates records (of schema) column by column, one
// goroutine per column. With dict, the id columns (string, without nulls)
// become dictionary arrays; the record's schema then says so and dictCols
// names them. With runs, recs hold only the columns after the ids, which
// runs describe (see writeRecords). The caller releases the record.
func concatRecords(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch, runs []idRuns, dict bool) (rec arrow.RecordBatch, dictCols []string, err error) {
	fields := append([]arrow.Field(nil), schema.Fields()...)
	cols := make([]arrow.Array, len(fields))
	errs := make([]error, len(fields))
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	var wg sync.WaitGroup
	for c := range cols {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cols[c], errs[c] = concatColumn(mem, fields[c].Name, c, recs, runs, dict)
		}()
	}
	wg.Wait()
	release := func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}
	for c, err := range errs {
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("concatenating column %s: %w", fields[c].Name, err)
		}
	}
	defer release()
	for c, a := range cols {
		if a.DataType().ID() == arrow.DICTIONARY {
			fields[c].Type = a.DataType()
			dictCols = append(dictCols, fields[c].Name)
		}
	}
	out := schema
	if len(dictCols) > 0 {
		md := schema.Metadata()
		out = arrow.NewSchema(fields, &md)
	}
	return array.NewRecordBatch(out, cols, rows), dictCols, nil
}

// concatColumn joins column c (named name) of the table: a dictionary
// array for an id column when dict is set, else one array of the column's
// type.
func concatColumn(mem memory.Allocator, name string, c int, recs []arrow.RecordBatch, runs []idRuns, dict bool) (arrow.Array, error) {
	if runs != nil {
		if c < numIDs {
			col := make([][]idRun, len(runs))
			for i := range runs {
				col[i] = runs[i][c]
			}
			if dict {
				return runsDictionary(mem, col), nil
			}
			return runsStrings(mem, col), nil
		}
		c -= numIDs
	}
	parts := make([]arrow.Array, len(recs))
	for i, r := range recs {
		parts[i] = r.Column(c)
	}
	if dict && idColumns[name] {
		if d := stringDictionary(mem, parts); d != nil {
			return d, nil
		}
	}
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	return array.Concatenate(parts, mem)
}

// runsDictionary builds the dictionary array (int32 indices; values in
// order of first appearance) of the rows that runs describe, part after
// part: one lookup per run, not per row.
func runsDictionary(mem memory.Allocator, runs [][]idRun) *array.Dictionary {
	n := 0
	for _, p := range runs {
		for _, r := range p {
			n += r.n
		}
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(arrow.Int32Traits.BytesRequired(n))
	defer buf.Release()
	idx := arrow.Int32Traits.CastFromBytes(buf.Bytes())
	vals := array.NewStringBuilder(mem)
	defer vals.Release()
	seen := map[string]int32{}
	row := 0
	for _, p := range runs {
		for _, r := range p {
			k, ok := seen[r.val]
			if !ok {
				k = int32(len(seen))
				seen[r.val] = k
				vals.Append(r.val)
			}
			fill := idx[row : row+r.n]
			for i := range fill {
				fill[i] = k
			}
			row += r.n
		}
	}
	return newStringDictionary(mem, buf, n, vals)
}

// newStringDictionary makes the dictionary array of n int32 indices in
// buf and the values in vals.
func newStringDictionary(mem memory.Allocator, buf *memory.Buffer, n int, vals *array.StringBuilder) *array.Dictionary {
	data := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer data.Release()
	indices := array.MakeFromData(data)
	defer indices.Release()
	dict := vals.NewArray()
	defer dict.Release()
	typ := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	return array.NewDictionaryArray(typ, indices, dict)
}

// stringDictionary joins string arrays without nulls into one dictionary
// array (int32 indices; values in order of first appearance). Only a change
// of value from one row to the next is looked up. It returns nil when some
// part is not such an array.
func stringDictionary(mem memory.Allocator, parts []arrow.Array) *array.Dictionary {
	n := 0
	for _, p := range parts {
		if s, ok := p.(*array.String); !ok || s.NullN() > 0 {
			return nil
		}
		n += p.Len()
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(arrow.Int32Traits.BytesRequired(n))
	defer buf.Release()
	idx := arrow.Int32Traits.CastFromBytes(buf.Bytes())
	vals := array.NewStringBuilder(mem)
	defer vals.Release()
	seen := map[string]int32{}
	last, cur, row := "", int32(-1), 0
	for _, p := range parts {
		a := p.(*array.String)
		for i := 0; i < a.Len(); i++ {
			if v := a.Value(i); cur < 0 || v != last {
				k, ok := seen[v]
				if !ok {
					k = int32(len(seen))
					seen[strings.Clone(v)] = k
					vals.Append(v)
				}
				last, cur = v, k
			}
			idx[row] = cur
			row++
		}
	}
	return newStringDictionary(mem, buf, n, vals)
}

// readTable reads path back into rows. cols maps the file's schema to
// columns (columns missing from the file keep zero values; unknown ones
// are ignored); columns named in omit are not read (Parquet) or not
// converted (Arrow IPC). A missing file yields no rows and no error. The
// file's footer and schema are checked first (validate.go).
func readTable[R any](mem memory.Allocator, path, format string, cols func(*arrow.Schema) []column[R], omit ...string) ([]R, error) {
	var rows []R
	_, err := scanTable(mem, path, format, cols, omit,
		func(n int64) { rows = make([]R, 0, n) },
		func(batch []R) error {
			if rows == nil {
				rows = batch
			} else {
				rows = append(rows, batch...)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// scanTable reads path in batches of at most batchRows rows, each a new
// slice passed to emit; reserve (if not nil) learns the file's row count
// first, bounded by what its bytes can hold. With a nil emit only the
// file's footer and schema are checked. found reports whether the file
// exists (a missing file is no error).
func scanTable[R any](mem memory.Allocator, path, format string, cols func(*arrow.Schema) []column[R], omit []string, reserve func(int64), emit func([]R) error) (found bool, err0 error) {
	// A damaged file can make the Parquet reader panic on impossible
	// sizes; report it as an error naming the file instead.
	defer func() {
		if r := recover(); r != nil {
			if le, ok := r.(*LimitError); ok {
				err0 = fmt.Errorf("reading %s: %w", path, le)
				return
			}
			err0 = fmt.Errorf("reading %s: the file is damaged (%v)", path, r)
		}
	}()
	f, fi, err := openRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	table := tableOfPath(path)
	// What the file decodes to is bounded (limits.go): the allocator
	// refuses to hold more than a table's limit, and each record's
	// values are counted before they become rows.
	mem = newLimitAlloc(mem, table)
	var decoded int64
	check := func(s *arrow.Schema) error {
		if err := checkSchema(table, s, cols(s)); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		return nil
	}
	each := func(rec arrow.RecordBatch, cs []column[R], idx []int) error {
		if err := checkDecodedRecord(rec, table, &decoded); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		rows := make([]R, rec.NumRows())
		for c := range cs {
			if idx[c] >= 0 {
				cs[c].get(rec.Column(idx[c]), rows)
			}
		}
		return emit(rows)
	}
	omitted := func(name string) bool {
		for _, o := range omit {
			if o == name {
				return true
			}
		}
		return false
	}
	resolve := func(s *arrow.Schema) ([]column[R], []int) {
		cs := cols(s)
		idx := make([]int, len(cs))
		for i, c := range cs {
			idx[i] = -1
			if j := s.FieldIndices(c.name); len(j) > 0 && !omitted(c.name) {
				idx[i] = j[0]
			}
		}
		return cs, idx
	}
	if format == FormatArrow {
		return true, scanArrow(mem, f, path, check, resolve, each, emit == nil)
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", path, err)
	}
	defer pf.Close()
	if err := checkParquetSizes(pf, fi.Size()); err != nil {
		return true, fmt.Errorf("reading %s: the file is damaged: %w", path, err)
	}
	if err := checkDecodedParquet(pf, table); err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return true, fmt.Errorf("reading %s: %w", path, err)
		}
		return true, fmt.Errorf("reading %s: the file is damaged: %w", path, err)
	}
	// The id columns are read as dictionary arrays: one string per
	// distinct value instead of one per row.
	// A batch no larger than the file: a part's file holds one trial's
	// rows, and the readers size their buffers by the batch.
	rprops := pqarrow.ArrowReadProperties{BatchSize: max(1, min(batchRows, pf.NumRows()))}
	for i := 0; i < pf.MetaData().Schema.NumColumns(); i++ {
		if c := pf.MetaData().Schema.Column(i); idColumns[c.Name()] && c.PhysicalType() == parquet.Types.ByteArray {
			rprops.SetReadDict(i, true)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, rprops, mem)
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", path, err)
	}
	full, err := fr.Schema()
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := check(withFileMetadata(full, pf)); err != nil {
		return true, err
	}
	if emit == nil {
		return true, nil
	}
	if reserve != nil {
		// Reserve only as many rows as the file's bytes could hold one
		// per byte; a denser file grows as it is decoded.
		reserve(min(pf.NumRows(), fi.Size()))
	}
	var want []int // nil: every column
	if len(omit) > 0 {
		for i, f := range full.Fields() {
			if !omitted(f.Name) {
				want = append(want, i)
			}
		}
	}
	rr, err := fr.GetRecordReader(context.Background(), want, nil)
	if err != nil {
		return true, fmt.Errorf("reading %s: %w", path, err)
	}
	defer rr.Release()
	cs, idx := resolve(rr.Schema())
	for {
		rec, err := rr.Read()
		if rec != nil {
			if err := each(rec, cs, idx); err != nil {
				return true, err
			}
		}
		if err == io.EOF || (err == nil && rec == nil) {
			break
		}
		if err != nil {
			return true, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return true, nil
}

// scanArrow is scanTable for an Arrow IPC file f: its schema checked,
// then (unless checkOnly) each record batch passed to each.
func scanArrow[R any](mem memory.Allocator, f *os.File, path string, check func(*arrow.Schema) error, resolve func(*arrow.Schema) ([]column[R], []int), each func(arrow.RecordBatch, []column[R], []int) error, checkOnly bool) error {
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer r.Close()
	if err := check(r.Schema()); err != nil {
		return err
	}
	if checkOnly {
		return nil
	}
	cs, idx := resolve(r.Schema())
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if err := each(rec, cs, idx); err != nil {
			return err
		}
	}
	return nil
}

func fixed[R any](cols []column[R]) func(*arrow.Schema) []column[R] {
	return func(*arrow.Schema) []column[R] { return cols }
}

// trialColumnsFor finds the param_<axis> columns of a trials file.
func trialColumnsFor(s *arrow.Schema) []column[TrialRow] {
	return trialColumns(axesOf(s))
}

func axesOf(s *arrow.Schema) []axis {
	var axes []axis
	for _, f := range s.Fields() {
		if len(f.Name) > len("param_") && f.Name[:len("param_")] == "param_" {
			axes = append(axes, axis{Name: f.Name[len("param_"):], Kind: kindOf(f.Type)})
		}
	}
	return axes
}

// readSchema returns the Arrow schema of a table file.
func readSchema(mem memory.Allocator, path, format string) (*arrow.Schema, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	if format == FormatArrow {
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		defer r.Close()
		return r.Schema(), nil
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer pf.Close()
	if err := checkParquetSizes(pf, fi.Size()); err != nil {
		return nil, fmt.Errorf("reading %s: the file is damaged: %w", path, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return fr.Schema()
}

// withFileMetadata is s with the Parquet file's key-value metadata (where
// benchflow.schema_version is), which the Arrow schema of a file read
// back does not carry.
func withFileMetadata(s *arrow.Schema, pf *file.Reader) *arrow.Schema {
	kv := pf.MetaData().KeyValueMetadata()
	var keys, vals []string
	for _, k := range kv.Keys() {
		if v := kv.FindValue(k); v != nil {
			keys, vals = append(keys, k), append(vals, *v)
		}
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(s.Fields(), &md)
}
