package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
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
func writeTable[R any](mem memory.Allocator, path, format string, cols []column[R], rows []R) error {
	schema := schemaOf(cols)
	var recs []arrow.RecordBatch
	for off := 0; off < len(rows); off += batchRows {
		rec := buildRecord(mem, schema, cols, rows[off:min(off+batchRows, len(rows))])
		defer rec.Release()
		recs = append(recs, rec)
	}
	return writeRecords(mem, path, format, schema, recs)
}

// writeRecords writes recs (all of schema) to path atomically; Parquet row
// groups hold up to a million rows whatever the size of the records.
func writeRecords(mem memory.Allocator, path, format string, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	// Many small records (one per trial) cost a fixed overhead each in the
	// Parquet writer: write them as one.
	if len(recs) > 1 {
		one, err := concatRecords(mem, schema, recs)
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		defer one.Release()
		recs = []arrow.RecordBatch{one}
	}
	return writeFileAtomic(path, func(f *os.File) error {
		if format == FormatArrow {
			w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd())
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if rec == nil || rec.NumRows() == 0 {
					continue
				}
				if err := w.Write(rec); err != nil {
					w.Close()
					return err
				}
			}
			return w.Close()
		}
		// The id columns repeat one value over long runs of rows: they are
		// handed to the Parquet writer as dictionary arrays (built without
		// hashing every value), which it writes as a dictionary page and
		// run-length encoded indices. The file's column type stays string.
		recs, schema := recs, schema
		var dictCols []string
		if len(recs) == 1 && recs[0] != nil {
			one, s2, names := dictionaryIDs(mem, recs[0])
			defer one.Release()
			recs, schema, dictCols = []arrow.RecordBatch{one}, s2, names
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
		w, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if rec == nil || rec.NumRows() == 0 {
				continue
			}
			if err := w.Write(rec); err != nil {
				w.Close()
				return err
			}
		}
		return w.Close()
	})
}

// idColumns are the columns dictionaryIDs converts.
var idColumns = map[string]bool{"run_id": true, "trial_id": true, "step": true}

// dictionaryIDs returns rec with its id columns (string, no nulls) as
// dictionary arrays, the schema of the result and the names of the columns
// converted. Consecutive equal values cost a comparison; only a change of
// value is looked up in the dictionary. The caller releases the record.
func dictionaryIDs(mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, *arrow.Schema, []string) {
	schema := rec.Schema()
	fields := append([]arrow.Field(nil), schema.Fields()...)
	cols := make([]arrow.Array, len(fields))
	var names []string
	for i, f := range fields {
		col := rec.Column(i)
		str, ok := col.(*array.String)
		if !ok || !idColumns[f.Name] || str.NullN() > 0 {
			col.Retain()
			cols[i] = col
			continue
		}
		d := stringDictionary(mem, str)
		cols[i] = d
		fields[i].Type = d.DataType()
		names = append(names, f.Name)
	}
	md := schema.Metadata()
	out := arrow.NewSchema(fields, &md)
	r := array.NewRecordBatch(out, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return r, out, names
}

// stringDictionary converts a string array without nulls into a
// dictionary array (int32 indices; values in order of first appearance).
func stringDictionary(mem memory.Allocator, a *array.String) *array.Dictionary {
	n := a.Len()
	idx := array.NewInt32Builder(mem)
	defer idx.Release()
	idx.Reserve(n)
	vals := array.NewStringBuilder(mem)
	defer vals.Release()
	seen := map[string]int32{}
	last, cur := "", int32(-1)
	for i := 0; i < n; i++ {
		v := a.Value(i)
		if cur < 0 || v != last {
			k, ok := seen[v]
			if !ok {
				k = int32(len(seen))
				seen[strings.Clone(v)] = k
				vals.Append(v)
			}
			last, cur = v, k
		}
		idx.UnsafeAppend(cur)
	}
	indices := idx.NewArray()
	defer indices.Release()
	dict := vals.NewArray()
	defer dict.Release()
	typ := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	return array.NewDictionaryArray(typ, indices, dict)
}

// concatRecords concatenates records column by column.
func concatRecords(mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	parts := make([]arrow.Array, len(recs))
	for c := range cols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, fmt.Errorf("concatenating column %s: %w", schema.Field(c).Name, err)
		}
		cols[c] = a
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}

// readTable reads path back into rows. cols maps the file's schema to
// columns (columns missing from the file keep zero values; unknown ones
// are ignored); columns named in omit are not read (Parquet) or not
// converted (Arrow IPC). A missing file yields no rows and no error.
func readTable[R any](mem memory.Allocator, path, format string, cols func(*arrow.Schema) []column[R], omit ...string) (rows0 []R, err0 error) {
	// A damaged file can make the Parquet reader panic on impossible
	// sizes; report it as an error naming the file instead.
	defer func() {
		if r := recover(); r != nil {
			rows0, err0 = nil, fmt.Errorf("reading %s: the file is damaged (%v)", path, r)
		}
	}()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	var rows []R
	each := func(rec arrow.RecordBatch, cs []column[R], idx []int) {
		base := len(rows)
		n := int(rec.NumRows())
		// Grow in place (the Parquet path reserves every row up front):
		// appending a fresh zeroed batch would clear and copy it again.
		rows = slices.Grow(rows, n)[:base+n]
		for c := range cs {
			if idx[c] >= 0 {
				cs[c].get(rec.Column(idx[c]), rows[base:base+n])
			}
		}
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
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		defer r.Close()
		cs, idx := resolve(r.Schema())
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatch(i)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			each(rec, cs, idx)
		}
		return rows, nil
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer pf.Close()
	rows = make([]R, 0, pf.NumRows())
	// The id columns are read as dictionary arrays: one string per
	// distinct value instead of one per row.
	rprops := pqarrow.ArrowReadProperties{BatchSize: batchRows}
	for i := 0; i < pf.MetaData().Schema.NumColumns(); i++ {
		if c := pf.MetaData().Schema.Column(i); idColumns[c.Name()] && c.PhysicalType() == parquet.Types.ByteArray {
			rprops.SetReadDict(i, true)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, rprops, mem)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var want []int // nil: every column
	if len(omit) > 0 {
		full, err := fr.Schema()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		for i, f := range full.Fields() {
			if !omitted(f.Name) {
				want = append(want, i)
			}
		}
	}
	rr, err := fr.GetRecordReader(context.Background(), want, nil)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer rr.Release()
	cs, idx := resolve(rr.Schema())
	for {
		rec, err := rr.Read()
		if rec != nil {
			each(rec, cs, idx)
		}
		if err == io.EOF || (err == nil && rec == nil) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	return rows, nil
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
	f, err := os.Open(path)
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
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return fr.Schema()
}
