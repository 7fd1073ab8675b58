// Package load is benchflow's HTTP load generator: the `load` and `warm`
// steps of a pipeline and the `benchflow load` command.
//
// Entry points:
//
//   - Run(ctx, Options) drives one load and returns a *Result (counts,
//     HDR latency histograms, per-interval timeseries, status codes,
//     errors by class).
//   - Defaults and Validate fill and check Options; FromConfig builds them
//     from a step's pipeline.LoadConfig.
//   - WriteText prints a Result in wrk's shape, WriteJSON as the JSON object
//     of the CLI contract (ToJSON and Summarize expose the same numbers).
//   - ParseWeightedURL reads the CLI's URL@weight form.
//
// Two load models: closed loop (Options.Rate == 0, like wrk and ab), where
// each connection sends its next request when the previous response
// arrived; and open loop (Rate > 0, like wrk2), where each connection sends
// on a fixed schedule and latency is measured from the intended send time
// (corrected for coordinated omission) as well as from the actual send.
//
// The hot path is a goroutine per connection doing blocking writes and
// reads on its own connection with prebuilt request bytes and one reused
// read buffer; a minimal HTTP/1.1 response parser (response.go); and
// per-connection counters and interval histograms that the collector
// merges once per interval under a per-connection mutex nothing else
// takes. Full-resolution latencies are buffered per connection and
// recorded 256 at a time into one HDR histogram shard per thread, so
// memory grows with threads, not connections. A request allocates nothing
// and touches no shared lock or atomic.
//
// Sibling packages: engine/run calls Run for load and warm steps and hands
// the Result to engine/results (Parquet tables; results.WriteLoadFile for
// `benchflow load --out`); engine/collect samples processes while a load
// runs; engine/starconf supplies request scripts through Requester.
package load
