package results

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeParquet writes rec (nil: no rows) to w as a Parquet file of
// schema, in row groups of at most props.MaxRowGroupLength() rows.
//
// It produces the file pqarrow.FileWriter would (same Parquet schema,
// the Arrow schema's metadata as key-value metadata, same encodings), but
// encodes and compresses the column chunks of a row group concurrently:
// pqarrow encodes one column after the other, and the latency table's
// few columns of millions of rows are most of a commit's work. The chunks
// are buffered in memory and written in column order when the row group
// is closed.
//
// Only flat tables are supported (every column a primitive, string or
// dictionary array), which is what the tables of a run are.
func writeParquet(w io.Writer, schema *arrow.Schema, rec arrow.RecordBatch, props *parquet.WriterProperties) error {
	for _, f := range schema.Fields() {
		if _, nested := f.Type.(arrow.NestedType); nested {
			return fmt.Errorf("column %s: nested types are not supported", f.Name)
		}
	}
	arrProps := pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(props.Allocator()))
	pqSchema, err := pqarrow.ToParquet(schema, props, arrProps)
	if err != nil {
		return err
	}
	md := schema.Metadata()
	kv := make(metadata.KeyValueMetadata, 0, md.Len())
	for i, k := range md.Keys() {
		kv.Append(k, md.Values()[i])
	}
	fw, err := file.NewParquetWriterWithError(w, pqSchema.Root(), file.WithWriterProps(props), file.WithWriteMetadata(kv))
	if err != nil {
		return err
	}
	if rec != nil {
		maxRows := props.MaxRowGroupLength()
		for off := int64(0); off < rec.NumRows(); off += maxRows {
			if err := writeRowGroup(fw, rec, off, min(off+maxRows, rec.NumRows()), arrProps); err != nil {
				fw.Close()
				return err
			}
		}
	}
	return fw.Close()
}

// writeRowGroup writes rows [from, to) of rec as one row group, one
// goroutine per column.
func writeRowGroup(fw *file.Writer, rec arrow.RecordBatch, from, to int64, arrProps pqarrow.ArrowWriterProperties) error {
	rgw, err := fw.AppendBufferedRowGroupChecked()
	if err != nil {
		return err
	}
	// Columns without nulls share one slice of definition levels (all
	// "present"): they are only read.
	present := make([]int16, to-from)
	for i := range present {
		present[i] = 1
	}
	errs := make([]error, rec.NumCols())
	var wg sync.WaitGroup
	for c := range errs {
		cw, err := rgw.Column(c)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			col := array.NewSlice(rec.Column(c), from, to)
			defer col.Release()
			errs[c] = writeColumn(cw, col, present, arrProps)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return rgw.Close()
}

// writeColumn writes a flat, nullable column's values as pqarrow does:
// definition level 1 for a value, 0 for a null.
func writeColumn(cw file.ColumnChunkWriter, col arrow.Array, present []int16, arrProps pqarrow.ArrowWriterProperties) error {
	def := present
	if col.NullN() > 0 {
		def = make([]int16, col.Len())
		for i := range def {
			if col.IsValid(i) {
				def[i] = 1
			}
		}
	}
	// The write context holds scratch buffers: one per column, since the
	// columns are written concurrently.
	ctx := pqarrow.NewArrowWriteContext(context.Background(), &arrProps)
	return pqarrow.WriteArrowToColumn(ctx, cw, col, def, nil, col.NullN() > 0)
}
