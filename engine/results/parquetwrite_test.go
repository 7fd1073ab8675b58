package results

import (
	"bytes"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestWriteParquetMatchesPqarrow checks that writeParquet, which encodes
// column chunks concurrently, writes the very bytes pqarrow's FileWriter
// writes: several row groups, nulls, a dictionary column, a timestamp.
func TestWriteParquetMatchesPqarrow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	md := arrow.NewMetadata([]string{MetadataKeySchemaVersion}, []string{SchemaVersion})
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "trial_id", Type: dictType, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "at", Type: tsType, Nullable: true},
	}, &md)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < 95; i++ {
		if err := b.Field(0).(*array.BinaryDictionaryBuilder).AppendString([]string{"t1", "t2", "t3"}[i/40]); err != nil {
			t.Fatal(err)
		}
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 3)
		if i%7 == 3 {
			b.Field(2).AppendNull()
			b.Field(3).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(int64(i * i))
			b.Field(3).(*array.StringBuilder).Append([]string{"a", "bb", ""}[i%3])
		}
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	props := parquet.NewWriterProperties(parquet.WithAllocator(mem), parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(30), parquet.WithDictionaryDefault(false), parquet.WithDictionaryFor("trial_id", true))

	var want bytes.Buffer
	pw, err := pqarrow.NewFileWriter(schema, &want, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := writeParquet(struct{ io.Writer }{&got}, schema, rec, props); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("writeParquet wrote %d bytes that differ from pqarrow's %d", got.Len(), want.Len())
	}
}

// TestWriteParquetRejectsNested checks the flat-table restriction.
func TestWriteParquetRejectsNested(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}}, nil)
	props := parquet.NewWriterProperties()
	if err := writeParquet(io.Discard, schema, nil, props); err == nil {
		t.Error("a list column was accepted")
	}
}
