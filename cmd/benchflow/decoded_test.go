package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// bloatTrials rewrites a trials.parquet with rows rows (its own, repeated)
// whose column col is dictionary encoded with one value of valueLen
// bytes: a file of some KiB that decodes to rows × valueLen bytes.
func bloatTrials(t *testing.T, path, col string, valueLen, rows int) {
	t.Helper()
	mem := memory.DefaultAllocator
	tbl, kv := readTrialsTable(t, path)
	defer tbl.Release()
	have := int(tbl.NumRows())
	typ := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	fields := append([]arrow.Field(nil), tbl.Schema().Fields()...)
	arrs := make([]arrow.Array, len(fields))
	for i := range fields {
		if fields[i].Name == col {
			ib := array.NewInt32Builder(mem)
			for range rows {
				ib.Append(0)
			}
			sb := array.NewStringBuilder(mem)
			sb.Append(strings.Repeat("x", valueLen))
			fields[i].Type = typ
			arrs[i] = array.NewDictionaryArray(typ, ib.NewArray(), sb.NewArray())
			continue
		}
		whole, err := array.Concatenate(tbl.Column(i).Data().Chunks(), mem)
		if err != nil {
			t.Fatal(err)
		}
		var parts []arrow.Array
		for n := 0; n < rows; n += have {
			parts = append(parts, array.NewSlice(whole, 0, int64(min(have, rows-n))))
		}
		if arrs[i], err = array.Concatenate(parts, mem); err != nil {
			t.Fatal(err)
		}
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithDictionaryDefault(false), parquet.WithDictionaryFor(col, true),
		parquet.WithDictionaryPageSizeLimit(1<<30))
	writeTrialsTable(t, path, arrow.NewSchema(fields, nil), arrs, int64(rows), kv, props)
}

// TestDecodedSizeRefused: a trials.parquet of some KiB whose strings
// decode to 8 MiB each on every row is refused by report, export and
// reproduce --plan of a bundle holding it, with the table, the column and
// the limit; export writes nothing. Values under the per-value limit on
// enough rows to pass the table's limit are refused the same way.
func TestDecodedSizeRefused(t *testing.T) {
	dir := t.TempDir()
	run := applyTiny(t, dir)
	if out, err := runBin(t, dir, "publish", "results/latest", "pub/tiny"); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	bundle := filepath.Join(dir, "pub", "tiny")
	for _, c := range []struct {
		col            string
		valueLen, rows int
		want           string
	}{
		{"error", 8 << 20, 256, "table trials, column error: a value of 8388608 bytes, over the limit of 1 MiB per value"},
		{"provider", 900 << 10, 4000, "table trials, column provider: its values could decode to 3.4 GiB, over the limit of 2 GiB per table file"},
	} {
		runCopy := copyTree(t, run)
		bloatTrials(t, filepath.Join(runCopy, "trials.parquet"), c.col, c.valueLen, c.rows)
		out, err := runBin(t, dir, "report", runCopy)
		if exitCode(err) != 1 || !strings.Contains(out, c.want) {
			t.Errorf("report: exit %d, want 1 saying %q:\n%s", exitCode(err), c.want, out)
		}
		csv := filepath.Join(t.TempDir(), "out.csv")
		out, err = runBin(t, dir, "export", runCopy, "-o", csv)
		if exitCode(err) != 1 || !strings.Contains(out, c.want) {
			t.Errorf("export: exit %d, want 1 saying %q:\n%s", exitCode(err), c.want, out)
		}
		if _, err := os.Stat(csv); err == nil {
			t.Errorf("export wrote %s", csv)
		}

		// The same file in a bundle, its checksum updated.
		b := copyTree(t, bundle)
		bloatTrials(t, filepath.Join(b, "trials.parquet"), c.col, c.valueLen, c.rows)
		data, _ := os.ReadFile(filepath.Join(b, "trials.parquet"))
		sum := sha256.Sum256(data)
		sums, _ := os.ReadFile(filepath.Join(b, "SHA256SUMS"))
		sums = regexp.MustCompile(`(?m)^[0-9a-f]{64}  trials\.parquet$`).ReplaceAll(sums, []byte(hex.EncodeToString(sum[:])+"  trials.parquet"))
		os.WriteFile(filepath.Join(b, "SHA256SUMS"), sums, 0o644)
		out, err = runBin(t, dir, "reproduce", b, "--plan")
		if exitCode(err) != 1 || !strings.Contains(out, c.want) {
			t.Errorf("reproduce --plan: exit %d, want 1 saying %q:\n%s", exitCode(err), c.want, out)
		}
	}
}

// setTrialsFloat rewrites a trials.parquet with the float64 column col of
// row row set to v, everything else as it was.
func setTrialsFloat(t *testing.T, path, col string, row int, v float64) {
	t.Helper()
	mem := memory.DefaultAllocator
	tbl, kv := readTrialsTable(t, path)
	defer tbl.Release()
	fields := tbl.Schema().Fields()
	arrs := make([]arrow.Array, len(fields))
	found := false
	for i := range fields {
		whole, err := array.Concatenate(tbl.Column(i).Data().Chunks(), mem)
		if err != nil {
			t.Fatal(err)
		}
		if fields[i].Name == col {
			f := whole.(*array.Float64)
			b := array.NewFloat64Builder(mem)
			for j := 0; j < f.Len(); j++ {
				if j == row {
					b.Append(v)
				} else {
					b.Append(f.Value(j))
				}
			}
			whole, found = b.NewArray(), true
		}
		arrs[i] = whole
	}
	if !found {
		t.Fatalf("no column %s", col)
	}
	writeTrialsTable(t, path, arrow.NewSchema(fields, nil), arrs, tbl.NumRows(), kv, parquet.NewWriterProperties())
}

// readTrialsTable reads a trials.parquet whole, with its key-value
// metadata (benchflow's schema version among it).
func readTrialsTable(t *testing.T, path string) (arrow.Table, metadata.KeyValueMetadata) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	kv := pf.MetaData().KeyValueMetadata()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl, kv
}

// writeTrialsTable writes the columns arrs of schema (rows rows) as the
// parquet file path with props, keeping the benchflow.* entries of kv.
func writeTrialsTable(t *testing.T, path string, schema *arrow.Schema, arrs []arrow.Array, rows int64, kv metadata.KeyValueMetadata, props *parquet.WriterProperties) {
	t.Helper()
	rec := array.NewRecordBatch(schema, arrs, rows)
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kv.Keys() {
		if v := kv.FindValue(k); v != nil && strings.HasPrefix(k, "benchflow.") {
			fw.AppendKeyValueMetadata(k, *v)
		}
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the folder src into a new temporary folder and returns
// the copy's path.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestInvalidNumbersNotJudged: a run whose trials.parquet holds NaN, +Inf
// or a negative latency in one repetition: report names the trial, column
// and value, shows the claims reading the cell as invalid (and
// --fail-on-claims exits 3 for them), and compare against the unedited run
// says "invalid data" for that cell instead of a verdict.
func TestInvalidNumbersNotJudged(t *testing.T) {
	dir := t.TempDir()
	run := applyTiny(t, dir)
	for _, c := range []struct {
		col  string
		v    float64
		want string
	}{
		{"rps", math.NaN(), "rps NaN"},
		{"rps", math.Inf(1), "rps +Inf"},
		{"latency_p99_us", -250, "latency_p99_us -250 (negative)"},
	} {
		edited := copyTree(t, run)
		setTrialsFloat(t, filepath.Join(edited, "trials.parquet"), c.col, 0, c.v)
		out, err := runBin(t, dir, "report", edited)
		if err != nil || !strings.Contains(out, c.want) || !strings.Contains(out, "invalid") {
			t.Errorf("report with %s: %v\n%s", c.want, err, out)
		}
		out, err = runBin(t, dir, "report", edited, "--fail-on-claims")
		if exitCode(err) != 3 || !strings.Contains(out, "claim(s) not judged, their tables hold invalid values: serves") {
			t.Errorf("report --fail-on-claims with %s: exit %d\n%s", c.want, exitCode(err), out)
		}
		out, err = runBin(t, dir, "compare", run, edited)
		if err != nil || !strings.Contains(out, "invalid data") || !strings.Contains(out, c.want) {
			t.Errorf("compare with %s: %v\n%s", c.want, err, out)
		}
	}
}
