// Package serve is benchflow's built-in HTTP/1.1 target server, the program
// behind `benchflow serve`. It lets the quickstart and the tests load a real
// server without installing one, and it can misbehave on purpose (a fixed
// delay, periodic stalls, an error status) to exercise the load generator.
//
// Entry points:
//
//   - New builds the http.Handler from a Config (bodies are computed once,
//     here, not per request).
//   - Serve runs it on a listener you own; ListenAndServe opens Config.Addr
//     first. Both return when the context ends, after a graceful shutdown.
//   - ParseSize reads sizes such as "6", "4KiB", "2.5MiB", "1k" or "1MB".
//   - IsLoopback tells whether an address binds only loopback (the CLI
//     warns otherwise).
//
// With Config.TLS and Config.H3 it also serves HTTP/3 over QUIC
// (quic-go's http3.Server) on the UDP port of the TLS port's number,
// accepting 0-RTT early data, and advertises it with Alt-Svc.
//
// Generated bodies are Pattern ("hello\n") repeated and cut to length, so
// they can be checked byte for byte. docs/serve.md is the user guide.
//
// Sibling packages own the rest: engine/load drives load against this server
// (or any other), providers/local runs `benchflow serve` as a process, and
// cmd/benchflow/serve.go maps the command-line flags onto Config.
package serve
