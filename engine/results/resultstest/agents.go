// Package resultstest holds checks of a run's result files that tests of
// several packages share. It reads the files with DuckDB, independently
// of engine/results' own reader.
package resultstest

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver
)

// AgentMerge is what CheckAgentMerge read of a step that ran on agents.
type AgentMerge struct {
	Requests int64
	Agents   []AgentFigures
}

// AgentFigures is one agents.parquet row.
type AgentFigures struct {
	Agent                int64
	Host                 string
	PID                  int64
	Requests             int64
	ClockOffsetS, BoundS float64
	LateS                float64
	StartedAtS           float64 // its start on the controller's clock, Unix seconds
}

// CheckAgentMerge checks step of the run in runDir against the contract of
// a load on agents: trials.parquet's requests equal the sum of
// agents.parquet's, its agents column equals the number of agents rows
// (want), latency.parquet holds each agent's buckets (agent 1…want) whose
// union holds every request, and the p50/p99/p99.9 of trials.parquet are
// the percentiles recomputed from that union, the way HdrHistogram
// computes them.
func CheckAgentMerge(t testing.TB, runDir, step string, want int) AgentMerge {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	trials, agents, latency := filepath.Join(runDir, "trials.parquet"), filepath.Join(runDir, "agents.parquet"), filepath.Join(runDir, "latency.parquet")
	var out AgentMerge
	var nAgents, sumAgents, agentRows int64
	var p50, p99, p999 float64
	// The attempt that counts: a busy attempt re-run (discarded) has rows
	// of its own under another trial id.
	var trial string
	q := fmt.Sprintf(`SELECT t.trial_id, t.requests, t.agents, t.latency_p50_us, t.latency_p99_us, t.latency_p999_us,
		(SELECT sum(requests) FROM read_parquet('%[2]s') a WHERE a.trial_id = t.trial_id AND a.step = t.step),
		(SELECT count(*) FROM read_parquet('%[2]s') a WHERE a.trial_id = t.trial_id AND a.step = t.step)
		FROM read_parquet('%[1]s') t WHERE t.step = '%[3]s' AND NOT t.discarded`, trials, agents, step)
	if err := db.QueryRow(q).Scan(&trial, &out.Requests, &nAgents, &p50, &p99, &p999, &sumAgents, &agentRows); err != nil {
		t.Fatalf("reading step %s: %v", step, err)
	}
	if out.Requests == 0 || out.Requests != sumAgents || nAgents != int64(want) || agentRows != int64(want) {
		t.Errorf("step %s: merged requests %d, the agents' sum %d; agents column %d, %d agents rows; want equal, >0, and %d agents",
			step, out.Requests, sumAgents, nAgents, agentRows, want)
	}
	for _, c := range []struct {
		p    float64
		want float64
	}{{50, p50}, {99, p99}, {99.9, p999}} {
		var got float64
		q := fmt.Sprintf(`WITH b AS (SELECT lower_us, upper_us, sum(count) AS n FROM read_parquet('%s') WHERE step = '%s' AND trial_id = '%s' GROUP BY ALL),
			c AS (SELECT upper_us, sum(n) OVER (ORDER BY upper_us) AS cum, sum(n) OVER () AS total FROM b)
			SELECT min(upper_us) FROM c WHERE cum >= greatest(1, floor(%g / 100 * total + 0.5))`, latency, step, trial, c.p)
		if err := db.QueryRow(q).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want || got == 0 {
			t.Errorf("step %s: p%g from the union of the agents' buckets = %g µs, trials.parquet says %g", step, c.p, got, c.want)
		}
	}
	var bucketAgents, bucketTotal, others int64
	q = fmt.Sprintf(`SELECT count(DISTINCT agent) FILTER (WHERE agent BETWEEN 1 AND %d), sum(count), count(*) FILTER (WHERE agent < 1 OR agent > %d)
		FROM read_parquet('%s') WHERE step = '%s' AND trial_id = '%s'`, want, want, latency, step, trial)
	if err := db.QueryRow(q).Scan(&bucketAgents, &bucketTotal, &others); err != nil {
		t.Fatal(err)
	}
	if bucketAgents != int64(want) || bucketTotal != out.Requests || others != 0 {
		t.Errorf("step %s: latency.parquet holds buckets of %d agents (%d rows of no agent) with %d values, want %d agents and %d values",
			step, bucketAgents, others, bucketTotal, want, out.Requests)
	}
	rows, err := db.Query(fmt.Sprintf(`SELECT agent, host, pid, requests, clock_offset_s, skew_bound_s, late_s, started_at_s FROM read_parquet('%s') WHERE step = '%s' AND trial_id = '%s' ORDER BY agent`, agents, step, trial))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a AgentFigures
		if err := rows.Scan(&a.Agent, &a.Host, &a.PID, &a.Requests, &a.ClockOffsetS, &a.BoundS, &a.LateS, &a.StartedAtS); err != nil {
			t.Fatal(err)
		}
		out.Agents = append(out.Agents, a)
	}
	return out
}
