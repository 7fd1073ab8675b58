package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchflow/benchflow/engine/load"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    load.Options
		n    int
		want []Share
	}{
		{"even", load.Options{Connections: 4, Threads: 2}, 2, []Share{{0, 2, 1, 0, 0}, {1, 2, 1, 0, 0}}},
		{"remainder to the first", load.Options{Connections: 10, Threads: 4, Requests: 1001}, 3,
			[]Share{{0, 4, 2, 334, 0}, {1, 3, 1, 334, 0}, {2, 3, 1, 333, 0}}},
		{"rate follows connections", load.Options{Connections: 5, Threads: 1, Rate: 1000}, 2,
			[]Share{{0, 3, 1, 0, 600}, {1, 2, 1, 0, 400}}},
		{"one connection each", load.Options{Connections: 3, Threads: 8}, 3,
			[]Share{{0, 1, 1, 0, 0}, {1, 1, 1, 0, 0}, {2, 1, 1, 0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Split(tc.o, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Split (-want +got):\n%s", d)
			}
			var conns int
			var reqs int64
			var rate float64
			for _, s := range got {
				conns += s.Connections
				reqs += s.Requests
				rate += s.Rate
			}
			if conns != tc.o.Connections || reqs != tc.o.Requests || rate != tc.o.Rate {
				t.Errorf("shares add up to %d connections, %d requests, rate %g; want %d, %d, %g", conns, reqs, rate, tc.o.Connections, tc.o.Requests, tc.o.Rate)
			}
		})
	}
}

func TestSplitRefuses(t *testing.T) {
	for _, tc := range []struct {
		o    load.Options
		n    int
		want string
	}{
		{load.Options{Connections: 1}, 2, "agents: 1 connections cannot be split among 2 agents (each needs at least one)"},
		{load.Options{Connections: 4, Requests: 3}, 4, "agents: 3 requests cannot be split among 4 agents (each needs at least one)"},
		{load.Options{Connections: 4}, 0, "agents: count = 0: must be at least 1"},
	} {
		_, err := Split(tc.o, tc.n)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Split(%+v, %d) = %v, want %q", tc.o, tc.n, err, tc.want)
		}
	}
}
