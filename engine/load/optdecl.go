package load

import (
	"reflect"
	"strings"
)

// OptionDecl declares one setting of Options once: its Options field, the
// attribute a load or warm step spells it with (also FieldError.Field),
// the flag of `benchflow load`, its unit, default, limit and meaning; the
// key it travels under to a remote agent is its Options field's JSON tag
// (WireKey). The
// command derives the flag names of its errors from it, and the tests
// check that the step schema, the flags and the agent wire carry every
// declared setting (a setting the wire forgets would be lost on remote
// agents without an error).
type OptionDecl struct {
	// Field is the name of the Options field.
	Field string
	// Attr is the step attribute ("" when a step cannot set it).
	Attr string
	// Flag and Short are the long and one-letter flags of `benchflow
	// load` ("" when the command has none).
	Flag, Short string
	// Local says why a setting never reaches an agent (its Options
	// field is tagged json:"-"); "" for one that travels, under its
	// field's JSON tag (WireKey).
	Local string
	// Unit is how the value is written: "count", "duration", "rate",
	// "bool", "name" or "file".
	Unit    string
	Default string
	Limit   string
	Doc     string
}

// WireKey is the key the option travels under to a remote agent: its
// Options field's JSON tag ("" for a field tagged "-", which stays here).
func (d OptionDecl) WireKey() string {
	f, ok := reflect.TypeFor[Options]().FieldByName(d.Field)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// FlagName is how an error names the option's flag: "-c/--connections",
// "--timeout" ("" without a flag).
func (d OptionDecl) FlagName() string {
	switch {
	case d.Flag == "":
		return ""
	case d.Short != "":
		return "-" + d.Short + "/--" + d.Flag
	}
	return "--" + d.Flag
}

// Declared lists every setting of Options a user chooses (Targets, the
// callbacks and Requester are built by the front ends, not chosen as one
// value).
var Declared = []OptionDecl{
	{Field: "Connections", Attr: "connections", Flag: "connections", Short: "c", Unit: "count", Default: "10", Limit: "1 to 1,000,000 (MaxConnections)", Doc: "connections kept open"},
	{Field: "Threads", Attr: "threads", Flag: "threads", Short: "t", Unit: "count", Default: "2", Limit: "1 to 4096 (MaxThreads), at most connections", Doc: "event loops"},
	{Field: "Duration", Attr: "duration", Flag: "duration", Short: "d", Unit: "duration", Default: "10s", Limit: "168h (MaxDuration)", Doc: "how long to load (with requests only: until requests)"},
	{Field: "Requests", Attr: "requests", Flag: "requests", Short: "n", Unit: "count", Default: "0 (unbounded)", Limit: "not negative", Doc: "stop after this many requests in total"},
	{Field: "Rate", Attr: "rate", Flag: "rate", Short: "R", Unit: "rate", Default: "0 (closed loop)", Limit: "0.001 (MinRate) to 10 million per connection", Doc: "open loop: requests/s in total"},
	{Field: "Timeout", Attr: "timeout", Flag: "timeout", Unit: "duration", Default: "2s", Limit: "1h (MaxTimeout)", Doc: "per-request timeout"},
	{Field: "Close", Attr: "keepalive", Flag: "close", Unit: "bool", Default: "false (keepalive = true)", Doc: "a new connection per request (the step says keepalive = false)"},
	{Field: "BusyPoll", Attr: "busy_poll", Flag: "busy-poll", Unit: "duration", Default: "0 (off)", Limit: "10ms (MaxBusyPoll)", Doc: "poll before sleeping"},
	{Field: "Nap", Attr: "nap", Flag: "nap", Unit: "duration", Default: "0 (off)", Limit: "1ms (MaxNap); protocol h2, streams 2 or more, closed loop", Doc: "HTTP/2: sleep by the clock before waiting to be woken"},
	{Field: "Interval", Attr: "interval", Unit: "duration", Default: "1s", Limit: "at least 10ms (MinInterval), at most 100,000 in the duration", Doc: "timeseries interval"},
	{Field: "Engine", Attr: "engine", Flag: "engine", Unit: "name", Default: "auto", Limit: "auto, uring, epoll or goroutines", Doc: "load engine"},
	{Field: "Protocol", Attr: "protocol", Flag: "h2", Unit: "name", Default: "http/1.1", Limit: "http/1.1, h2 or h3", Doc: "HTTP version (the command's --h2 sets h2, --h3 h3)"},
	{Field: "Streams", Attr: "streams", Flag: "streams", Unit: "count", Default: "1", Limit: "at least 1", Doc: "HTTP/2 streams per connection"},
	{Field: "CACert", Attr: "cacert", Flag: "cacert", Local: "a CA file is read on this machine; a load with one is refused for agents", Unit: "file", Default: "none (no verification)", Doc: "verify https certificates against this PEM file"},
	{Field: "SNI", Attr: "sni", Flag: "sni", Unit: "name", Default: "the URL's host", Doc: "TLS server name"},
	{Field: "TLSResume", Attr: "tls_resume", Flag: "tls-resume", Unit: "bool", Default: "false", Doc: "resume TLS sessions on new connections"},
	{Field: "H3ZeroRTT", Attr: "h3_0rtt", Flag: "h3-0rtt", Unit: "bool", Default: "false", Limit: "protocol h3", Doc: "HTTP/3: new connections resume a TLS session and send their first request as 0-RTT early data"},
	{Field: "Tag", Unit: "name", Default: "the step kind", Doc: "labels the result (warm or load); set by the step kind"},
	{Field: "Stages", Attr: "stages", Flag: "stage", Unit: "stages", Default: "none (one level)", Limit: "at most 100 (MaxStages); all rates or all connections", Doc: "ramp the rate: DURATION:RATE, linearly to RATE over DURATION, from rate (0 when not set); or the connections: DURATION:Nc, from connections (0 when not set); the load lasts their sum"},
	{Field: "Checks", Attr: "checks", Flag: "check", Unit: "list", Default: "none", Limit: "at most 32 (MaxChecks)", Doc: "response checks: status==200, size==4096, body contains TEXT, header NAME ~ REGEXP; a failing response is a check error"},
}
