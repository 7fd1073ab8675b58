// Package measure holds what a load measured, declared once: the Record
// the load generator (engine/load) fills, the forms derived from it — the
// JSON of `benchflow load --json` (ToJSON), the agent protocol's result
// (engine/agent embeds Record; its JSON tags are the wire's keys) and a
// trials row (engine/results) — and the outcome of a capacity search
// (Capacity, Probe, SLO). It imports nothing of the engine but units, so
// the packages that read measurements need not import the generator.
package measure

// Protocol names, as in load.Options.Protocol and Record.Protocol.
const (
	ProtoHTTP1 = "http/1.1"
	ProtoH2    = "h2"  // HTTP/2 over TLS (ALPN)
	ProtoH2C   = "h2c" // HTTP/2 over cleartext TCP, prior knowledge
	ProtoH3    = "h3"  // HTTP/3 over QUIC (https:// targets only)
)

// NumErrorClasses is the number of error classes (ErrorClasses).
const NumErrorClasses = 9

// ErrorClasses are the keys of Record.ErrorsBy, in report order.
var ErrorClasses = [NumErrorClasses]string{"connect", "timeout", "read", "write", "parse", "http", "reset", "goaway", "check"}
