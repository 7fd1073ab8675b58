package agent

import (
	"fmt"

	"github.com/benchflow/benchflow/engine/load"
)

// Share is one agent's part of a load.
type Share struct {
	Index       int     // 0-based
	Connections int     // its connections
	Threads     int     // its event loops
	Requests    int64   // its request budget (0: bounded by duration)
	Rate        float64 // its open-loop rate (0: closed loop)
}

// Split divides o (after load.Defaults) among n agents: connections,
// threads and the request budget as evenly as integers allow, the
// remainder going one each to the first agents; the open-loop rate in
// proportion to connections, so every connection of every agent keeps
// the same send period as in one process. Every agent has at least one
// connection and one thread (threads never exceed connections).
func Split(o load.Options, n int) ([]Share, error) {
	if n < 1 {
		return nil, fmt.Errorf("agents: count = %d: must be at least 1", n)
	}
	if load.ConnectionStages(o.Stages) {
		return nil, fmt.Errorf("agents: stages of connections (%dc) do not run on agents yet: ramp them from benchflow's own loader, or ramp a rate (10s:2000)", o.Stages[0].Connections)
	}
	if o.Connections < n {
		return nil, fmt.Errorf("agents: %d connections cannot be split among %d agents (each needs at least one)", o.Connections, n)
	}
	if o.Requests > 0 && o.Requests < int64(n) {
		return nil, fmt.Errorf("agents: %d requests cannot be split among %d agents (each needs at least one)", o.Requests, n)
	}
	shares := make([]Share, n)
	threads := max(o.Threads, 1)
	for i := range shares {
		s := &shares[i]
		s.Index = i
		s.Connections = o.Connections / n
		if i < o.Connections%n {
			s.Connections++
		}
		s.Threads = threads / n
		if i < threads%n {
			s.Threads++
		}
		s.Threads = min(max(s.Threads, 1), s.Connections)
		if o.Requests > 0 {
			s.Requests = o.Requests / int64(n)
			if int64(i) < o.Requests%int64(n) {
				s.Requests++
			}
		}
		if o.Rate > 0 {
			s.Rate = o.Rate * float64(s.Connections) / float64(o.Connections)
		}
	}
	return shares, nil
}

// Apply returns o with the share's connections, threads, requests and
// rate.
func (s Share) Apply(o load.Options) load.Options {
	if len(o.Stages) > 0 && o.Connections > 0 {
		// A ramp's rates are shared as -R is: by connections.
		frac := float64(s.Connections) / float64(o.Connections)
		stages := make([]load.Stage, len(o.Stages))
		for i, st := range o.Stages {
			st.Rate *= frac
			stages[i] = st
		}
		o.Stages = stages
	}
	o.Connections, o.Threads, o.Requests, o.Rate = s.Connections, s.Threads, s.Requests, s.Rate
	return o
}
