package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

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

// writeTable writes rows to path (atomically) as Parquet (zstd) or Arrow
// IPC (zstd), with the schema version in the key-value metadata.
func writeTable[R any](mem memory.Allocator, path, format string, cols []column[R], rows []R) error {
	schema := schemaOf(cols)
	return writeFileAtomic(path, func(f *os.File) error {
		var (
			write func(arrow.RecordBatch) error
			close func() error
		)
		if format == FormatArrow {
			w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd())
			if err != nil {
				return err
			}
			write, close = w.Write, w.Close
		} else {
			props := parquet.NewWriterProperties(
				parquet.WithAllocator(mem),
				parquet.WithCompression(compress.Codecs.Zstd),
				parquet.WithMaxRowGroupLength(1<<20),
			)
			// The writer closes an io.Closer on Close; the file must stay
			// open for the fsync, so hide its Close method.
			w, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
			if err != nil {
				return err
			}
			write, close = w.Write, w.Close
		}
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		flush := func() error {
			rec := b.NewRecordBatch()
			defer rec.Release()
			return write(rec)
		}
		for i := range rows {
			r := &rows[i]
			for c := range cols {
				cols[c].put(b.Field(c), r)
			}
			if (i+1)%batchRows == 0 {
				if err := flush(); err != nil {
					close()
					return err
				}
			}
		}
		if len(rows)%batchRows != 0 || len(rows) == 0 {
			if err := flush(); err != nil {
				close()
				return err
			}
		}
		return close()
	})
}

// readTable reads path back into rows. cols maps the file's schema to
// columns (columns missing from the file keep zero values; unknown ones
// are ignored). A missing file yields no rows and no error.
func readTable[R any](mem memory.Allocator, path, format string, cols func(*arrow.Schema) []column[R]) ([]R, error) {
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
		rows = append(rows, make([]R, n)...)
		for c := range cs {
			if idx[c] < 0 {
				continue
			}
			arr := rec.Column(idx[c])
			for i := 0; i < n; i++ {
				cs[c].get(arr, i, &rows[base+i])
			}
		}
	}
	resolve := func(s *arrow.Schema) ([]column[R], []int) {
		cs := cols(s)
		idx := make([]int, len(cs))
		for i, c := range cs {
			idx[i] = -1
			if j := s.FieldIndices(c.name); len(j) > 0 {
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
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, mem)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
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
