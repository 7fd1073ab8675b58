// Package agent runs one load from several `benchflow agent` processes and
// merges what they measured into one exact result.
//
// Entry points:
//
//   - Serve runs an agent: a small HTTP+JSON server (protocol.go) that
//     answers hello and clock probes, starts its share of a load at an
//     absolute instant of its own clock, and returns its HDR histograms
//     (encoded losslessly), counters, CPU time and open-loop lag. It exits
//     when its controller has been gone for its idle timeout.
//   - Split divides a load's connections, threads, request budget and
//     open-loop rate among agents (remainders to the first agents).
//   - Run is the controller: it says hello to every agent, measures each
//     one's clock offset NTP-style (several round trips, the sample with
//     the smallest round trip kept, half of it the residual skew bound),
//     sends every agent its share with one common start instant corrected
//     into that agent's clock, collects the results and merges them.
//   - Merge adds the agents' histograms (same geometry, so the merged
//     percentiles are those of the union of all requests) and aligns their
//     timeseries on the common start.
//
// Sibling packages own the rest: engine/load is the load generator each
// agent runs; providers (AgentLauncher) start the agent processes on this
// machine, as Kubernetes pods or as a Nomad raw_exec job; engine/run wires a
// step's agents block to Run; engine/results writes agents.parquet.
package agent
