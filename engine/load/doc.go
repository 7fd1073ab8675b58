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
// Three engines run the connection slots; Result.Engine (and the
// trials' load_engine column) names the one that ran:
//
//   - uring (uring_linux.go, ring_linux.go): the event loops of
//     poll_linux.go with their I/O on one io_uring per loop, set up with
//     golang.org/x/sys/unix system calls (no cgo): each connection keeps a
//     multishot receive armed on a provided-buffer ring, a request is one
//     send entry, and a loop iteration submits its entries and waits for
//     completions in one io_uring_enter (about 0.75 system calls per
//     keep-alive request). Completions run only inside that call
//     (DEFER_TASKRUN), on the loop's own locked OS thread; no SQPOLL
//     thread. Responses are parsed in place in the provided buffers.
//   - epoll (poll_linux.go): one epoll event loop per thread (-t),
//     non-blocking sockets registered once, edge-triggered; a keep-alive
//     request is one write and one read plus a share of epoll_wait.
//   - goroutines (conn.go): a goroutine per connection doing blocking
//     writes and reads over net.Conn, for TLS targets (crypto/tls needs a
//     net.Conn) and other platforms.
//
// Plain TCP and unix: targets on Linux run on epoll, except --close loads,
// which run on uring when it passes a startup probe (UringAvailable:
// io_uring_setup with the engine's flags, the opcodes it uses, a
// provided-buffer ring and a no-op round trip; it fails with
// io_uring_disabled, seccomp's EPERM, an old kernel): that is where it
// measured cheaper (autoUring, docs/performance.md).
// Options.Engine, `benchflow load --engine` or BENCHFLOW_LOAD_ENGINE
// (uring, epoll, goroutines, auto) force one; forcing uring where it
// cannot run is an error. Both loop engines share the slot state machine
// (schedule on a min-heap, timeouts scanned every 5 ms, back-off, error
// classes); no goroutine switch, runtime timer or deadline update happens
// per request. Every engine records its exchanges through conn.record,
// which applies the one timeout rule (runner.origin, runner.deadline,
// runner.late): an exchange that ended more than Options.Timeout after its
// latency origin is a timeout, whatever the engine saw of it
// (TestBehaviour runs one table of cases on every engine). All engines share the resumable HTTP/1.1 response parser
// (response.go), prebuilt request bytes, per-connection counters and
// interval histograms merged once per interval, and HDR histogram shards
// per thread, so memory grows with threads, not connections. A request
// allocates nothing and touches no shared lock or atomic.
//
// Sibling packages: engine/run calls Run for load and warm steps and hands
// the Result to engine/results (Parquet tables; results.WriteLoadFile for
// `benchflow load --out`); engine/collect samples processes while a load
// runs; engine/starconf supplies request scripts through Requester.
package load
