package main

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestNotebookMatchesReport executes examples/notebooks/report.ipynb with
// Jupyter (Debian's jupyter-nbconvert, python3-pandas, python3-matplotlib;
// .ci/run installs them) on a quickstart run (1 s loads) to which
// discarded attempts were added — each cell's second repetition, first run
// busy at a tenth of the req/s — and compares the notebook's table with
// `benchflow report --format csv`: the same cells, n, req/s and interval.
// It also checks the plot is a PNG. Without Jupyter it skips, except under
// CI=true.
func TestNotebookMatchesReport(t *testing.T) {
	nbconvert, err := exec.LookPath("jupyter-nbconvert")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("jupyter-nbconvert not found; CI installs jupyter-nbconvert python3-ipykernel python3-pandas python3-matplotlib")
		}
		t.Skip("jupyter-nbconvert not found (apt-get install jupyter-nbconvert python3-ipykernel python3-pandas python3-matplotlib)")
	}
	res := t.TempDir()
	if b, err := exec.Command(bin, "apply", "../../pipelines/quickstart.hcl", "--var", "duration=1s",
		"--repetitions", "3", "--out", res, "-q").CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	run, err := filepath.EvalSymlinks(filepath.Join(res, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	trials := filepath.Join(run, "trials.parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// benchflow reads only files that carry its schema version: kept.
	var version string
	if err := db.QueryRow(fmt.Sprintf(`SELECT decode(value) FROM parquet_kv_metadata('%s') WHERE decode(key) = 'benchflow.schema_version'`, trials)).Scan(&version); err != nil {
		t.Fatalf("the schema version of %s: %v", trials, err)
	}
	q := fmt.Sprintf(`COPY (SELECT * FROM read_parquet('%[1]s')
		UNION ALL SELECT * REPLACE (trial_id || '-a1' AS trial_id, 1 AS attempt, true AS discarded,
		'busy start: a test' AS discarded_why, rps / 10 AS rps)
		FROM read_parquet('%[1]s') WHERE repetition = 2) TO '%[1]s.new' (FORMAT parquet, KV_METADATA {'benchflow.schema_version': '%[2]s'})`, trials, version)
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(trials+".new", trials); err != nil {
		t.Fatal(err)
	}
	var discarded int
	if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s') WHERE discarded`, trials)).Scan(&discarded); err != nil || discarded == 0 {
		t.Fatalf("the run has %d discarded attempts (%v), want some", discarded, err)
	}

	var rep, stderr bytes.Buffer
	cmd := exec.Command(bin, "report", run, "--format", "csv")
	cmd.Stdout, cmd.Stderr = &rep, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.Bytes())
	}
	want := csvByCell(t, rep.Bytes(), "rps_mean", "rps_ci_low", "rps_ci_high")

	out := t.TempDir()
	nb := exec.Command(nbconvert, "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=300",
		"--output-dir", out, "report.ipynb")
	nb.Dir = "../../examples/notebooks"
	nb.Env = append(os.Environ(), "BENCHFLOW_RUN="+run, "BENCHFLOW_BIN="+bin, "BENCHFLOW_NOTEBOOK_OUT="+out,
		"PYDEVD_DISABLE_FILE_VALIDATION=1")
	if b, err := nb.CombinedOutput(); err != nil {
		t.Fatalf("executing the notebook: %v\n%s", err, b)
	}
	table, err := os.ReadFile(filepath.Join(out, "table.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got := csvByCell(t, table, "rps", "ci_low", "ci_high")
	if len(got) != len(want) || len(want) != 4 {
		t.Fatalf("the notebook has %d cells, report %d, want 4 each\nnotebook:\n%s\nreport:\n%s", len(got), len(want), table, rep.Bytes())
	}
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("cell %s: not in the notebook's table", key)
			continue
		}
		if g.n != w.n {
			t.Errorf("cell %s: n = %d in the notebook, %d in report", key, g.n, w.n)
		}
		for i, name := range []string{"req/s", "interval low", "interval high"} {
			if math.Abs(g.v[i]-w.v[i]) > 1e-6*w.v[i] {
				t.Errorf("cell %s: %s = %v in the notebook, %v in report", key, name, g.v[i], w.v[i])
			}
		}
	}
	png, err := os.ReadFile(filepath.Join(out, "rps.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("the notebook's plot rps.png is not a PNG (%v)", err)
	}
}

type cellRow struct {
	n int
	v [3]float64
}

// csvByCell reads a table with param_* columns, step, n and the three
// named value columns, keyed by its parameters and step.
func csvByCell(t *testing.T, b []byte, cols ...string) map[string]cellRow {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("reading a table: %v\n%s", err, b)
	}
	idx := map[string]int{}
	for i, c := range recs[0] {
		idx[c] = i
	}
	for _, c := range append([]string{"param_size", "param_keepalive", "step", "n"}, cols...) {
		if _, ok := idx[c]; !ok {
			t.Fatalf("no column %s in\n%s", c, b)
		}
	}
	m := map[string]cellRow{}
	for _, r := range recs[1:] {
		var row cellRow
		row.n, err = strconv.Atoi(r[idx["n"]])
		if err != nil {
			t.Fatalf("n %q: %v", r[idx["n"]], err)
		}
		for i, c := range cols {
			if row.v[i], err = strconv.ParseFloat(r[idx[c]], 64); err != nil {
				t.Fatalf("%s %q: %v", c, r[idx[c]], err)
			}
		}
		m[r[idx["param_size"]]+"|"+r[idx["param_keepalive"]]+"|"+r[idx["step"]]] = row
	}
	return m
}
