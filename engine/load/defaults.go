package load

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults fills zero fields: 10 connections, 2 threads (never more than
// connections), 10s unless Requests is set, 2s timeout, 1s interval, GET and
// weight 1 for every target. It returns a copy; Targets is copied too.
func Defaults(o Options) Options {
	if o.Connections <= 0 {
		o.Connections = 10
	}
	if o.Threads <= 0 {
		o.Threads = 2
	}
	if o.Threads > o.Connections {
		o.Threads = o.Connections
	}
	if o.Duration <= 0 && o.Requests <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	ts := make([]Target, len(o.Targets))
	for i, t := range o.Targets {
		if t.Method == "" {
			t.Method = "GET"
		}
		if t.Weight <= 0 {
			t.Weight = 1
		}
		for _, h := range t.Headers {
			if isCloseHeader(h) {
				o.Close = true
			}
		}
		ts[i] = t
	}
	o.Targets = ts
	return o
}

// MaxBusyPoll bounds Options.BusyPoll: polling longer before sleeping only
// burns CPU.
const MaxBusyPoll = 10 * time.Millisecond

// Validate checks options after Defaults; the error names the bad setting.
func Validate(o Options) error {
	if len(o.Targets) == 0 && o.Requester == nil {
		return errors.New("no target URL given")
	}
	for i, t := range o.Targets {
		if _, _, _, err := parseTarget(t.URL); err != nil {
			return fmt.Errorf("parsing target %d: %w", i+1, err)
		}
	}
	switch {
	case o.Connections > 1<<20:
		return fmt.Errorf("connections %d: too many (at most %d)", o.Connections, 1<<20)
	case o.Requests < 0:
		return fmt.Errorf("requests %d: must not be negative", o.Requests)
	case o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		return fmt.Errorf("rate %g: must be a positive number of requests per second", o.Rate)
	case o.Rate > 0 && o.Rate/float64(o.Connections) > 1e7:
		return fmt.Errorf("rate %g: more than 10 million requests/s per connection", o.Rate)
	case o.BusyPoll < 0 || o.BusyPoll > MaxBusyPoll:
		return fmt.Errorf("busy poll %s: must be between 0 and %s", o.BusyPoll, MaxBusyPoll)
	}
	return nil
}
