package load

import (
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
		{Options{Targets: ok, Duration: -time.Second}, "duration", "must not be negative"},
		{Options{Targets: ok, Timeout: -time.Second}, "timeout", "must not be negative"},
		{Options{Targets: ok, Interval: -time.Second}, "interval", "must not be negative"},
		{Options{Targets: ok, BusyPoll: -time.Microsecond}, "busy_poll", "must not be negative"},
		{Options{Targets: ok, BusyPoll: MaxBusyPoll + 1}, "busy_poll", "at most 10ms"},
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
