package results

// This file checks what is read back before trusting it: a table file is a
// regular file whose sizes fit the file and whose schema is the table's
// (columns, types, benchflow.schema_version); a manifest is a bounded
// regular file naming a valid run. A damaged or substituted file is an
// error naming the file and what is wrong, never rows of zeros.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/benchflow/benchflow/engine/userfile"
)

// maxRowsPerByte bounds the rows a table file may claim per byte of file:
// benchflow's densest table (latency.parquet, zstd) stores well under one
// row per byte, so a footer claiming more is damaged, and is refused
// before anything is allocated for its rows.
const maxRowsPerByte = 16

// maxChunkBytes bounds the uncompressed size one column chunk may claim.
const maxChunkBytes = 1 << 30

// openRegular opens path for reading only if it is a regular file (not a
// FIFO, a device or a folder), under engine/userfile's rule: looked at
// before and after the open, which never blocks.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := userfile.Open(path, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	return userfile.Read(path, limit)
}

// checkParquetSizes checks a Parquet file's footer against the file's
// size before any row is allocated: row counts that the file's bytes
// cannot hold, row groups that disagree with the total, column chunks
// outside the file.
func checkParquetSizes(pf *file.Reader, size int64) error {
	md := pf.MetaData()
	n := md.NumRows
	if n < 0 || n > size*maxRowsPerByte {
		return fmt.Errorf("the footer claims %d rows in a file of %d bytes", n, size)
	}
	var sum int64
	for i := 0; i < md.NumRowGroups(); i++ {
		rg := md.RowGroup(i)
		if rg.NumRows() < 0 || rg.NumRows() > n {
			return fmt.Errorf("row group %d claims %d rows of the file's %d", i, rg.NumRows(), n)
		}
		sum += rg.NumRows()
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return fmt.Errorf("row group %d: %w", i, err)
			}
			off, csize := cc.DataPageOffset(), cc.TotalCompressedSize()
			if d := cc.DictionaryPageOffset(); d > 0 && d < off {
				off = d
			}
			if off < 0 || csize < 0 || off+csize > size {
				return fmt.Errorf("column %d of row group %d lies outside the file (offset %d, %d bytes, file %d bytes)", c, i, off, csize, size)
			}
			if u := cc.TotalUncompressedSize(); u < 0 || u > maxChunkBytes {
				return fmt.Errorf("column %d of row group %d claims %d bytes uncompressed", c, i, u)
			}
			if cc.NumValues() < 0 || cc.NumValues() > n {
				return fmt.Errorf("column %d of row group %d claims %d values of the file's %d rows", c, i, cc.NumValues(), n)
			}
		}
	}
	if sum != n {
		return fmt.Errorf("the row groups hold %d rows, the footer claims %d", sum, n)
	}
	return nil
}

// requiredColumns are, per table, the columns a file must have to be that
// table (every table has had them since schema version 1). A table not
// listed needs the id columns of its definition.
var requiredColumns = map[string][]string{
	TableTrials:     {"run_id", "trial_id", "trial_index", "repetition", "step", "status", "requests", "rps"},
	TableLatency:    {"trial_id", "step", "lower_us", "upper_us", "count"},
	TableTimeseries: {"trial_id", "step", "t_s", "interval_s", "requests"},
	TableProcesses:  {"trial_id", "step", "t_s", "process", "pid", "cpu_pct"},
	TableSystem:     {"trial_id", "step", "t_s", "user_pct", "idle_pct"},
	TableNetwork:    {"trial_id", "step", "t_s", "interface", "rx_bytes"},
	TableProbes:     {"trial_id", "step", "probe", "rate"},
	TableAgents:     {"trial_id", "step", "agent"},
}

// tableOfPath is the table a file holds by its name: "trials" for
// ".../trials.parquet" and for a part ".../parts/<trial>/trials.parquet".
func tableOfPath(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// checkSchema checks a table file's schema against the table's columns:
// the schema version, the table's required columns, and the type of every
// column benchflow knows. Columns the reader does not know (written by a
// newer benchflow) are allowed.
func checkSchema[R any](table string, s *arrow.Schema, cols []column[R]) error {
	md := s.Metadata()
	if i := md.FindKey(MetadataKeySchemaVersion); i < 0 {
		return fmt.Errorf("no %s in its metadata: not a benchflow table", MetadataKeySchemaVersion)
	} else if v := md.Values()[i]; v != SchemaVersion {
		return fmt.Errorf("%s is %q; this benchflow reads version %q", MetadataKeySchemaVersion, v, SchemaVersion)
	}
	want := map[string]arrow.DataType{}
	for _, c := range cols {
		want[c.name] = c.typ
	}
	req := requiredColumns[table]
	if req == nil {
		for _, n := range idNames {
			if _, ok := want[n]; ok {
				req = append(req, n)
			}
		}
	}
	var missing []string
	for _, n := range req {
		if len(s.FieldIndices(n)) == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("not the %s table: it has no column %s", table, strings.Join(missing, ", "))
		if other := guessTable(s); other != "" && other != table {
			msg += fmt.Sprintf(" (its columns are those of %s)", other)
		}
		return errors.New(msg)
	}
	var bad []string
	for _, f := range s.Fields() {
		t, ok := want[f.Name]
		if !ok {
			continue
		}
		if !sameType(f.Type, t) {
			bad = append(bad, fmt.Sprintf("%s is %s, want %s", f.Name, f.Type, t))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("columns of the wrong type: %s", strings.Join(bad, "; "))
	}
	return nil
}

// guessTable names the table whose required columns s has, or "".
func guessTable(s *arrow.Schema) string {
	var names []string
	for t := range requiredColumns {
		names = append(names, t)
	}
	sort.Strings(names)
	best, bestN := "", 0
	for _, t := range names {
		req := requiredColumns[t]
		ok := true
		for _, n := range req {
			if len(s.FieldIndices(n)) == 0 {
				ok = false
				break
			}
		}
		if ok && len(req) > bestN {
			best, bestN = t, len(req)
		}
	}
	if best == "" {
		return ""
	}
	return best + ".parquet"
}

// sameType reports whether a file's column type reads as want: equal, or
// a string column stored as a dictionary or large string.
func sameType(got, want arrow.DataType) bool {
	if arrow.TypeEqual(got, want) {
		return true
	}
	if want.ID() == arrow.STRING {
		switch g := got.(type) {
		case *arrow.LargeStringType:
			return true
		case *arrow.DictionaryType:
			return g.ValueType.ID() == arrow.STRING || g.ValueType.ID() == arrow.LARGE_STRING
		}
	}
	if want.ID() == arrow.TIMESTAMP && got.ID() == arrow.TIMESTAMP {
		return true // any unit or zone reads as an instant
	}
	return false
}

// checkRunID reports whether id can name a run folder: 1 to 128 of
// A–Z a–z 0–9 . _ -, not starting with a dot, not "latest". Run ids read
// from a manifest are checked before they name a folder. (The cleanup
// recognises only the ids NewRunID makes: ValidRunID.)
func checkRunID(id string) error {
	if err := validName(id); err != nil {
		return fmt.Errorf("invalid run id %q: %w", id, err)
	}
	if id == "latest" {
		return fmt.Errorf("invalid run id %q: the name of the link to the latest run", id)
	}
	return nil
}

// validName checks a name used for a folder of benchflow's own (a run, a
// trial's part folder).
func validName(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if len(s) > 128 {
		return errors.New("longer than 128 characters")
	}
	if s[0] == '.' {
		return errors.New("starts with a dot")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("character %q (allowed: A-Z a-z 0-9 . _ -)", r)
		}
	}
	return nil
}

// validate checks what a run's manifest must hold before anything is
// read or written on its word.
func (m *Manifest) validate() error {
	if m.SchemaVersion == "" {
		return errors.New("no schema_version: not a benchflow manifest")
	}
	if m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schema_version is %q; this benchflow reads version %q", m.SchemaVersion, SchemaVersion)
	}
	if err := checkRunID(m.RunID); err != nil {
		return err
	}
	switch m.Status {
	case RunRunning, RunOK, RunFailed, RunInterrupted:
	default:
		return fmt.Errorf("unknown run status %q", m.Status)
	}
	switch m.OutputFormat {
	case "", FormatParquet, FormatArrow:
	default:
		return fmt.Errorf("unknown output_format %q", m.OutputFormat)
	}
	seen := map[string]bool{}
	for i, t := range m.Trials {
		if t.TrialID == "" {
			return fmt.Errorf("trial %d has no trial_id", i+1)
		}
		if seen[t.TrialID] {
			return fmt.Errorf("trial %q is listed twice", t.TrialID)
		}
		seen[t.TrialID] = true
	}
	for i, t := range m.Discarded {
		if t.TrialID == "" {
			return fmt.Errorf("discarded attempt %d has no trial_id", i+1)
		}
		if t.Discarded == "" {
			return fmt.Errorf("discarded attempt %q does not say why it was discarded", t.TrialID)
		}
		if seen[t.TrialID] {
			return fmt.Errorf("trial %q is listed twice", t.TrialID)
		}
		seen[t.TrialID] = true
	}
	return nil
}
