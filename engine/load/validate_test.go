package load

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestValidate pins the one rule every front end applies: each bad setting
// is a *FieldError naming the step attribute, before and after Defaults.
func TestValidate(t *testing.T) {
	ok := []Target{{URL: "http://127.0.0.1:1/"}}
	cases := []struct {
		o      Options
		field  string
		reason string
	}{
		{Options{}, "target", "no target URL given"},
		{Options{Targets: []Target{{URL: "gopher://h/"}}}, "target", "unsupported scheme"},
		{Options{Targets: []Target{{URL: "http://h/", Weight: -2}}}, "weight", "must be positive"},
		{Options{Targets: ok, Connections: -1}, "connections", "must be at least 1"},
		{Options{Targets: ok, Connections: MaxConnections + 1}, "connections", "must be at most 1000000"},
		{Options{Targets: ok, Threads: -1}, "threads", "must be at least 1"},
		{Options{Targets: ok, Connections: MaxThreads + 1, Threads: MaxThreads + 1}, "threads", "must be at most 4096"},
		{Options{Targets: ok, Requests: -3}, "requests", "must not be negative"},
		{Options{Targets: ok, Rate: -1}, "rate", "positive number of requests per second"},
		{Options{Targets: ok, Rate: math.NaN()}, "rate", "positive number of requests per second"},
		{Options{Targets: ok, Rate: math.Inf(1)}, "rate", "positive number of requests per second"},
		{Options{Targets: ok, Rate: 2e8}, "rate", "10 million requests/s per connection"}, // 10 default connections
		{Options{Targets: ok, Rate: 1e-12}, "rate", "at least 0.001 requests per second"},
		{Options{Targets: ok, Rate: 9e-4, Connections: 1}, "rate", "at least 0.001"},
		{Options{Targets: ok, Rate: math.SmallestNonzeroFloat64}, "rate", "at least 0.001"},
		{Options{Targets: ok, Interval: time.Nanosecond}, "interval", "at least 10ms"},
		{Options{Targets: ok, Interval: 9 * time.Millisecond}, "interval", "at least 10ms"},
		{Options{Targets: ok, Duration: 2 * time.Hour, Interval: 10 * time.Millisecond}, "interval", "makes 720000 timeseries rows over the duration 2h0m0s, more than 100000"},
		{Options{Targets: ok, Duration: 28 * time.Hour}, "interval", "more than 100000"}, // the default 1s
		{Options{Targets: ok, Duration: MaxDuration + time.Second, Interval: time.Hour}, "duration", "must be at most 168h0m0s"},
		{Options{Targets: ok, Timeout: 2 * time.Hour}, "timeout", "must be at most 1h0m0s"},
		{Options{Targets: ok, Duration: -time.Second}, "duration", "must not be negative"},
		{Options{Targets: ok, Timeout: -time.Second}, "timeout", "must not be negative"},
		{Options{Targets: ok, Interval: -time.Second}, "interval", "must not be negative"},
		{Options{Targets: ok, BusyPoll: -time.Microsecond}, "busy_poll", "must not be negative"},
		{Options{Targets: ok, BusyPoll: MaxBusyPoll + 1}, "busy_poll", "at most 10ms"},
		{Options{Targets: ok, Protocol: ProtoH2, Streams: 2, Nap: -time.Microsecond}, "nap", "must not be negative"},
		{Options{Targets: ok, Protocol: ProtoH2, Streams: 2, Nap: MaxNap + 1}, "nap", "at most 1ms"},
		{Options{Targets: ok, Nap: time.Microsecond}, "nap", `naps need protocol "h2"`},
		{Options{Targets: ok, Protocol: ProtoH2, Nap: time.Microsecond}, "nap", "naps need streams of 2 or more"},
		{Options{Targets: ok, Protocol: ProtoH2, Streams: 2, Rate: 100, Nap: time.Microsecond}, "nap", "naps are for closed loop"},
		{Options{Targets: ok, Engine: "fastest"}, "engine", "want auto, uring, epoll or goroutines"},
	}
	for _, tc := range cases {
		for _, o := range []Options{tc.o, Defaults(tc.o)} {
			fes := FieldErrors(o.Validate())
			if len(fes) != 1 || fes[0].Field != tc.field || !strings.Contains(fes[0].Reason, tc.reason) {
				t.Errorf("%+v: field errors %v, want one on %s saying %q", o, fes, tc.field, tc.reason)
			}
			if err := Validate(o); err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Validate(%+v) = %v, want %q", o, err, tc.reason)
			}
		}
	}
	good := []Options{
		{Targets: ok},
		{Targets: ok, Connections: MaxConnections, Threads: MaxThreads, Rate: 1e7, BusyPoll: MaxBusyPoll, Requests: 1},
		{Targets: ok, Protocol: ProtoH2, Streams: 10, Nap: MaxNap},
		{Targets: ok, Connections: MaxConnections, Rate: MinRate, Interval: MinInterval, Duration: MaxIntervals * MinInterval},
		{Targets: ok, Rate: MinRate, Duration: MaxDuration, Timeout: MaxTimeout, Interval: time.Hour},
		{Requester: fixedPool(ok)},
	}
	for _, o := range good {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
		if err := Defaults(o).Validate(); err != nil {
			t.Errorf("after Defaults, %+v: %v", o, err)
		}
	}
	// Every problem is reported, not only the first.
	err := Options{Targets: ok, Connections: -1, Threads: -1, Requests: -1}.Validate()
	if fes := FieldErrors(err); len(fes) != 3 {
		t.Errorf("three bad settings: %v", fes)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "connections" || err.Error() == "" {
		t.Errorf("errors.As on %v: %+v", err, fe)
	}
}

type fixedPool []Target

func (p fixedPool) Pool() ([]Target, error) { return p, nil }

// TestTinyRates: a rate too small for a send period is refused before
// anything is sent (it used to overflow the period into a flood), and the
// smallest rate accepted sends what it says: over 300 ms and 64
// connections, at 0.001 req/s, the first connection's one request at most.
func TestTinyRates(t *testing.T) {
	srv := okServer(t)
	for _, rate := range []float64{1e-12, 1e-300, 5e-4} {
		res, err := Run(context.Background(), Options{Targets: []Target{{URL: srv.URL("/")}}, Rate: rate, Duration: 300 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "at least 0.001 requests per second") || res != nil {
			t.Errorf("rate %g: %v, %v; want it refused", rate, res, err)
		}
	}
	res, err := Run(context.Background(), Options{Targets: []Target{{URL: srv.URL("/")}}, Rate: MinRate, Connections: 64, Threads: 1,
		Duration: 300 * time.Millisecond, Interval: MinInterval})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests+res.Errors > 1 {
		t.Errorf("rate %g over 300ms sent %d requests, want at most 1", MinRate, res.Requests+res.Errors)
	}
	// Requests-bounded at the smallest rate: the histogram ceiling
	// (requests ÷ rate) is computed without overflowing.
	r, err := newRunner(Options{Targets: []Target{{URL: srv.URL("/")}}, Rate: MinRate, Requests: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	if r.highest != int64(time.Hour/time.Microsecond) {
		t.Errorf("histogram ceiling %dµs, want the 1h cap", r.highest)
	}
}
