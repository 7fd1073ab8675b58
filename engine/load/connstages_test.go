package load

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSlotRampSchedule: the schedule of stages of connections, exactly:
// from 0 up to 4 over 400 ms the connections open at 100, 200, 300 and
// 400 ms; flat for 400 ms; down to 1 over 300 ms they close at 900, 1000
// and 1100 ms; up to 3 over 200 ms two open again at 1200 and 1300 ms;
// flat to the end at 1500 ms. The count at each instant is k6's
// ramping-vus count (a + ⌊(b−a)·τ/d⌋).
func TestSlotRampSchedule(t *testing.T) {
	ms := time.Millisecond
	stages := []Stage{
		{Duration: 400 * ms, Connections: 4, Closed: true},
		{Duration: 400 * ms, Connections: 4, Closed: true},
		{Duration: 300 * ms, Connections: 1, Closed: true},
		{Duration: 200 * ms, Connections: 3, Closed: true},
		{Duration: 200 * ms, Connections: 3, Closed: true},
	}
	sr := newSlotRamp(0, stages)
	want := [][]slotWindow{
		{{100 * ms, 1500 * ms}},
		{{200 * ms, 1100 * ms}, {1200 * ms, 1500 * ms}},
		{{300 * ms, 1000 * ms}, {1300 * ms, 1500 * ms}},
		{{400 * ms, 900 * ms}},
	}
	if sr.peak != 4 || len(sr.windows) != 4 {
		t.Fatalf("peak %d, %d slots; want 4", sr.peak, len(sr.windows))
	}
	for i := range want {
		if len(sr.windows[i]) != len(want[i]) {
			t.Errorf("slot %d: windows %v, want %v", i, sr.windows[i], want[i])
			continue
		}
		for j := range want[i] {
			if sr.windows[i][j] != want[i][j] {
				t.Errorf("slot %d: windows %v, want %v", i, sr.windows[i], want[i])
			}
		}
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {99 * ms, 0}, {100 * ms, 1}, {250 * ms, 2}, {400 * ms, 4}, {799 * ms, 4}, {900 * ms, 3}, {1099 * ms, 2}, {1100 * ms, 1}, {1250 * ms, 2}, {1499 * ms, 3}, {1500 * ms, 0}} {
		if got := sr.count(c.at); got != c.want {
			t.Errorf("at %s: %d connections open, want %d", c.at, got, c.want)
		}
	}
	// From -c: 2 connections open at the start, down to 0 over 1 s (the
	// second closes at 500 ms, the first at 1 s), then none.
	sr = newSlotRamp(2, []Stage{{Duration: time.Second, Closed: true}, {Duration: time.Second, Connections: 0, Closed: true}})
	if len(sr.windows) != 2 || len(sr.windows[0]) != 1 || sr.windows[0][0] != (slotWindow{0, time.Second}) || sr.windows[1][0] != (slotWindow{0, 500 * ms}) {
		t.Errorf("2 down to 0 over 1 s: %v", sr.windows)
	}
}

// TestConnectionStagesAgainstServer: a load whose stages ramp connections
// (0 → 4, 4, → 1, → 3, 3) against a server that counts its connections:
// the server accepts exactly the schedule's six (four on the way up, two
// more after the ramp down), at most four at once, each carrying requests,
// and every one is closed when the load returns. Counted on the server's
// side: the numbers do not depend on how busy the machine is.
func TestConnectionStagesAgainstServer(t *testing.T) {
	var mu sync.Mutex
	open, most, accepted := 0, 0, 0
	perConn := []int{}
	srv := newRawServer(t, func(c net.Conn) {
		mu.Lock()
		accepted++
		id := len(perConn)
		perConn = append(perConn, 0)
		open++
		most = max(most, open)
		mu.Unlock()
		defer func() {
			mu.Lock()
			open--
			mu.Unlock()
		}()
		readRequests(c, func(w io.Writer, method, path string) bool {
			mu.Lock()
			perConn[id]++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			_, err := io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return err == nil
		})
	})
	stages, err := ParseStages([]string{"400ms:4c", "400ms:4c", "300ms:1c", "200ms:3c", "600ms:3c"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: srv.URL("/")}}, Stages: stages, Threads: 2, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv.waitClientsGone(t)
	mu.Lock()
	defer mu.Unlock()
	if accepted != 6 || most != 4 || open != 0 {
		t.Errorf("the server accepted %d connections, %d at most at once, %d left open; want 6, 4, 0", accepted, most, open)
	}
	for i, n := range perConn {
		if n == 0 {
			t.Errorf("connection %d carried no request", i+1)
		}
	}
	if res.Connections != 4 || res.Engine != EngineGoroutines || res.Errors != 0 || res.Requests < 6 {
		t.Errorf("result: %d connections, engine %s, %d requests, %d errors (%s); want 4, goroutines, at least 6, 0", res.Connections, res.Engine, res.Requests, res.Errors, res.ErrorSummary())
	}
}

// TestConnectionStagesValidate: stages of connections are refused, with
// the field, where they cannot run.
func TestConnectionStagesValidate(t *testing.T) {
	c := Stage{Duration: time.Second, Connections: 4, Closed: true}
	for _, x := range []struct {
		o    Options
		want string
	}{
		{Options{Stages: []Stage{c, {Duration: time.Second, Rate: 100}}}, "stage 2 is a rate, stage 1 a number of connections"},
		{Options{Stages: []Stage{c}, Rate: 100}, "leave the rate out"},
		{Options{Stages: []Stage{c}, Protocol: ProtoH2}, "HTTP/1.1 loads only for now"},
		{Options{Stages: []Stage{c}, Close: true}, "--close"},
		{Options{Stages: []Stage{{Duration: time.Second, Closed: true}}}, "no stage reaches 1 connection"},
		{Options{Stages: []Stage{c}, Duration: 5 * time.Second}, "lasts their sum"},
	} {
		x.o.Targets = []Target{{URL: "http://127.0.0.1:1/"}}
		if err := x.o.Validate(); err == nil || !strings.Contains(err.Error(), x.want) {
			t.Errorf("%+v: %v, want %q", x.o.Stages, err, x.want)
		}
	}
}
