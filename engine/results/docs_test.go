package results

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestDocsSQL runs every SQL snippet of docs/results.md with DuckDB on an
// S1-shaped run, so the documented queries keep working.
func TestDocsSQL(t *testing.T) {
	doc, err := os.ReadFile("../../docs/results.md")
	if err != nil {
		t.Skipf("docs/results.md not found: %v", err)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d SQL snippets in docs/results.md, want at least 3", len(blocks))
	}
	rng := rand.New(rand.NewPCG(5, 5))
	var recs []*TrialRecord
	i := 0
	for rep := 1; rep <= 3; rep++ {
		for _, d := range []string{"bare", "docker-nat"} {
			for _, l := range []string{"on", "off"} {
				rps := 1000.0
				if d != "bare" {
					rps = 500
				}
				r := synthRecord(rng, i, d, 0, rep, rps)
				r.TrialID = fmt.Sprintf("t%03d", i)
				r.Params = []Param{{Name: "deploy", Value: d}, {Name: "access_log", Value: l}}
				recs = append(recs, r)
				i++
			}
		}
	}
	out := t.TempDir()
	m := synthManifest("20261130T044500Z-docs", recs)
	m.Axes = []string{"deploy", "access_log"}
	w, err := Create(out, m, nil, "s1.hcl")
	if err != nil {
		t.Fatal(err)
	}
	w.mem = memory.DefaultAllocator
	if err := w.CommitTrials(recs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(RunOK, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := WriteClaims(w.Dir(), FormatParquet, []ClaimRow{{RunID: m.RunID, Claim: "nat-costs-half", Kind: "ratio", Metric: "rps",
		Step: "main", Cell: "deploy=docker-nat", Versus: "deploy=bare", Bound: "< 0.6", BoundOp: "<", BoundValue: 0.6,
		Outcome: "holds", Estimate: 0.5, Low: 0.48, High: 0.52, Method: "paired log-t", N: 3}}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for n, b := range blocks {
		q := strings.ReplaceAll(b[1], "'results/latest/", "'"+w.Dir()+"/")
		rows, err := db.Query(q)
		if err != nil {
			t.Errorf("snippet %d: %v\n%s", n+1, err, b[1])
			continue
		}
		count := 0
		for rows.Next() {
			count++
		}
		if err := rows.Err(); err != nil {
			t.Errorf("snippet %d: %v", n+1, err)
		}
		rows.Close()
		if count == 0 {
			t.Errorf("snippet %d returned no rows", n+1)
		}
	}
}
