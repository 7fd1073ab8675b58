package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/load"
)

// testToken is the agents' token in tests.
const testToken = "0123456789abcdef-test-token"

// startAgents runs agents in this process, each with its clock shifted by
// shifts[i], allowed to load a target server it starts; it returns their
// URLs and the target's, and waits for them to exit at cleanup.
func startAgents(t *testing.T, shifts ...time.Duration) ([]string, string) {
	t.Helper()
	tgt := target(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	urls := make([]string, len(shifts))
	for i, sh := range shifts {
		ready := make(chan string, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Serve(ctx, ServeOptions{Listen: "127.0.0.1:0", Index: i, Version: "test", Idle: 30 * time.Second, ClockShift: sh,
				Token: testToken, Targets: []string{tgt}, Ready: func(a string) { ready <- a }, Logf: t.Logf})
			if err != nil {
				t.Error(err)
				ready <- ""
			}
		}()
		urls[i] = "http://" + <-ready
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return urls, tgt
}

func target(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello\n")) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestRunMergesAgents: two agents share a bounded load; the merged result
// counts exactly what they counted.
func TestRunMergesAgents(t *testing.T) {
	urls, tgt := startAgents(t, 0, 0)
	out, err := Run(context.Background(), Config{Token: testToken, Agents: urls, Options: load.Options{
		Targets: []load.Target{{URL: tgt}}, Connections: 5, Threads: 2, Requests: 2001, Tag: "load"},
		Tolerance: time.Minute, Logf: t.Logf}) // punctuality is not what this tests: a busy scheduler may start an agent 100 ms late
	if err != nil {
		t.Fatal(err)
	}
	m := out.Merged
	var reqs, hist int64
	for _, mem := range out.Members {
		reqs += mem.Result.Requests
		hist += mem.Result.Latency.TotalCount()
	}
	if m.Requests != reqs || m.Latency.TotalCount() != hist || m.Requests != 2001 {
		t.Errorf("merged %d requests (%d in the histogram), agents %d (%d); want 2001", m.Requests, m.Latency.TotalCount(), reqs, hist)
	}
	if s := out.Members; s[0].Share.Connections != 3 || s[1].Share.Connections != 2 || s[0].Share.Requests != 1001 {
		t.Errorf("shares %+v %+v, want 3/1001 and 2/1000", s[0].Share, s[1].Share)
	}
	if m.Connections != 5 || m.Tag != "load" {
		t.Errorf("merged connections %d tag %q", m.Connections, m.Tag)
	}
	var ivs int64
	for _, iv := range m.Intervals {
		ivs += iv.Requests
	}
	if ivs != m.Requests {
		t.Errorf("intervals hold %d requests, the total is %d", ivs, m.Requests)
	}
	for _, mem := range out.Members {
		if mem.CPUUser+mem.CPUSys <= 0 {
			t.Errorf("agent %d reported no CPU time", mem.Index)
		}
	}
}

// TestRunCorrectsClockSkew: agents whose clocks are an hour ahead and 40
// minutes behind still start at the common instant: the offset the
// controller measured is within its bound of the real shift, and each
// agent's real start (its reported start minus its shift) is the common
// instant plus its own lateness, within that bound.
func TestRunCorrectsClockSkew(t *testing.T) {
	shifts := []time.Duration{time.Hour, -40 * time.Minute, 0}
	urls, tgt := startAgents(t, shifts...)
	out, err := Run(context.Background(), Config{Token: testToken, Agents: urls, Options: load.Options{
		Targets: []load.Target{{URL: tgt}}, Connections: 3, Threads: 3, Duration: 300 * time.Millisecond},
		Tolerance: time.Minute, Logf: t.Logf}) // the lateness is checked against what the agent reports, not against 50 ms
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range out.Members {
		if e := (m.Offset - shifts[i]).Abs(); e > m.SkewBound {
			t.Errorf("agent %d: measured offset %s, real %s: error %s beyond the bound %s", i, m.Offset, shifts[i], e, m.SkewBound)
		}
		// The agent reported its start in its own clock; Run corrected
		// it by the measured offset. The real start is what the agent
		// reported minus its real shift.
		reported := m.Result.Started.Add(m.Offset)
		real := reported.Add(-shifts[i])
		if e := (real.Sub(out.Start) - m.Late).Abs(); e > m.SkewBound {
			t.Errorf("agent %d: started %s after the common instant, late %s by its clock: off by %s, beyond the bound %s",
				i, real.Sub(out.Start), m.Late, e, m.SkewBound)
		}
		if m.Late < 0 {
			t.Errorf("agent %d started %s before the instant", i, -m.Late)
		}
		// A constant shift does not drift.
		if !m.Redrifted || m.Drift.Abs() > m.DriftBound {
			t.Errorf("agent %d: re-probed %v, drift %s beyond its bound %s for a constant shift", i, m.Redrifted, m.Drift, m.DriftBound)
		}
	}
}

// TestRunMeasuresDrift: an agent whose clock jumps 250 ms ahead while
// its load runs (a proxy adds it to clock answers once the result was
// asked for) is reported with that drift, within its bound.
func TestRunMeasuresDrift(t *testing.T) {
	reals, tgt := startAgents(t, 0)
	real := reals[0]
	var jumped atomic.Bool
	proxy := clockProxy(real, func(path string) time.Time {
		if path == pathResult {
			jumped.Store(true)
		}
		if jumped.Load() {
			return time.Now().Add(250 * time.Millisecond)
		}
		return time.Now()
	})
	defer proxy.Close()
	out, err := Run(context.Background(), Config{Token: testToken, Agents: []string{proxy.URL}, Options: load.Options{
		Targets: []load.Target{{URL: tgt}}, Connections: 1, Duration: 200 * time.Millisecond},
		Tolerance: time.Minute, Logf: t.Logf}) // the start's punctuality is not what this tests
	if err != nil {
		t.Fatal(err)
	}
	m := out.Members[0]
	if !m.Redrifted || (m.Drift-250*time.Millisecond).Abs() > m.DriftBound {
		t.Errorf("re-probed %v, drift %s ± %s; want 250ms within the bound", m.Redrifted, m.Drift, m.DriftBound)
	}
}

// TestRunFailsOnLateAgent: an agent whose clock the controller cannot
// correct (it shifts after the probes) gets its start after the instant
// has passed and fails the load, naming itself.
func TestRunFailsOnLateAgent(t *testing.T) {
	urls, tgt := startAgents(t, 0)
	// A proxy that answers clock probes from an agent two seconds
	// ahead: the controller believes the agent is ahead and sends a start
	// instant two seconds early for it.
	proxy := clockProxy(urls[0], func(string) time.Time { return time.Now().Add(-2 * time.Second) })
	defer proxy.Close()
	out, err := Run(context.Background(), Config{Token: testToken, Agents: []string{proxy.URL}, Options: load.Options{
		Targets: []load.Target{{URL: tgt}}, Connections: 1, Duration: 200 * time.Millisecond}})
	if err == nil {
		t.Fatal("a late agent did not fail the load")
	}
	if !strings.Contains(err.Error(), "agent 1") || !strings.Contains(err.Error(), "after the start instant") {
		t.Errorf("error %q does not name the agent and its lateness", err)
	}
	if out == nil || len(out.Members) != 1 || out.Members[0].Err == nil {
		t.Errorf("outcome does not keep the failed member: %+v", out)
	}
}

func TestRunFailsOnUnreachableAgent(t *testing.T) {
	urls, tgt := startAgents(t, 0)
	_, err := Run(context.Background(), Config{Token: testToken, Agents: []string{urls[0], "http://127.0.0.1:1"}, Ready: 300 * time.Millisecond,
		Options: load.Options{Targets: []load.Target{{URL: tgt}}, Connections: 2, Duration: 200 * time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "agent 2") || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("Run = %v, want agent 2 not answering", err)
	}
}

// TestAgentExitsWithoutController: an agent nobody talks to exits after
// its idle timeout.
func TestAgentExitsWithoutController(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), ServeOptions{Listen: "127.0.0.1:0", Idle: 200 * time.Millisecond, Token: testToken, Targets: []string{"http://127.0.0.1:1/"}})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not exit within 30s of a 200ms idle timeout")
	}
}

// TestRunReportsProgress: a distributed load shows the agents' summed
// totals while it runs, never more than the merged result.
func TestRunReportsProgress(t *testing.T) {
	urls, tgt := startAgents(t, 0, 0)
	var mu sync.Mutex
	var seen []load.Progress
	out, err := Run(context.Background(), Config{Token: testToken, Agents: urls, Options: load.Options{
		Targets: []load.Target{{URL: tgt}}, Connections: 2, Threads: 1, Duration: 3 * time.Second, Rate: 400,
		Progress: func(p load.Progress) { mu.Lock(); seen = append(seen, p); mu.Unlock() }},
		Tolerance: time.Minute, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("no progress during a 3 s load on two agents")
	}
	for i, p := range seen {
		if p.Requests > out.Merged.Requests {
			t.Errorf("progress %d: %d requests, more than the merged %d", i, p.Requests, out.Merged.Requests)
		}
		if i > 0 && p.Requests < seen[i-1].Requests {
			t.Errorf("progress went back: %d then %d requests", seen[i-1].Requests, p.Requests)
		}
	}
	if last := seen[len(seen)-1]; last.Requests == 0 || last.Elapsed <= 0 {
		t.Errorf("last progress %+v: want requests and elapsed time", last)
	}
}

// clockProxy forwards every request to the agent at real but answers
// clock probes itself, with clock(); clock is also called with the path
// of every other request, before it is forwarded.
func clockProxy(real string, clock func(path string) time.Time) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == pathClock {
			writeJSON(w, http.StatusOK, Clock{ClockNS: clock(r.URL.Path).UnixNano()})
			return
		}
		clock(r.URL.Path)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, real+r.URL.Path, r.Body)
		req.Header = r.Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
}

// TestSessionRunsLoadsInSequence: one session runs several loads on the
// same agents, each merged exactly; a start while a load runs is refused.
func TestSessionRunsLoadsInSequence(t *testing.T) {
	urls, tgt := startAgents(t, 0, 30*time.Second)
	s, err := Open(Config{Token: testToken, Agents: urls, Logf: t.Logf, Tolerance: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, n := range []int64{300, 501, 800} {
		out, err := s.Load(context.Background(), load.Options{Targets: []load.Target{{URL: tgt}}, Connections: 2, Threads: 2, Requests: n})
		if err != nil {
			t.Fatalf("load %d: %v", i+1, err)
		}
		var sum int64
		for _, m := range out.Members {
			sum += m.Result.Requests
		}
		if out.Merged.Requests != n || sum != n || out.Merged.Latency.TotalCount() != n {
			t.Errorf("load %d: merged %d (histogram %d), agents %d; want %d", i+1, out.Merged.Requests, out.Merged.Latency.TotalCount(), sum, n)
		}
		if off := out.Members[1].Offset; (off - 30*time.Second).Abs() > out.Members[1].SkewBound {
			t.Errorf("load %d: agent 2's offset %s, want 30s ± %s", i+1, off, out.Members[1].SkewBound)
		}
	}
	// An agent refuses a second start while its load runs.
	c := &controller{cfg: s.cfg, client: s.cfg.Client}
	m := &Member{URL: urls[0], Share: Share{Connections: 1, Threads: 1}}
	long := load.Options{Targets: []load.Target{{URL: tgt}}, Connections: 1, Threads: 1, Duration: 2 * time.Second, Rate: 50}
	if err := c.start(context.Background(), m, long, time.Now().Add(100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	err = c.start(context.Background(), m, long, time.Now().Add(100*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "a load is running") {
		t.Errorf("second start while a load runs: %v", err)
	}
}
