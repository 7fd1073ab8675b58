package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestFindMaxBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--find-max", "--slo", "p99<soon", "http://127.0.0.1:1/"}, "--slo: SLO term"},
		{[]string{"--find-max", "--slo", "", "http://127.0.0.1:1/"}, "empty SLO"},
		{[]string{"--find-max", "-R", "100", "http://127.0.0.1:1/"}, "drop --rate"},
		{[]string{"--find-max", "-d", "5s", "http://127.0.0.1:1/"}, "use --probe"},
		{[]string{"--find-max", "--probe", "1s", "http://127.0.0.1:1/"}, "at least 2s"},
		{[]string{"--find-max", "--precision", "0%", "http://127.0.0.1:1/"}, "--precision"},
		{[]string{"--find-max", "--start-rate", "10", "--max-rate", "5", "http://127.0.0.1:1/"}, "--max-rate 5: is below the start rate 10"},
		{[]string{"--find-max", "--start-rate", "1e-12", "http://127.0.0.1:1/"}, "--start-rate 1e-12: must be at least 1 request per second"},
		{[]string{"--find-max", "--start-rate", "0", "http://127.0.0.1:1/"}, "--start-rate 0: want at least 1"},
		{[]string{"--find-max", "--max-rate", "NaN", "http://127.0.0.1:1/"}, "--max-rate NaN: must be a positive number"},
		{[]string{"--find-max", "--max-rate", "1e12", "http://127.0.0.1:1/"}, "--max-rate 1e+12: must be at most 1e+09"},
		{[]string{"--find-max", "--max-probes", "5000", "http://127.0.0.1:1/"}, "--max-probes 5000: must be from 2 to 1000"},
		{[]string{"--find-max", "--probe", "2h", "http://127.0.0.1:1/"}, "--probe 2h0m0s: must be at most 1h"},
		{[]string{"-R", "1e-12", "-d", "1s", "http://127.0.0.1:1/"}, "-R/--rate 1e-12: must be 0 (closed loop) or at least 0.001 requests per second"},
		{[]string{"-R", "0.0001", "-c", "1", "-d", "1s", "http://127.0.0.1:1/"}, "at least 0.001 requests per second"},
	} {
		out, errOut, code := runLoad(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("load %v: exit %d, stderr %q, want it to mention %q (stdout %q)", tc.args, code, errOut, tc.want, out)
		}
	}
}

// TestFindMaxJSON runs a short search (2 probes) and checks the JSON has
// every probe with its measurements and a verdict consistent with them.
func TestFindMaxJSON(t *testing.T) {
	srv, hits := helloServer(t)
	out, errOut, code := runLoad(t, "--find-max", "--json", "--slo", "p99<5s,errors<1%", "--start-rate", "50",
		"--probe", "2s", "--max-probes", "2", "-c", "4", "-t", "1", srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		SLO      string  `json:"slo"`
		Capacity float64 `json:"capacity_rps"`
		Limit    string  `json:"limit"`
		Verdict  string  `json:"verdict"`
		Probes   []struct {
			Rate     float64 `json:"rate"`
			Achieved float64 `json:"achieved_rps"`
			Requests int64   `json:"requests"`
			P99      float64 `json:"latency_p99_us"`
			Pass     bool    `json:"pass"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.SLO != "p99<5s,errors<1%" || len(got.Probes) != 2 || got.Verdict == "" {
		t.Fatalf("got %+v", got)
	}
	if got.Probes[0].Rate != 50 || got.Probes[1].Rate != 100 {
		t.Errorf("probe rates %v, %v: want 50 then 100 (doubling)", got.Probes[0].Rate, got.Probes[1].Rate)
	}
	for _, p := range got.Probes {
		if p.Requests == 0 || p.P99 <= 0 {
			t.Errorf("probe %+v measured nothing", p)
		}
	}
	if got.Limit != "probes" && got.Limit != "generator" && got.Limit != "server" {
		t.Errorf("limit %q after 2 probes of an easy target", got.Limit)
	}
	if got.Probes[0].Pass && got.Capacity < 50 {
		t.Errorf("capacity %v below a passing probe", got.Capacity)
	}
	// 2 s at 50 req/s and 2 s at 100: about 300 requests reached the server.
	if n := hits.Load(); n < 150 || n > 400 {
		t.Errorf("server saw %d requests, want about 300", n)
	}
}

// TestApplyCapacityPipeline runs pipelines/capacity.hcl with short probes:
// each trial's row carries the capacity found, probes.parquet holds every
// probe, the row's figures are the probe at the capacity's rate, and no
// capacity exceeds what the queue can serve (workers / 5 ms).
func TestApplyCapacityPipeline(t *testing.T) {
	out := t.TempDir()
	// A loose SLO: the first probes pass even on a busy machine (a 5 ms
	// service time, and p99 up to 2 s), so the search always finds some
	// capacity; above the queue's capacity the completion rate fails it.
	cmd := exec.Command(bin, "apply", "../../pipelines/capacity.hcl", "--var", "probe=2s", "--var", "max_probes=4",
		"--var", "slo=p99<2s,errors<0.1%", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	latest := filepath.Join(out, "latest")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	trials, probes := filepath.Join(latest, "trials.parquet"), filepath.Join(latest, "probes.parquet")
	rows, err := db.Query(fmt.Sprintf(`SELECT t.trial_id, t.param_workers, t.capacity_rps, t.capacity_limit, t.slo, t.rps,
		  count(p.probe), count(p.probe) FILTER (WHERE p.pass AND p.rate = t.capacity_rps),
		  max(p.achieved_rps) FILTER (WHERE p.pass AND p.rate = t.capacity_rps)
		FROM read_parquet('%s') t LEFT JOIN read_parquet('%s') p ON p.trial_id = t.trial_id AND p.step = t.step
		WHERE t.step = 'capacity' AND NOT t.discarded GROUP BY ALL ORDER BY t.trial_id`, trials, probes))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, limit, slo string
		var workers int64
		var capacity, rps float64
		var nProbes, atCapacity int
		var achieved sql.NullFloat64
		if err := rows.Scan(&id, &workers, &capacity, &limit, &slo, &rps, &nProbes, &atCapacity, &achieved); err != nil {
			t.Fatal(err)
		}
		n++
		if slo != "p99<2s,errors<0.1%" || limit == "" || nProbes < 2 || nProbes > 4 {
			t.Errorf("%s: slo %q, limit %q, %d probes; want the pipeline's SLO, a limit and 2–4 probes", id, slo, limit, nProbes)
		}
		if most := float64(workers) / 0.005 * 1.05; capacity > most {
			t.Errorf("%s: capacity %.0f req/s with %d workers of 5 ms: more than the %.0f the queue can serve", id, capacity, workers, most)
		}
		if capacity > 0 && (atCapacity != 1 || !achieved.Valid) {
			t.Errorf("%s: capacity %.0f but %d passing probes at that rate", id, capacity, atCapacity)
		}
	}
	if n != 2 {
		t.Errorf("%d capacity rows, want one per trial (2)", n)
	}
	rep, err := exec.Command(bin, "report", latest).CombinedOutput()
	if err != nil || !strings.Contains(string(rep), "capacity req/s") {
		t.Errorf("report: %v\n%s", err, rep)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if b, err := exec.Command(bin, "report", "--html", page, latest).CombinedOutput(); err != nil {
		t.Fatalf("report --html: %v\n%s", err, b)
	}
	if b, _ := os.ReadFile(page); !strings.Contains(string(b), "Latency under load") || !strings.Contains(string(b), "workers=4: capacity") {
		t.Error("the HTML report has no latency–load chart with the capacity marked")
	}
}

// TestApplyCapacityBelowLowestRate: a search in which no probe meets the
// SLO (5 ms of service time against p99 < 1 ms) is a result, not a failed
// trial: the row says limit "none" and the lowest rate that failed, and
// the report shows the capacity as below it.
func TestApplyCapacityBelowLowestRate(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command(bin, "apply", "../../pipelines/capacity.hcl", "--var", "probe=2s", "--var", "max_probes=3",
		"--var", "slo=p99<1ms", "--out", out)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, b)
	}
	latest := filepath.Join(out, "latest")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`SELECT trial_id, status, capacity_rps, capacity_limit, capacity_first_failing_rps
		FROM read_parquet('%s') WHERE step = 'capacity' AND NOT discarded ORDER BY trial_id`, filepath.Join(latest, "trials.parquet")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, status, limit string
		var capacity, fail float64
		if err := rows.Scan(&id, &status, &capacity, &limit, &fail); err != nil {
			t.Fatal(err)
		}
		n++
		// Probes at 100, 50 and 25 req/s, each failing.
		if status != "ok" || capacity != 0 || limit != "none" || fail != 25 {
			t.Errorf("%s: status %s, capacity %.0f, limit %q, first failing %.0f; want ok, 0, none, 25", id, status, capacity, limit, fail)
		}
	}
	if n != 2 {
		t.Errorf("%d capacity rows, want 2", n)
	}
	rep, err := exec.Command(bin, "report", latest).CombinedOutput()
	if err != nil || !strings.Contains(string(rep), "< 25") || !strings.Contains(string(rep), "none") {
		t.Errorf("report: want the capacity shown as \"< 25\" with limit none: %v\n%s", err, rep)
	}
	csv, err := exec.Command(bin, "report", "--format", "csv", latest).CombinedOutput()
	if err != nil || !strings.Contains(string(csv), ",0,25,upper-bound,none,") {
		t.Errorf("report --format csv: want capacity_rps empty, bounds 0 and 25, method upper-bound: %v\n%s", err, csv)
	}
}

// TestFindMaxJSONOverH2 runs a short search (2 probes) with --h2 against
// an h2c server: every probe's requests arrive as HTTP/2, and the JSON
// gives each probe's streams per connection.
func TestFindMaxJSONOverH2(t *testing.T) {
	var h2, other atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2.Add(1)
		} else {
			other.Add(1)
		}
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	out, errOut, code := runLoad(t, "--find-max", "--json", "--h2", "--streams", "4", "--slo", "p99<5s,errors<1%", "--start-rate", "50",
		"--probe", "2s", "--max-probes", "2", "-c", "2", "-t", "1", srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Probes []struct {
			Rate        float64 `json:"rate"`
			Requests    int64   `json:"requests"`
			Errors      int64   `json:"errors"`
			Connections int     `json:"connections"`
			Streams     int     `json:"streams"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Probes) != 2 {
		t.Fatalf("got %+v", got)
	}
	for _, p := range got.Probes {
		if p.Requests == 0 || p.Errors != 0 || p.Connections != 2 || p.Streams != 4 {
			t.Errorf("probe %+v: want requests without errors over 2 connections × 4 streams", p)
		}
	}
	if h2.Load() < 150 || other.Load() != 0 {
		t.Errorf("server saw %d HTTP/2 requests and %d others, want about 300 and 0", h2.Load(), other.Load())
	}
}
