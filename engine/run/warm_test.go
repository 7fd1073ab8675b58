package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

func TestSteadyAcross(t *testing.T) {
	w := func(r, p float64) windowStat { return windowStat{r, p} }
	if ok, _ := steadyAcross([]windowStat{w(100, 10), w(101, 10)}, 0.05); ok {
		t.Error("two windows called steady")
	}
	if ok, spread := steadyAcross([]windowStat{w(50, 30), w(100, 10), w(103, 10), w(98, 10.2)}, 0.05); !ok || spread > 0.03 {
		t.Errorf("last three within 3%%: ok=%v spread=%v", ok, spread)
	}
	if ok, _ := steadyAcross([]windowStat{w(100, 10), w(100, 10), w(100, 13)}, 0.05); ok {
		t.Error("a p50 jump of 30% called steady")
	}
}

// TestWarmUntilSteady warms a loopback server in windows: a steady server
// stops the warm-up early; a server that slows down with every request
// never settles and the warm-up runs to its maximum.
func TestWarmUntilSteady(t *testing.T) {
	var first atomic.Int64
	slowing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The delay doubles every 400 ms of wall time (from 1 ms): any
		// three 200 ms windows span a halving of req/s however fast the
		// machine is (counting requests instead would let a busy
		// machine's slow start look steady).
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		k := min((now-first.Load())/int64(400*time.Millisecond), 6)
		time.Sleep(time.Millisecond << k)
		w.Write([]byte("ok"))
	}))
	defer slowing.Close()
	quick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Microsecond)
		w.Write([]byte("ok"))
	}))
	defer quick.Close()
	opts := func(url string) load.Options {
		o, err := steps.LoadOptions(pipeline.KindWarm, &steps.LoadConfig{Target: url, Connections: 2, Threads: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	// A steady server becomes steady as soon as three windows agree; a busy
	// machine can make a few windows differ by more than half, so the
	// bound is far (the warm-up returns at the first steady three).
	ws := warmSettings{window: 200 * time.Millisecond, max: 30 * time.Second, tolerance: 0.5}
	res, how, err := warmUntilSteady(context.Background(), opts(quick.URL), ws, nil)
	if err != nil || !strings.HasPrefix(how, "steady after ") || res == nil || res.Duration >= ws.max {
		t.Errorf("steady server, 50%% tolerance: %q err=%v duration=%v", how, err, res.Duration)
	}
	if res != nil && (res.Requests == 0 || len(res.Intervals) < 3 || res.Latency.TotalCount() != res.Requests) {
		t.Errorf("merged windows: %d requests, %d intervals, %d latencies", res.Requests, len(res.Intervals), res.Latency.TotalCount())
	}
	for i := 1; res != nil && i < len(res.Intervals); i++ {
		if res.Intervals[i].Start <= res.Intervals[i-1].Start {
			t.Fatalf("merged intervals out of order at %d: %v then %v", i, res.Intervals[i-1].Start, res.Intervals[i].Start)
		}
	}
	ws = warmSettings{window: 200 * time.Millisecond, max: 2 * time.Second, tolerance: 0.02}
	res, how, err = warmUntilSteady(context.Background(), opts(slowing.URL), ws, nil)
	t.Logf("slowing: %s", how)
	if err != nil || !strings.HasPrefix(how, "not steady within 2s (") {
		t.Errorf("slowing server: %q err=%v", how, err)
	}
}
