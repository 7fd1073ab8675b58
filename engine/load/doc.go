// Package load is benchflow's HTTP load generator, a library like wrk's
// core: it knows nothing of pipelines or HCL. The `load` and `warm` steps
// (engine/steps.LoadOptions maps a step's body) and the `benchflow load`
// command (cmd/benchflow/load.go maps its flags) build the same Options.
//
// Entry points:
//
//   - Run(ctx, Options) drives one load and returns a *Result (counts,
//     HDR latency histograms, per-interval timeseries, status codes,
//     errors by class).
//   - Options.Validate is the one rule for every limit (MaxConnections,
//     MaxThreads, MaxBusyPoll, …); its errors are *FieldError values
//     naming the setting, which each front end words its own way (a flag,
//     an attribute's source range). Defaults fills the zero fields.
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
// FindMax searches for the highest open-loop rate that meets an SLO
// (ParseSLO: "p99<10ms,errors<0.1%") and tells a generator limit from the
// server's (capacity.go).
//
// The hot path, for plain TCP and unix: targets on Linux, is one epoll
// event loop per thread (poll_linux.go): non-blocking sockets registered
// once, edge-triggered, a keep-alive request one write and one read plus a
// share of epoll_wait, with no goroutine switch, runtime timer or deadline
// update per request; open-loop schedules run on a timerfd with a min-heap
// of slots. TLS targets (crypto/tls needs a net.Conn), other platforms and
// BENCHFLOW_LOAD_ENGINE=goroutines use the goroutine engine (conn.go): a
// goroutine per connection doing blocking writes and reads. Both engines
// share the resumable HTTP/1.1 response parser (response.go), prebuilt
// request bytes, per-connection counters and interval histograms merged
// once per interval, and HDR histogram shards per thread, so memory grows
// with threads, not connections. A request allocates nothing and touches
// no shared lock or atomic.
//
// Sibling packages: engine/run calls Run for load and warm steps and hands
// the Result to engine/results (Parquet tables; results.WriteLoadFile for
// `benchflow load --out`); engine/collect samples processes while a load
// runs; engine/starconf supplies request scripts through Requester.
package load
