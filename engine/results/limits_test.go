package results

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

// bloatTable rewrites the trials table of the run in dir with rows rows
// whose column col holds one value of valueLen bytes, dictionary-encoded:
// a file of a few KiB that decodes to rows × valueLen bytes.
func bloatTable(t *testing.T, dir, format, col string, valueLen, rows int) string {
	t.Helper()
	mem := memory.DefaultAllocator
	path := filepath.Join(dir, TableFile(TableTrials, format))
	have, err := readTable(mem, path, format, trialColumnsFor)
	if err != nil || len(have) == 0 {
		t.Fatalf("reading %s: %v (%d rows)", path, err, len(have))
	}
	var many []TrialRow
	for len(many) < rows {
		many = append(many, have...)
	}
	many = many[:rows]
	cols := trialColumns(nil)
	schema := schemaOf(cols)
	rec := buildRecord(mem, schema, cols, many)
	defer rec.Release()

	// The column becomes a dictionary array: one value, every row's
	// index 0.
	ib := array.NewInt32Builder(mem)
	for range rows {
		ib.Append(0)
	}
	idx := ib.NewArray()
	sb := array.NewStringBuilder(mem)
	sb.Append(strings.Repeat("x", valueLen))
	dict := sb.NewArray()
	typ := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	darr := array.NewDictionaryArray(typ, idx, dict)
	defer darr.Release()
	fields := append([]arrow.Field(nil), schema.Fields()...)
	arrs := make([]arrow.Array, len(fields))
	found := false
	for i := range fields {
		arrs[i] = rec.Column(i)
		if fields[i].Name == col {
			fields[i].Type, arrs[i], found = typ, darr, true
		}
	}
	if !found {
		t.Fatalf("no column %s", col)
	}
	md := schema.Metadata()
	out := arrow.NewSchema(fields, &md)
	bloated := array.NewRecordBatch(out, arrs, int64(rows))
	defer bloated.Release()

	var buf bytes.Buffer
	if format == FormatArrow {
		w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(out), ipc.WithAllocator(mem), ipc.WithZstd())
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(bloated); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		props := parquet.NewWriterProperties(parquet.WithAllocator(mem),
			parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false),
			parquet.WithDictionaryFor(col, true), parquet.WithDictionaryPageSizeLimit(1<<30))
		if err := writeParquet(&buf, out, bloated, props); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readAllocating reads the run with ReadRun and returns its error and the
// bytes allocated meanwhile.
func readAllocating(t *testing.T, dir string) (error, uint64) {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadRun(dir)
	runtime.ReadMemStats(&after)
	return err, after.TotalAlloc - before.TotalAlloc
}

// TestReadBoundsDecodedSize: small table files whose dictionary-encoded
// strings decode to far more than they weigh are refused, naming the
// table, the column and the limit, in both formats, before the values
// are decoded: what the reader allocates stays far below what the file
// would decode to.
func TestReadBoundsDecodedSize(t *testing.T) {
	cases := []struct {
		name, format, col string
		valueLen, rows    int
		want              []string
	}{
		// The reported file: 8 MiB values on 256 rows (2 GiB decoded).
		{"8 MiB values, parquet", FormatParquet, "error", 8 << 20, 256,
			[]string{"table trials, column error: a value of 8388608 bytes", "over the limit of 1 MiB per value"}},
		{"8 MiB values, arrow", FormatArrow, "error", 8 << 20, 256,
			[]string{"table trials, column error: a value of 8388608 bytes", "over the limit of 1 MiB per value"}},
		// Beyond the reported input: another column, values under the
		// per-value limit on enough rows to pass the table's.
		{"900 KiB values on 4000 rows, parquet", FormatParquet, "verdict_evidence", 900 << 10, 4000,
			[]string{"table trials, column verdict_evidence", "over the limit of 2 GiB per table file"}},
		{"900 KiB values on 4000 rows, arrow", FormatArrow, "status", 900 << 10, 4000,
			[]string{"table trials, column status", "over the limit of 2 GiB per table file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyRun(t, finishedRun(t, c.format))
			path := bloatTable(t, dir, c.format, c.col, c.valueLen, c.rows)
			fi, _ := os.Stat(path)
			err, alloc := readAllocating(t, dir)
			if err == nil {
				t.Fatalf("ReadRun accepted a %d-byte file decoding to %d bytes", fi.Size(), c.valueLen*c.rows)
			}
			for _, w := range append(c.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to say %q", err, w)
				}
			}
			// Decoding would take valueLen × rows; the reader may read
			// one value (the dictionary) and little else.
			if limit := uint64(c.valueLen)*4 + 64<<20; alloc > limit {
				t.Errorf("reading allocated %d bytes, want at most %d (the file decodes to %d)", alloc, limit, c.valueLen*c.rows)
			}
			t.Logf("%d-byte file: %v; %d bytes allocated", fi.Size(), err, alloc)
		})
	}
}

// TestDecodedLimitsKeepRealTables: a run's own tables, ids dictionary
// encoded, are read under the limits.
func TestDecodedLimitsKeepRealTables(t *testing.T) {
	for _, f := range []string{FormatParquet, FormatArrow} {
		if _, err := ReadRun(finishedRun(t, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestLimitAllocRefuses: the allocator the readers decode through
// refuses what would pass the table's limit, and gives back what is
// freed.
func TestLimitAllocRefuses(t *testing.T) {
	l := newLimitAlloc(memory.DefaultAllocator, "latency")
	b := l.Allocate(1 << 20)
	l.Free(b)
	if l.used.Load() != 0 {
		t.Errorf("used %d after freeing everything", l.used.Load())
	}
	defer func() {
		r := recover()
		le, ok := r.(*LimitError)
		if !ok || !strings.Contains(le.Error(), "table latency") || !strings.Contains(le.Error(), "2 GiB") {
			t.Errorf("recovered %v, want a LimitError naming the table and the limit", r)
		}
	}()
	l.Allocate(MaxTableBytes + 1)
	t.Errorf("allocated more than the limit")
}
