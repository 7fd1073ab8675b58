package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExportRoundTrip runs a short quickstart and exports every table as
// CSV and JSON lines: the row counts equal those DuckDB reads from the
// Parquet files, a --where filter keeps the rows DuckDB's WHERE keeps, and
// the exported req/s equal the file's. By default the rows of attempts
// discarded because the machine was busy are left out (the rows report
// uses); --all-attempts prints every row of the files.
func TestExportRoundTrip(t *testing.T) {
	out := t.TempDir()
	if b, err := exec.Command(bin, "apply", "../../pipelines/quickstart.hcl", "--var", "duration=1s", "--repetitions", "1", "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	run := filepath.Join(out, "latest")
	export := func(args ...string) []byte {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"export", run}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("export %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return stdout.Bytes()
	}
	for _, table := range []string{"trials", "latency", "timeseries", "processes", "system", "network", "probes", "agents", "claims"} {
		file := filepath.Join(run, table+".parquet")
		want, all := 0, 0
		if _, err := os.Stat(file); err == nil {
			want, all = duckKept(t, file, filepath.Join(run, "trials.parquet")), duckCount(t, file)
		}
		allRecs, err := csv.NewReader(bytes.NewReader(export("--table", table, "--all-attempts"))).ReadAll()
		if err != nil || len(allRecs)-1 != all {
			t.Errorf("%s: export --all-attempts gave %d rows (%v), the Parquet file has %d", table, len(allRecs)-1, err, all)
		}
		recs, err := csv.NewReader(bytes.NewReader(export("--table", table))).ReadAll()
		if err != nil {
			t.Fatalf("%s: the CSV does not parse: %v", table, err)
		}
		if len(recs) == 0 {
			t.Fatalf("%s: no header line", table)
		}
		if got := len(recs) - 1; got != want {
			t.Errorf("%s: export --format csv gave %d rows, the Parquet file has %d", table, got, want)
		}
		lines := 0
		sc := bufio.NewScanner(bytes.NewReader(export("--table", table, "--format", "jsonl")))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var obj map[string]any
			if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
				t.Fatalf("%s: line %d is not a JSON object: %v", table, lines+1, err)
			}
			if len(obj) != len(recs[0]) {
				t.Fatalf("%s: JSON line has %d keys, the CSV header %d columns", table, len(obj), len(recs[0]))
			}
			lines++
		}
		if lines != want {
			t.Errorf("%s: export --format jsonl gave %d rows, the Parquet file has %d", table, lines, want)
		}
	}
	if want := duckCount(t, filepath.Join(run, "latency.parquet")); want == 0 {
		t.Fatal("latency.parquet is empty: the round trip proved nothing")
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	trials := filepath.Join(run, "trials.parquet")
	var n int
	var sum float64
	q := fmt.Sprintf(`SELECT count(*), coalesce(sum(rps), 0) FROM read_parquet('%s') WHERE step = 'main' AND rps > 1 AND NOT discarded`, trials)
	if err := db.QueryRow(q).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(export("--where", "step=main", "--where", "rps>1", "--columns", "rps,trial_id"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != "rps,trial_id" {
		t.Errorf("--columns rps,trial_id: header %v", recs[0])
	}
	got := 0.0
	for _, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[0], 64)
		if err != nil {
			t.Fatalf("rps %q: %v", r[0], err)
		}
		got += v
	}
	if len(recs)-1 != n || n == 0 || math.Abs(got-sum) > 1e-6*sum {
		t.Errorf("--where step=main --where rps>1: %d rows summing to %v req/s; DuckDB: %d rows, %v", len(recs)-1, got, n, sum)
	}

	// Decimals, never an exponent.
	for _, r := range recs[1:] {
		if strings.ContainsAny(r[0], "eE") {
			t.Errorf("rps %q is written with an exponent", r[0])
		}
	}

	// Mistakes are located errors naming the flag, never an empty table.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--where", "rsp>1"}, `Did you mean "rps"?`},
		{[]string{"--where", "rps>abc"}, "not a number"},
		{[]string{"--table", "trial"}, `Did you mean "trials"?`},
		{[]string{"--format", "xml"}, "unknown --format"},
	} {
		b, err := exec.Command(bin, append([]string{"export", run}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(b), c.want) {
			t.Errorf("export %s: err %v, output %q; want an error containing %q", strings.Join(c.args, " "), err, b, c.want)
		}
	}

	// -o writes the same bytes as standard output.
	file := filepath.Join(t.TempDir(), "trials.csv")
	export("-o", file)
	b, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(b, export()) {
		t.Errorf("-o %s: %v; the file differs from standard output", file, err)
	}
}

// duckKept counts the rows of file that are not of an attempt trials
// marks discarded (every row when file has no trial_id column).
func duckKept(t *testing.T, file, trials string) int {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	q := fmt.Sprintf("SELECT count(*) FROM read_parquet('%s') WHERE trial_id NOT IN (SELECT trial_id FROM read_parquet('%s') WHERE discarded)", file, trials)
	if err := db.QueryRow(q).Scan(&n); err != nil {
		return duckCount(t, file)
	}
	return n
}
