package load

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// stallServer answers at once, except that during [stallAt, stallAt+stall)
// after it starts every request waits until the stall ends (a server that
// freezes for 500 ms every 5 s, seen through one stall).
func stallServer(t *testing.T, stallAt, stall time.Duration) *httptest.Server {
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		phase := time.Since(start) % (5 * time.Second)
		if phase >= stallAt && phase < stallAt+stall {
			time.Sleep(stallAt + stall - phase)
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOpenLoopSeesTheStall: below capacity, an open-loop load reports the
// stall in its corrected percentiles (requests that should have been sent
// during the stall waited for it), while the uncorrected latency — what a
// closed-loop tool measures — hides it.
func TestOpenLoopSeesTheStall(t *testing.T) {
	srv := stallServer(t, 1500*time.Millisecond, 500*time.Millisecond)
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: srv.URL + "/"}}, Connections: 4, Rate: 400, Duration: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("errors: %s", res.ErrorSummary())
	}
	p99 := time.Duration(res.Latency.ValueAtQuantile(99)) * time.Microsecond
	u99 := time.Duration(res.Uncorrected.ValueAtQuantile(99)) * time.Microsecond
	t.Logf("requests %d, corrected p99 %v, uncorrected p99 %v, max behind %v", res.Requests, p99, u99, res.MaxBehind)
	if p99 < 400*time.Millisecond {
		t.Errorf("corrected p99 = %v, want >= 400ms (the 500ms stall)", p99)
	}
	if u99 >= 100*time.Millisecond {
		t.Errorf("uncorrected p99 = %v, want it small (only the 4 in-flight requests saw the stall)", u99)
	}
	if res.MaxBehind < 300*time.Millisecond {
		t.Errorf("max behind schedule = %v, want the stall to show", res.MaxBehind)
	}
}

// TestClosedLoopHidesTheStall: a closed loop sees the stall only in its
// max; the percentiles stay small (coordinated omission).
func TestClosedLoopHidesTheStall(t *testing.T) {
	srv := stallServer(t, 1000*time.Millisecond, 500*time.Millisecond)
	res, err := Run(context.Background(), Options{
		Targets: []Target{{URL: srv.URL + "/"}}, Connections: 4, Duration: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	p99 := time.Duration(res.Latency.ValueAtQuantile(99)) * time.Microsecond
	mx := time.Duration(res.Latency.Max()) * time.Microsecond
	t.Logf("requests %d, p99 %v, max %v", res.Requests, p99, mx)
	if res.Requests < 1000 {
		t.Skipf("only %d requests: the machine is too loaded for the stall to be a small fraction", res.Requests)
	}
	if mx < 400*time.Millisecond {
		t.Errorf("max = %v, want >= 400ms (the stall)", mx)
	}
	if p99 >= 100*time.Millisecond {
		t.Errorf("p99 = %v, want small: a closed loop hides the stall", p99)
	}
}

// TestFixedServiceTime: against a server that takes 20 ms per request,
// the median is 20–25 ms. The lower bound is exact (the generator never
// reports less than the service time); the upper bound depends on how
// promptly a loaded machine wakes the server's timer, so a run may be
// repeated twice before the test fails.
func TestFixedServiceTime(t *testing.T) {
	s := newRawServer(t, func(c net.Conn) {
		readRequests(c, func(w io.Writer, _, _ string) bool {
			time.Sleep(20 * time.Millisecond)
			_, err := io.WriteString(w, okResponse)
			return err == nil
		})
	})
	for _, rate := range []float64{0, 100} {
		var p50s []time.Duration
		for attempt := 0; attempt < 3; attempt++ {
			res, err := Run(context.Background(), Options{Targets: []Target{{URL: s.URL("/")}}, Connections: 4, Requests: 120, Rate: rate})
			if err != nil {
				t.Fatal(err)
			}
			p50 := time.Duration(res.Latency.ValueAtQuantile(50)) * time.Microsecond
			if p50 < 20*time.Millisecond {
				t.Fatalf("rate %g: p50 = %v, below the 20ms service time", rate, p50)
			}
			p50s = append(p50s, p50)
			if p50 <= 25*time.Millisecond {
				break
			}
		}
		if last := p50s[len(p50s)-1]; last > 25*time.Millisecond {
			t.Errorf("rate %g: p50 = %v in every attempt, want 20–25ms", rate, p50s)
		}
	}
}
