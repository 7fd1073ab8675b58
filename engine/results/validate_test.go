package results

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// finishedRun writes a finished run of synthRecords and returns its folder.
func finishedRun(t *testing.T, format string) string {
	t.Helper()
	out := t.TempDir()
	w := writeRun(t, out, "20261130T044500Z-dmgd", format, synthRecords(1), memory.DefaultAllocator)
	if err := w.Finish(RunOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return w.Dir()
}

// copyRun copies a run folder (files only, one level and sources).
func copyRun(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// wantReadError reads dir with ReadRun and Resume and wants both to fail
// with an error containing every one of parts.
func wantReadError(t *testing.T, dir string, parts ...string) {
	t.Helper()
	if run, err := ReadRun(dir); err == nil {
		t.Errorf("ReadRun accepted the damaged run (%d trial rows, %d latency rows)", len(run.Trials), len(run.Latency))
	} else {
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("ReadRun: %v\nwant it to say %q", err, p)
			}
		}
	}
	if w, err := Resume(dir); err == nil {
		w.Close()
		t.Errorf("Resume accepted the damaged run")
	} else {
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("Resume: %v\nwant it to say %q", err, p)
			}
		}
	}
}

// TestReadRefusesSwappedTables: a table file holding another table is an
// error naming the file and what it is, in both formats, for every pair
// that differs.
func TestReadRefusesSwappedTables(t *testing.T) {
	for _, format := range []string{FormatParquet, FormatArrow} {
		good := finishedRun(t, format)
		swaps := []struct{ over, from, says string }{
			{TableTrials, TableTimeseries, "not the trials table"},
			{TableLatency, TableProcesses, "not the latency table"},
			{TableLatency, TableTrials, "not the latency table"},
			{TableTimeseries, TableLatency, "not the timeseries table"},
			{TableProcesses, TableSystem, "not the processes table"},
			{TableNetwork, TableSystem, "not the network table"},
		}
		for _, s := range swaps {
			t.Run(format+"/"+s.from+" over "+s.over, func(t *testing.T) {
				run := copyRun(t, good)
				b, err := os.ReadFile(filepath.Join(run, TableFile(s.from, format)))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(run, TableFile(s.over, format)), b, 0o644); err != nil {
					t.Fatal(err)
				}
				wantReadError(t, run, TableFile(s.over, format), s.says)
			})
		}
	}
	t.Run("the error says which table it is", func(t *testing.T) {
		run := copyRun(t, finishedRun(t, FormatParquet))
		b, _ := os.ReadFile(filepath.Join(run, "timeseries.parquet"))
		os.WriteFile(filepath.Join(run, "trials.parquet"), b, 0o644)
		_, err := ReadRun(run)
		if err == nil || !strings.Contains(err.Error(), "those of timeseries.parquet") {
			t.Errorf("ReadRun: %v; want it to name timeseries.parquet", err)
		}
	})
}

// rewriteFooter replaces a Parquet file's footer with edit's version of it.
func rewriteFooter(t *testing.T, path string, edit func(md *file.Reader)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	edit(pf)
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	var out bytes.Buffer
	out.Write(b[:len(b)-8-n])
	start := out.Len()
	if _, err := pf.MetaData().WriteTo(&out, nil); err != nil {
		t.Fatal(err)
	}
	binary.Write(&out, binary.LittleEndian, uint32(out.Len()-start))
	out.WriteString("PAR1")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadRefusesImpossibleSizes: footers claiming 4×10⁷ rows (in the
// total, in a row group, or both) are refused before any row is
// allocated, by ReadRun and Resume.
func TestReadRefusesImpossibleSizes(t *testing.T) {
	good := finishedRun(t, FormatParquet)
	cases := []struct {
		name, table string
		edit        func(pf *file.Reader)
		says        string
	}{
		{"trials total", "trials.parquet", func(pf *file.Reader) { pf.MetaData().NumRows = 4e7 }, "claims 40000000 rows"},
		{"trials total and row group", "trials.parquet", func(pf *file.Reader) {
			pf.MetaData().NumRows = 4e7
			pf.MetaData().RowGroups[0].NumRows = 4e7
		}, "claims 40000000 rows"},
		{"latency row group", "latency.parquet", func(pf *file.Reader) { pf.MetaData().RowGroups[0].NumRows = 4e7 }, "row group 0 claims"},
		{"latency chunk outside the file", "latency.parquet", func(pf *file.Reader) {
			pf.MetaData().RowGroups[0].Columns[3].MetaData.DataPageOffset = 1 << 40
		}, "outside the file"},
		{"timeseries chunk of 64 GiB", "timeseries.parquet", func(pf *file.Reader) {
			pf.MetaData().RowGroups[0].Columns[4].MetaData.TotalUncompressedSize = 64 << 30
		}, "uncompressed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := copyRun(t, good)
			rewriteFooter(t, filepath.Join(run, c.table), c.edit)
			wantReadError(t, run, c.table, c.says)
		})
	}
}

// TestReadRefusesOtherSchemaVersion: a table of another schema version, or
// of none, is refused.
func TestReadRefusesOtherSchemaVersion(t *testing.T) {
	good := finishedRun(t, FormatParquet)
	for _, v := range []string{"2", ""} {
		run := copyRun(t, good)
		path := filepath.Join(run, "latency.parquet")
		rows, err := readTable(memory.DefaultAllocator, path, FormatParquet, fixed(latencyColumns))
		if err != nil {
			t.Fatal(err)
		}
		schema := schemaOf(latencyColumns)
		md := arrow.NewMetadata(nil, nil)
		if v != "" {
			md = arrow.NewMetadata([]string{MetadataKeySchemaVersion}, []string{v})
		}
		schema = arrow.NewSchema(schema.Fields(), &md)
		rec := buildRecord(memory.DefaultAllocator, schema, latencyColumns, rows)
		if err := writeRecords(memory.DefaultAllocator, nil, path, FormatParquet, schema, []arrow.RecordBatch{rec}, nil); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		want := `benchflow.schema_version is "2"`
		if v == "" {
			want = "no benchflow.schema_version"
		}
		wantReadError(t, run, "latency.parquet", want)
	}
}

// TestReadRefusesBadManifests: an empty object, another schema version, a
// run id that would name another folder, a FIFO, /dev/zero, a folder.
func TestReadRefusesBadManifests(t *testing.T) {
	good := finishedRun(t, FormatParquet)
	mb, err := os.ReadFile(filepath.Join(good, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) []byte {
		if !bytes.Contains(mb, []byte(old)) {
			t.Fatalf("manifest has no %s", old)
		}
		return bytes.Replace(mb, []byte(old), []byte(new), 1)
	}
	for _, c := range []struct {
		name    string
		content []byte
		says    string
	}{
		{"empty object", []byte("{}"), "no schema_version"},
		{"only a run id", []byte(`{"run_id": "20261130T044500Z-dmgd"}`), "no schema_version"},
		{"schema version 9", edit(`"schema_version": "1"`, `"schema_version": "9"`), `schema_version is "9"`},
		{"run id climbing out", edit(`"run_id": "20261130T044500Z-dmgd"`, `"run_id": "../../etc"`), "invalid run id"},
		{"run id with a slash", edit(`"run_id": "20261130T044500Z-dmgd"`, `"run_id": "a/b"`), "invalid run id"},
		{"run id latest", edit(`"run_id": "20261130T044500Z-dmgd"`, `"run_id": "latest"`), "invalid run id"},
		{"unknown status", edit(`"status": "ok"`, `"status": "great"`), "unknown run status"},
		{"trial without id", edit(`"trial_id": "`, `"trial_id": "", "x": "`), "has no trial_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := copyRun(t, good)
			if err := os.WriteFile(filepath.Join(run, "manifest.json"), c.content, 0o644); err != nil {
				t.Fatal(err)
			}
			wantReadError(t, run, "manifest.json", c.says)
			if _, err := ReadManifest(run); err == nil {
				t.Errorf("ReadManifest accepted it")
			}
		})
	}
	special := map[string]func(path string) error{
		"FIFO":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"/dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
		"folder":    func(p string) error { return os.Mkdir(p, 0o755) },
	}
	for name, mk := range special {
		t.Run(name, func(t *testing.T) {
			run := copyRun(t, good)
			p := filepath.Join(run, "manifest.json")
			os.Remove(p)
			if err := mk(p); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() { _, err := ReadManifest(run); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("ReadManifest: %v; want a refusal of a file that is not regular", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("ReadManifest still reading after a minute")
			}
			wantReadError(t, run, "not a regular file")
		})
	}
	t.Run("table that is a FIFO", func(t *testing.T) {
		run := copyRun(t, good)
		p := filepath.Join(run, "latency.parquet")
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip(err)
		}
		wantReadError(t, run, "latency.parquet", "not a regular file")
	})
}

// TestRealTablesWithinBounds: the size bounds leave room for real tables
// (the densest, latency, of a long benchmark-sized run).
func TestRealTablesWithinBounds(t *testing.T) {
	out := t.TempDir()
	w, err := Create(out, synthManifest("20261130T044500Z-bnds", nil), nil, "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CommitTrials(benchRecords(40)...); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(RunOK, t0); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range []string{TableTrials, TableLatency, TableTimeseries, TableProcesses} {
		path := filepath.Join(w.Dir(), TableFile(tbl, FormatParquet))
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		pf, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		perByte := float64(pf.NumRows()) / float64(fi.Size())
		t.Logf("%s: %d rows in %d bytes (%.3f rows/byte)", tbl, pf.NumRows(), fi.Size(), perByte)
		if perByte > maxRowsPerByte/4 {
			t.Errorf("%s holds %.2f rows per byte: the bound (%d) leaves too little room", tbl, perByte, maxRowsPerByte)
		}
		pf.Close()
	}
	if _, err := ReadRun(w.Dir()); err != nil {
		t.Fatal(err)
	}
}
