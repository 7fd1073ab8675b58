package load

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/serve"
)

// searchServe runs a capacity search against the built-in server with cfg,
// from 200 req/s with 3 s probes. The tests bound latency loosely (p99 < 1s)
// so that a busy machine, whose scheduler can leave the generator waiting
// for hundreds of milliseconds, does not fail probes below capacity; above
// it the completion rate (97% of the offered rate) fails them.
func searchServe(t *testing.T, cfg serve.Config, lo Options, slo string, maxProbes int) *Capacity {
	t.Helper()
	h, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := measure.ParseSLO(slo)
	if err != nil {
		t.Fatal(err)
	}
	lo.Targets = []Target{{URL: srv.URL + "/"}}
	c, err := FindMax(context.Background(), SearchOptions{
		Load: lo, SLO: s, Start: 200, Probe: 3 * time.Second, Settle: time.Second, Pause: 300 * time.Millisecond,
		MaxProbes: maxProbes,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Probes {
		t.Logf("%6.0f req/s: achieved %6.0f, p99 %8.0fµs, unc p50 %6.0fµs, busy %3.0f%%, behind %s, cpu %3.0f%%, pass %v %s %s",
			p.Rate, p.Achieved, p.P99, p.UncorrectedP50, p.Busy*100, p.MeanBehind, p.LoaderCPU*100, p.Pass, p.Cause, p.Reason)
	}
	t.Log(c.Verdict())
	return c
}

// TestFindMaxServerPlateau: a server of known capacity (4 workers × 5 ms =
// at most 800 req/s) loaded over the default 10 connections. At its
// capacity the queue forms in the client (every connection busy, sends
// late, each request fast from its actual send): that is the server's
// limit. On a quiet machine the search lands within 5% of 800 req/s (run
// with -count=5 to see it land every time). On a busy one the server's
// 5 ms sleeps overrun and its real capacity is lower — 4 workers over the
// service time the first probe measured (its uncorrected p50) — so the
// test bounds the capacity by what the server could do: never above 800
// (+5%), not below 75% of that measured capacity.
func TestFindMaxServerPlateau(t *testing.T) {
	c := searchServe(t, serve.Config{Workers: 4, Delay: 5 * time.Millisecond}, Options{Threads: 1}, "p99<1s,errors<1%", 0)
	if c.Limit != "server" {
		t.Fatalf("limit %q, want server: %s", c.Limit, c.Verdict())
	}
	if c.Rate > 800*1.05 {
		t.Errorf("capacity %.0f req/s, above what 4 workers × 5 ms can answer (800)", c.Rate)
	}
	service := c.Probes[0].UncorrectedP50 // µs, at the lowest rate: the server's own time, no queue
	measured := min(800, 4/(service/1e6))
	if c.Rate < 0.75*measured {
		t.Errorf("capacity %.0f req/s, below 75%% of the %.0f req/s the server could answer (4 workers × %.0f µs measured at %.0f req/s)",
			c.Rate, measured, service, c.Probes[0].Rate)
	}
}

// TestFindMaxConnectionBound: a server that answers every request in 5 ms
// with no limit on concurrency, loaded over 4 connections: the connections
// carry at most 800 req/s while the server answers as fast as unloaded.
// That is the generator's limit (too few connections), and the verdict says
// so and suggests more.
func TestFindMaxConnectionBound(t *testing.T) {
	c := searchServe(t, serve.Config{Delay: 5 * time.Millisecond}, Options{Connections: 4, Threads: 1}, "p99<1s,errors<1%", 0)
	if c.Limit != "generator" || c.Cause != CauseConnections {
		t.Fatalf("limit %q cause %q, want generator (connections): %s", c.Limit, c.Cause, c.Verdict())
	}
	if v := c.Verdict(); !strings.Contains(v, "all 4 connections") || !strings.Contains(v, "-c 8") {
		t.Errorf("verdict %q: want it to name the 4 busy connections and suggest -c 8", v)
	}
	if c.Rate > 800*1.05 {
		t.Errorf("at least %.0f req/s: 4 connections × 5 ms cannot carry more than 800", c.Rate)
	}
}

// TestFindMaxAllErrors: a server that answers only 500 has no capacity,
// whether the SLO bounds errors or not (then a majority of errors fails a
// probe), whatever its latency.
func TestFindMaxAllErrors(t *testing.T) {
	for _, slo := range []string{"p99<200ms,errors<1%", "p99<200ms", "p99.9<1s,errors<60%"} {
		t.Run(slo, func(t *testing.T) {
			c := searchServe(t, serve.Config{Status: 503}, Options{Threads: 1}, slo, 3)
			if c.Limit != "none" || c.Rate != 0 {
				t.Fatalf("limit %q at %.0f req/s, want none: %s", c.Limit, c.Rate, c.Verdict())
			}
			for _, p := range c.Probes {
				if p.Pass || p.GeneratorLimited || !strings.Contains(p.Reason, "errors 100%") {
					t.Errorf("probe %.0f: pass %v, generator %v, %q; want a server failure on errors", p.Rate, p.Pass, p.GeneratorLimited, p.Reason)
				}
			}
		})
	}
}

// TestJudgeErrors: the error rules of a probe. With an errors term the
// ratio is judged against it; without one, more than half failing fails.
// Either failure is the server's, whatever the latency and the generator's
// lag.
func TestJudgeErrors(t *testing.T) {
	fast := make([]int64, 100)
	for i := range fast {
		fast[i] = 200
	}
	withErrors := func(perInterval int64) *Result {
		res := judgedResult(200, fast, 200, 0)
		for i := range res.Intervals {
			res.Intervals[i].Errors = min(perInterval, res.Intervals[i].Requests)
		}
		return res
	}
	for _, c := range []struct {
		slo    string
		errors int64 // of 100 responses per judged interval
		pass   bool
		reason string
	}{
		{"p99<10ms", 0, true, ""},
		{"p99<10ms", 50, true, ""}, // half is not a majority
		{"p99<10ms", 51, false, "errors 51% of the requests"},
		{"p99<10ms", 100, false, "errors 100% of the requests"},
		{"p99<10ms,errors<1%", 1, true, ""},
		{"p99<10ms,errors<1%", 2, false, "errors 2% > 1%"},
		{"errors<60%", 100, false, "errors 100% > 60%"},
		{"errors<100%", 100, true, ""},
	} {
		slo, err := measure.ParseSLO(c.slo)
		if err != nil {
			t.Fatal(err)
		}
		p := judge(slo, 100, withErrors(c.errors), time.Second)
		if p.Pass != c.pass || !strings.Contains(p.Reason, c.reason) || p.ErrorsFailed == c.pass {
			t.Errorf("%s with %d%% errors: pass %v, errors failed %v, %q; want pass %v, %q", c.slo, c.errors, p.Pass, p.ErrorsFailed, p.Reason, c.pass, c.reason)
		}
	}
}

// TestSearchErrorsAreTheServers: every probe fails on errors while its
// sends are late, its connections busy, the server fast and the loader's CPU
// high — each of which alone would blame the generator. The search reports
// no capacity, never a generator limit.
func TestSearchErrorsAreTheServers(t *testing.T) {
	slo, _ := measure.ParseSLO("p99<10ms")
	o := SearchOptions{SLO: slo, MaxProbes: 6}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	fast := make([]int64, 100)
	for i := range fast {
		fast[i] = 200
	}
	got, err := search(context.Background(), o, func(_ context.Context, rate float64) (Probe, error) {
		res := judgedResult(200, fast, 200, 50*time.Millisecond)
		for i := range res.Intervals {
			res.Intervals[i].Errors = res.Intervals[i].Requests
		}
		res.Connections = 1
		p := judge(slo, rate, res, time.Second)
		p.LoaderCPU = 1
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Limit != "none" || got.Cause != "" {
		t.Errorf("%s (limit %q, cause %q); want no capacity", got.Verdict(), got.Limit, got.Cause)
	}
	for _, p := range got.Probes {
		if p.GeneratorLimited || strings.Contains(p.Reason, "again") {
			t.Errorf("probe %.0f blamed on the generator or probed again: %q", p.Rate, p.Reason)
		}
	}
}

// TestSearchCauses: the verdict names what the generator was short of.
func TestSearchCauses(t *testing.T) {
	slo, _ := measure.ParseSLO("p99<10ms")
	o := SearchOptions{SLO: slo}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	model := queueModel(2000, 1e9, time.Millisecond, 4)
	for _, c := range []struct {
		name  string
		tweak func(p *Probe)
		cause string
		words string
	}{
		{"cpu", func(p *Probe) { p.LoaderCPU = 0.95 }, CauseCPU, "generator-limited (CPU)"},
		{"connections", func(p *Probe) { p.Busy, p.Connections, p.MeanBehind = 1.2, 16, 40*time.Millisecond }, CauseConnections, "all 16 connections (-c) were busy: search again with more, e.g. -c 32"},
		{"clock", func(p *Probe) { p.Busy, p.Stalled = 0.2, true }, CauseClock, "generator-limited (clock)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := search(context.Background(), o, func(ctx context.Context, rate float64) (Probe, error) {
				p, err := model(ctx, rate)
				if rate >= 800 {
					// The server keeps answering as fast as unloaded.
					p.Pass, p.Reason, p.P99, p.UncorrectedP50 = false, "p99 25ms > 10ms", 25_000, 1000
					c.tweak(&p)
				}
				return p, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got.Limit != "generator" || got.Cause != c.cause || got.Rate != 400 || !strings.Contains(got.Verdict(), c.words) {
				t.Errorf("%s (limit %q, cause %q); want generator-limited by %s above 400 saying %q", got.Verdict(), got.Limit, got.Cause, c.cause, c.words)
			}
		})
	}
}
