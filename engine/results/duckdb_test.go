package results

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/duckdb/duckdb-go/v2"
)

// TestDuckDBReadsTables opens every table with DuckDB, recomputes p99 from
// latency.parquet and req/s from timeseries.parquet, and checks them
// against trials.parquet within HDR precision.
func TestDuckDBReadsTables(t *testing.T) {
	out := t.TempDir()
	recs := synthRecords(11)
	w := writeRun(t, out, "20261130T044500Z-duck", FormatParquet, recs, memory.DefaultAllocator)
	if err := w.Finish(RunOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := func(table string) string {
		return "read_parquet('" + filepath.Join(w.Dir(), TableFile(table, FormatParquet)) + "')"
	}
	for table, want := range map[string]int{
		TableTrials: 2 * len(recs), TableTimeseries: 12 * len(recs), TableProcesses: 6 * len(recs),
		TableSystem: 3 * len(recs), TableNetwork: 3 * len(recs),
	} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM " + f(table)).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if n != want {
			t.Errorf("%s: %d rows, want %d", table, n, want)
		}
	}
	var version string
	q := fmt.Sprintf("SELECT decode(value) FROM parquet_kv_metadata('%s') WHERE decode(key) = '%s'",
		filepath.Join(w.Dir(), "trials.parquet"), MetadataKeySchemaVersion)
	if err := db.QueryRow(q).Scan(&version); err != nil || version != SchemaVersion {
		t.Errorf("schema version via DuckDB = %q, %v", version, err)
	}

	// p99 from the buckets: the upper bound of the first bucket whose
	// cumulative count reaches 99% of the total (HdrHistogram's rule).
	p99 := `
WITH b AS (
  SELECT trial_id, step, upper_us, count,
         sum(count) OVER (PARTITION BY trial_id, step ORDER BY upper_us) AS cum,
         sum(count) OVER (PARTITION BY trial_id, step) AS total
  FROM ` + f(TableLatency) + `)
SELECT trial_id, step, min(upper_us) FILTER (WHERE cum >= floor(0.99 * total + 0.5)) AS p99
FROM b GROUP BY trial_id, step`
	ts := `
SELECT trial_id, step, sum(requests) / sum(interval_s) AS rps
FROM ` + f(TableTimeseries) + ` GROUP BY trial_id, step`
	q = `
WITH p AS (` + p99 + `), s AS (` + ts + `)
SELECT t.trial_id, t.step, t.param_deploy, t.param_connections, t.latency_p99_us, p.p99, t.rps, s.rps
FROM ` + f(TableTrials) + ` t JOIN p USING (trial_id, step) JOIN s USING (trial_id, step)
WHERE t.step_kind = 'load' ORDER BY t.trial_index`
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, step, deploy string
		var conns int64
		var p99T, p99L, rpsT, rpsS float64
		if err := rows.Scan(&id, &step, &deploy, &conns, &p99T, &p99L, &rpsT, &rpsS); err != nil {
			t.Fatal(err)
		}
		rec := recs[n]
		if id != rec.TrialID || deploy != rec.Params[0].Value || conns != rec.Params[1].Value {
			t.Errorf("row %d: %s %s %d", n, id, deploy, conns)
		}
		// HDR with 3 significant digits: values within 0.1%.
		if math.Abs(p99L-p99T) > 0.001*p99T {
			t.Errorf("%s: p99 from latency.parquet %v, trials.parquet %v", id, p99L, p99T)
		}
		if math.Abs(rpsS-rpsT) > 1e-9*rpsT {
			t.Errorf("%s: rps from timeseries.parquet %v, trials.parquet %v", id, rpsS, rpsT)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(recs) {
		t.Errorf("%d load rows joined, want %d", n, len(recs))
	}
}

// TestDuckDBReadsRunningRun: a run still going is read with the globs
// docs/results.md gives, and holds the same rows as its tables once
// finished.
func TestDuckDBReadsRunningRun(t *testing.T) {
	recs := synthRecords(12)
	w := writeRun(t, t.TempDir(), "20261130T044500Z-dgo", FormatParquet, recs, memory.DefaultAllocator)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(src string) (n int, p99 float64) {
		t.Helper()
		if err := db.QueryRow(fmt.Sprintf("SELECT count(*), sum(latency_p99_us) FROM read_parquet('%s', union_by_name = true)", src)).Scan(&n, &p99); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		return n, p99
	}
	n, p99 := count(filepath.Join(w.Dir(), PartsDir, "*", "trials.parquet"))
	var buckets int
	if err := db.QueryRow("SELECT count(*) FROM read_parquet('" + filepath.Join(w.Dir(), PartsDir, "*", "latency.parquet") + "')").Scan(&buckets); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(RunOK, t0); err != nil {
		t.Fatal(err)
	}
	fn, fp99 := count(filepath.Join(w.Dir(), "trials.parquet"))
	var fb int
	if err := db.QueryRow("SELECT count(*) FROM read_parquet('" + filepath.Join(w.Dir(), "latency.parquet") + "')").Scan(&fb); err != nil {
		t.Fatal(err)
	}
	if n != 2*len(recs) || n != fn || p99 != fp99 || buckets != fb || buckets == 0 {
		t.Errorf("parts: %d rows (p99 sum %g), %d buckets; tables: %d rows (%g), %d buckets", n, p99, buckets, fn, fp99, fb)
	}
}
