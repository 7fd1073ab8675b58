package load

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/measure"
)

// TestScheduledCountsTheWalk: scheduled counts exactly the sends a slot
// walking next += period takes before the end, for staggers and periods
// that do and do not divide the duration.
func TestScheduledCountsTheWalk(t *testing.T) {
	for _, c := range []struct{ first, period, end time.Duration }{
		{0, time.Millisecond, time.Second},
		{time.Millisecond / 3, time.Millisecond, time.Second},
		{999 * time.Millisecond, time.Millisecond, time.Second},
		{time.Second, time.Millisecond, time.Second},
		{2 * time.Second, time.Millisecond, time.Second},
		{7, 333333, time.Second},
		{0, 3 * time.Second, time.Second},
	} {
		var walked int64
		for next := c.first; next < c.end; next += c.period {
			walked++
		}
		if got := scheduled(c.first, c.period, c.end); got != walked {
			t.Errorf("scheduled(%v, %v, %v) = %d, the walk takes %d", c.first, c.period, c.end, got, walked)
		}
	}
}

// slowServer answers every request after delay, one at a time per
// connection (HTTP/1.1).
func slowServer(t *testing.T, delay time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// checkAccounted asserts that every intended send of res is accounted
// for: an outcome, unfinished (at most one per connection and stream) or
// missed, adding up to the schedule's rate × duration.
func checkAccounted(t *testing.T, res *Result, intended int64, streams int) {
	t.Helper()
	outcomes := res.Requests + res.Errors - res.ErrorsBy["http"]
	t.Logf("engine %s: intended %d, outcomes %d (requests %d), unfinished %d, missed %d, max behind %v; warning %q",
		res.Engine, res.Intended, outcomes, res.Requests, res.Unfinished, res.Missed, res.MaxBehind, res.Warning)
	if res.Intended != intended {
		t.Errorf("intended = %d, want rate × duration = %d", res.Intended, intended)
	}
	if res.Unfinished < 0 || res.Unfinished > int64(res.Connections*streams) {
		t.Errorf("unfinished = %d, want 0..%d (one per connection and stream at most)", res.Unfinished, res.Connections*streams)
	}
	if got := outcomes + res.Unfinished + res.Missed; got != res.Intended {
		t.Errorf("outcomes %d + unfinished %d + missed %d = %d, want intended %d", outcomes, res.Unfinished, res.Missed, got, res.Intended)
	}
}

// TestOpenLoopAboveCapacityCountsMissed: 2 connections to a 20 ms server
// carry about 100 req/s; at -R 1000 for 1 s the schedule intends exactly
// 1,000 sends, of which some 900 cannot go out. Each is counted (missed),
// the verdict says so, and the schedule's lag covers the missed ones
// (the oldest was intended near the start, so the load ended ~1 s behind).
// Run under each engine with BENCHFLOW_LOAD_ENGINE.
func TestOpenLoopAboveCapacityCountsMissed(t *testing.T) {
	srv := slowServer(t, 20*time.Millisecond)
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: srv.URL + "/"}}, Connections: 2, Rate: 1000, Duration: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkAccounted(t, res, 1000, 1)
	if res.Missed < 700 {
		t.Errorf("missed = %d, want most of the 1000 sends (capacity ~100/s)", res.Missed)
	}
	if !strings.Contains(res.Warning, "never sent (missed)") {
		t.Errorf("warning %q does not name the missed sends", res.Warning)
	}
	if res.MaxBehind < 500*time.Millisecond {
		t.Errorf("max behind = %v, want the missed sends' lag (~1s)", res.MaxBehind)
	}
	// A late send's lag is in its latency: the corrected p99 is far above
	// the server's 20 ms.
	if p99 := time.Duration(res.Latency.ValueAtQuantile(99)) * time.Microsecond; p99 < 200*time.Millisecond {
		t.Errorf("corrected p99 = %v, want the late sends' lag in it", p99)
	}
	var text strings.Builder
	if err := WriteText(&text, res, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Intended sends: 1000;") || !strings.Contains(text.String(), "WARNING: ") {
		t.Errorf("summary lacks the intended sends or the warning:\n%s", text.String())
	}
	var j map[string]any
	var buf strings.Builder
	if err := measure.WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(buf.String()), &j); err != nil {
		t.Fatal(err)
	}
	if j["intended"] != float64(1000) || j["missed"] != float64(res.Missed) {
		t.Errorf("--json intended %v missed %v, want 1000 and %d", j["intended"], j["missed"], res.Missed)
	}
}

// TestOpenLoopAboveCapacityCountsMissedH2: the same over h2c, one stream
// per connection.
func TestOpenLoopAboveCapacityCountsMissedH2(t *testing.T) {
	srv := newH2TestServer(t, false, 100, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("ok"))
	})
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: srv.url + "/"}}, Connections: 2, Rate: 1000, Duration: time.Second, Protocol: ProtoH2,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkAccounted(t, res, 1000, 1)
	if res.Missed < 700 || !strings.Contains(res.Warning, "missed") {
		t.Errorf("missed = %d (warning %q), want most of the 1000 sends counted and named", res.Missed, res.Warning)
	}
}

// TestOpenLoopBelowCapacityMissesNothing: a rate the connections carry
// with a wide margin (each sends every 200 ms to a server that answers at
// once, so only a stall of 200 ms could make one miss) has every send
// accounted for and none missed, and no missed warning.
func TestOpenLoopBelowCapacityMissesNothing(t *testing.T) {
	srv := slowServer(t, 0)
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: srv.URL + "/"}}, Connections: 4, Rate: 20, Duration: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkAccounted(t, res, 20, 1)
	if res.Missed != 0 || strings.Contains(res.Warning, "missed") {
		t.Errorf("missed = %d (warning %q), want none at 20 req/s over 4 connections", res.Missed, res.Warning)
	}
}

// TestClosedLoopHasNoSchedule: a closed loop intends nothing, so it
// reports no intended, missed or unfinished sends.
func TestClosedLoopHasNoSchedule(t *testing.T) {
	srv := slowServer(t, 0)
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: srv.URL + "/"}}, Connections: 1, Requests: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Intended != 0 || res.Missed != 0 || res.Unfinished != 0 {
		t.Errorf("closed loop: intended %d missed %d unfinished %d, want 0", res.Intended, res.Missed, res.Unfinished)
	}
}
