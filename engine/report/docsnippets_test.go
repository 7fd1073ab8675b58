package report

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/benchflow/benchflow/engine/results"
)

// writeDiscardedRun writes a run with two axes (a1 × a2, two values each),
// 3 repetitions and a load step named step, in which every cell's second
// repetition was first run busy: that attempt, at a tenth of the req/s,
// is in the tables, discarded. The rows report uses are the others.
func writeDiscardedRun(t *testing.T, a1, a2, step string, v1, v2 []string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(62, 4))
	m := &results.Manifest{
		RunID: "20261207T190000Z-docs", Pipeline: results.PipelineInfo{Name: "docs", SHA256: "abc", Format: "hcl"},
		BenchflowVersion: "test", StartedAt: t0, Order: "interleaved", Repetitions: 3,
		Matrix: map[string]any{a1: []any{v1[0], v1[1]}, a2: []any{v2[0], v2[1]}}, Axes: []string{a1, a2},
		Environment: map[string]any{"fingerprint": "f"},
	}
	var recs []*results.TrialRecord
	i := 0
	for rep := 1; rep <= 3; rep++ {
		for ci, x := range v1 {
			for cj, y := range v2 {
				base := 10000.0 * float64(1+ci) * float64(2+cj) * (1 + 0.05*rng.NormFloat64())
				mk := func(id string, attempt int, rps float64, why string) *results.TrialRecord {
					return &results.TrialRecord{
						TrialID: id, Index: i, Repetition: rep, Attempt: attempt, Discarded: why,
						Params:   []results.Param{{Name: a1, Value: x}, {Name: a2, Value: y}},
						Provider: "host", Status: results.StatusOK, StartedAt: t0, FinishedAt: t0.Add(time.Minute),
						Steps: []results.StepRecord{{Name: step, Kind: "load", Status: results.StatusOK,
							Result: synthLoad(rng, rps, 200, 3, 50)}},
					}
				}
				id := fmt.Sprintf("c%02d-r%d", ci*2+cj+1, rep)
				if rep == 2 {
					recs = append(recs, mk(id+"-a1", 1, base/10, "busy start: processes outside the run used 97% of a core before step "+step+" (sh 97%)"))
					recs = append(recs, mk(id, 2, base, ""))
				} else {
					recs = append(recs, mk(id, 1, base, ""))
				}
				m.Trials = append(m.Trials, results.TrialEntry{TrialID: id, Index: i, Repetition: rep})
				i++
			}
		}
	}
	w, err := results.Create(t.TempDir(), m, []byte("pipeline {}"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.CommitTrial(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(results.RunOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Compact(w.Dir()); err != nil {
		t.Fatal(err)
	}
	return w.Dir()
}

// TestDocSnippetsMatchReport runs the DuckDB snippets of the docs that
// compute req/s per cell (getting-started.md, results.md, gateway.md) on
// a run with discarded attempts and compares their n, req/s and interval
// with what report computes; every SQL snippet reading trials.parquet
// filters the discarded attempts (the pandas and polars snippets mirror
// the SQL ones: same filter, same geometric mean).
func TestDocSnippetsMatchReport(t *testing.T) {
	type doc struct {
		file, a1, a2, step string
		v1, v2             []string
		snippets           int // SQL snippets that give n and rps per cell
	}
	docs := []doc{
		{"../../docs/getting-started.md", "size", "keepalive", "main", []string{"6", "4KiB"}, []string{"true", "false"}, 1},
		{"../../docs/results.md", "deploy", "access_log", "main", []string{"bare", "docker-nat"}, []string{"on", "off"}, 1},
		{"../../docs/gateway.md", "path", "count", "main", []string{"direct", "gateway"}, []string{"1", "10"}, 1},
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, d := range docs {
		b, err := os.ReadFile(d.file)
		if err != nil {
			t.Fatal(err)
		}
		dir := writeDiscardedRun(t, d.a1, d.a2, d.step, d.v1, d.v2)
		run, err := results.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(run, Options{NoSeries: true})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]*Cell{}
		for _, c := range s.Cells {
			want[fmt.Sprint(c.Params[0].Value)+"|"+fmt.Sprint(c.Params[1].Value)] = c
		}
		compared := 0
		for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
			q := m[1]
			if strings.Contains(q, "trials.parquet") && !strings.Contains(q, "discarded") {
				t.Errorf("%s: a snippet reads trials.parquet without leaving the discarded attempts out:\n%s", d.file, q)
			}
			if !strings.Contains(q, " AS rps") || !strings.Contains(q, " AS n") {
				continue // not a req/s per cell (engine/results TestDocsSQL runs it)
			}
			rows, err := db.Query(strings.ReplaceAll(q, "'results/latest/", "'"+dir+"/"))
			if err != nil {
				t.Errorf("%s: %v\n%s", d.file, err, q)
				continue
			}
			cols, _ := rows.Columns()
			idx := map[string]int{}
			for i, c := range cols {
				idx[c] = i
			}
			_, hasN := idx["n"]
			_, hasRPS := idx["rps"]
			got := 0
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				got++
				if !hasN || !hasRPS {
					continue
				}
				key := fmt.Sprint(vals[0]) + "|" + fmt.Sprint(vals[1])
				c := want[key]
				if c == nil {
					t.Errorf("%s: a row for %s, which report does not have (%v)", d.file, key, vals)
					continue
				}
				num := func(col string) float64 {
					switch v := vals[idx[col]].(type) {
					case float64:
						return v
					case int64:
						return float64(v)
					}
					t.Fatalf("%s: column %s is %T", d.file, col, vals[idx[col]])
					return 0
				}
				if n := num("n"); int(n) != c.N {
					t.Errorf("%s: %s: n = %v, report's %d", d.file, key, n, c.N)
				}
				if r := num("rps"); math.Abs(r-c.RPS.Value) > 0.5 {
					t.Errorf("%s: %s: rps = %v, report's %.1f", d.file, key, r, c.RPS.Value)
				}
				for col, v := range map[string]float64{"ci_low": c.RPS.Low, "ci_high": c.RPS.High} {
					if _, ok := idx[col]; ok && math.Abs(num(col)-v) > 0.5+1e-3*v {
						t.Errorf("%s: %s: %s = %v, report's %.1f", d.file, key, col, num(col), v)
					}
				}
				compared++
			}
			if err := rows.Err(); err != nil {
				t.Errorf("%s: %v", d.file, err)
			}
			rows.Close()
			if got == 0 {
				t.Errorf("%s: a snippet returned no rows:\n%s", d.file, q)
			}
		}
		if compared < 4*d.snippets {
			t.Errorf("%s: %d cells compared with report, want %d", d.file, compared, 4*d.snippets)
		}
	}
}
