package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/measure"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/starconf/script"
	"github.com/benchflow/benchflow/engine/userfile"
)

func init() { rootCmd.AddCommand(newLoadCmd()) }

// loadCmd holds the flags of `benchflow load` that are not load.Options
// fields themselves, and the options the flags fill.
type loadCmd struct {
	opts                         load.Options
	duration, timeout, busyPoll  string
	nap                          string
	headers                      []string
	method, body, bodyFile, out  string
	latency, jsonOut, closeConns bool
	h2                           bool
	h3                           bool
	scriptFile                   string
	findMax                      findMaxFlags
	judge                        judgeFlags
	stages                       []string
	metrics                      metricsFlags
}

const loadLong = `load sends HTTP/1.1 requests to one or more URLs and prints what it measured
in wrk's shape ("Requests/sec:", and with --latency the percentile lines).

Closed loop (default, like wrk and ab): -c connections each send a request as
soon as the previous response arrived, for -d or until -n requests in total.

Open loop (-R, like wrk2 or oha --latency-correction): requests are scheduled
at -R per second in total, spread over the connections, and latency is
measured from the time each request should have been sent ("corrected" for
coordinated omission); the latency from the actual send is reported too. When
the rate could not be held (below 95% of -R) the summary says so.

Connections are kept alive unless --close (or -H 'Connection: close') asks
for a new connection per request; connect time is then part of the latency
and is also reported on its own.

--h2 speaks HTTP/2 instead: over TLS negotiated by ALPN for https:// URLs,
cleartext with prior knowledge (h2c) for http:// URLs, with up to --streams
requests in flight per connection (bounded by the server's
SETTINGS_MAX_CONCURRENT_STREAMS).

URLs are http://, https:// (certificates are not verified unless --cacert
gives a CA) or unix:/path/to.sock:/request-path. Several URLs are picked at random by weight:
append @N to a URL to give it weight N (default 1).

--find-max searches for capacity instead of running one load: open-loop
probes (each --probe long, its first second not judged) at rates doubling
from --start-rate until one breaks --slo, then a binary search down to
--precision. Each probe is judged on its own corrected latency, error ratio
and achieved rate; a probe the generator itself could not drive (sends late
while the server answered as fast as at low load, or the generator's threads
saturated) ends the search as "generator-limited" instead of being reported
as the server's capacity. Every probe and the verdict are printed (--json:
one object with every probe).

Exit status is 0 when at least one request succeeded, 1 when every request
failed (with the reason) or a flag is wrong, 99 (k6's) when the result fails
a --threshold ('p99<10ms', 'rps>1000', 'errors<1%', 'missed==0'), each failed
one named.`

const loadExample = `  benchflow load -c 64 -d 10s http://127.0.0.1:8080/
  benchflow load -t 2 -c 100 -d 30s --latency http://127.0.0.1:8080/index.html
  benchflow load -c 16 -R 2000 -d 20s --latency http://127.0.0.1:8080/   # open loop, corrected latency
  benchflow load -c 4 -n 10000 --close http://127.0.0.1:8080/big.jpg      # new connection per request
  benchflow load -m POST -H 'Content-Type: application/json' --body '{"a":1}' http://127.0.0.1:8080/api
  benchflow load http://127.0.0.1:8080/a@3 http://127.0.0.1:8080/b@1      # 75% /a, 25% /b
  benchflow load --h2 -c 4 --streams 16 -d 10s https://127.0.0.1:8443/    # HTTP/2 over TLS, 64 streams in flight
  benchflow load --json -d 5s http://127.0.0.1:8080/ | jq .rps
  benchflow load -d 10s --out nginx.parquet http://127.0.0.1:8080/
  benchflow load -s requests.star -c 32 -d 10s http://127.0.0.1:8080      # request() builds the requests
  benchflow load -c 16 -R 2000 -d 20s --threshold 'p99<10ms' --threshold 'errors<1%' http://127.0.0.1:8080/   # exit 99 unless met
  benchflow load --find-max --slo 'p99<10ms,errors<0.1%' -c 64 http://127.0.0.1:8080/   # capacity under an SLO`

// newLoadCmd builds `benchflow load`. Its flags are registered by group, in
// the order --help lists them.
func newLoadCmd() *cobra.Command {
	l := &loadCmd{}
	cmd := &cobra.Command{
		Use:     "load URL[@WEIGHT]...",
		Short:   "Drive HTTP load at a URL, like wrk (closed loop) or wrk2 (-R, open loop)",
		Long:    loadLong,
		Example: loadExample,
		Args:    loadArgs,
		RunE:    l.run,
	}
	f := cmd.Flags()
	f.SortFlags = false
	l.registerShapeFlags(f)
	l.registerRequestFlags(f)
	l.registerConnectionFlags(f)
	l.registerGeneratorFlags(f)
	l.registerOutputFlags(f)
	l.findMax.register(f)
	l.judge.register(f)
	l.metrics.register(f)
	return cmd
}

func loadArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return errors.New("load needs at least one URL (e.g. benchflow load -c 64 -d 10s http://127.0.0.1:8080/)")
	}
	return nil
}

// registerShapeFlags registers how much load: connections, threads,
// duration, request count and rate.
func (l *loadCmd) registerShapeFlags(f *pflag.FlagSet) {
	f.IntVarP(&l.opts.Connections, "connections", "c", 10, "connections to keep open (`N`)")
	f.IntVarP(&l.opts.Threads, "threads", "t", 2, "worker threads (`N`, at most -c)")
	f.StringVarP(&l.duration, "duration", "d", "10s", "how long to load (`DUR`: 10s, 2m, or seconds); with -n only, until -n")
	f.Int64VarP(&l.opts.Requests, "requests", "n", 0, "stop after `N` requests in total")
	f.Float64VarP(&l.opts.Rate, "rate", "R", 0, "open loop: `RATE` requests/s in total, latency corrected for coordinated omission")
	f.StringArrayVar(&l.stages, "stage", nil, "ramp (repeatable, k6's stages): `DUR:RATE` moves an open loop's rate linearly to RATE req/s over DUR, from -R (or 0); DUR:Nc moves a closed loop's open connections to N, from -c (or 0); the load lasts the stages' sum")
}

// registerRequestFlags registers what each request is: headers, method,
// body.
func (l *loadCmd) registerRequestFlags(f *pflag.FlagSet) {
	f.StringArrayVarP(&l.headers, "header", "H", nil, "add a request header ('Name: value'; repeatable)")
	f.StringVarP(&l.method, "method", "m", "GET", "request `METHOD` (a token of letters: GET, POST, …; h2load's -m is --streams here)")
	f.StringVar(&l.body, "body", "", "request body (`TEXT`)")
	f.StringVar(&l.bodyFile, "body-file", "", "request body read from `FILE`")
	f.StringArrayVar(&l.opts.Checks, "check", nil, "check each response (repeatable): status==200, size==4096, 'body contains TEXT', 'header Content-Type ~ json'; a response failing one is an error of class check")
}

// registerConnectionFlags registers how connections are made: new
// connections per request, HTTP/2 and its streams, TLS verification, SNI
// and resumption.
func (l *loadCmd) registerConnectionFlags(f *pflag.FlagSet) {
	f.BoolVar(&l.closeConns, "close", false, "open a new connection per request (like -H 'Connection: close')")
	f.BoolVar(&l.h2, "h2", false, "HTTP/2: over TLS by ALPN for https://, cleartext with prior knowledge (h2c) for http://")
	f.BoolVar(&l.h3, "h3", false, "HTTP/3 over QUIC (https:// targets only; --streams sets concurrent streams per connection)")
	f.IntVar(&l.opts.Streams, "streams", 1, "with --h2: concurrent streams per connection (`N`), at most the server's SETTINGS_MAX_CONCURRENT_STREAMS")
	f.StringVar(&l.opts.CACert, "cacert", "", "verify https:// certificates against the CA certificates in `FILE` (PEM); default: no verification")
	f.StringVar(&l.opts.SNI, "sni", "", "TLS server `NAME` to send (default: the URL's host)")
	f.BoolVar(&l.opts.H3ZeroRTT, "h3-0rtt", false, "with --h3: new connections resume a TLS session and send their first GET/HEAD as 0-RTT early data (the summary counts those accepted); default off")
	f.BoolVar(&l.opts.TLSResume, "tls-resume", false, "resume TLS sessions on new connections (abbreviated handshakes); default: a full handshake per connection")
}

// registerGeneratorFlags registers the per-request timeout and how the
// generator waits: busy polling and the load engine.
func (l *loadCmd) registerGeneratorFlags(f *pflag.FlagSet) {
	f.StringVar(&l.timeout, "timeout", "2s", "per-request timeout (`DUR`): a response completing later is a timeout error, not a response; 0 is the default, 2s (there is no unbounded timeout: at most 1h)")
	f.StringVar(&l.busyPoll, "busy-poll", "0", "poll up to `DUR` (e.g. 20us) before sleeping: more client CPU, fewer wake-ups for a server on the same machine")
	f.StringVar(&l.nap, "nap", "0", "HTTP/2 with --streams 2 or more, closed loop: when nothing is ready, sleep `DUR` (e.g. 20us) by the clock and look again before sleeping until woken: fewer wake-ups for a server on the same machine at no client CPU, responses read up to one nap late")
	f.StringVar(&l.opts.Engine, "engine", "", "load engine (`NAME`): auto (io_uring for --close loads where it runs, else epoll), uring, epoll or goroutines; default $BENCHFLOW_LOAD_ENGINE, else auto")
}

// registerOutputFlags registers what is printed and written, and the
// request script (whose done() reports the totals), where --help has
// always listed it.
func (l *loadCmd) registerOutputFlags(f *pflag.FlagSet) {
	f.BoolVar(&l.latency, "latency", false, "print the latency percentiles")
	f.BoolVar(&l.jsonOut, "json", false, "print one JSON object instead of text")
	f.StringVarP(&l.scriptFile, "script", "s", "", "Starlark request script (`FILE.star`): its request() builds the requests, paths relative to the first URL, and done() gets the totals (docs/starlark.md)")
	f.StringVar(&l.out, "out", "", "also write the result to `FILE.parquet` (plus FILE.latency.parquet, FILE.timeseries.parquet; a device or FIFO such as /dev/null is written in place, the trials row only)")
}

// run is the command: one load, or with --find-max a capacity search.
func (l *loadCmd) run(cmd *cobra.Command, args []string) error {
	opts, reqScript, err := l.options(cmd, args)
	if err != nil {
		return err
	}
	limitProcs(opts)
	if l.findMax.on {
		return runFindMax(cmd, &l.findMax, opts, l.jsonOut)
	}
	return l.runOnce(cmd, opts, reqScript)
}

// options turns the flags and URLs into validated load options (with the
// defaults applied) and loads the request script, if any. The settings as
// given are checked before the URLs are read.
func (l *loadCmd) options(cmd *cobra.Command, args []string) (load.Options, *script.Script, error) {
	opts := l.opts
	var err error
	if l.h2 && l.h3 {
		return opts, nil, fmt.Errorf("--h2 and --h3: choose one protocol")
	}
	if l.h2 {
		opts.Protocol = measure.ProtoH2
	}
	if l.h3 {
		opts.Protocol = measure.ProtoH3
	}
	if len(l.stages) > 0 {
		if opts.Stages, err = load.ParseStages(l.stages); err != nil {
			return opts, nil, fmt.Errorf("--%w", err)
		}
		if load.ConnectionStages(opts.Stages) && !cmd.Flags().Changed("connections") {
			opts.Connections = 0 // stages of connections start from -c, 0 when not given
		}
	}
	if cmd.Flags().Changed("duration") || (opts.Requests == 0 && len(l.stages) == 0) {
		if opts.Duration, err = pipeline.ParseDuration(l.duration); err != nil {
			return opts, nil, fmt.Errorf("-d/--duration: %w", err)
		}
		if opts.Duration <= 0 {
			// As wrk: a load of no time is a mistake, not "forever".
			return opts, nil, fmt.Errorf("-d/--duration %s: must be more than 0 (or leave -d out and bound the load with -n)", l.duration)
		}
	}
	if opts.Timeout, err = pipeline.ParseDuration(l.timeout); err != nil {
		return opts, nil, fmt.Errorf("--timeout: %w", err)
	}
	if opts.BusyPoll, err = pipeline.ParseDuration(l.busyPoll); err != nil {
		return opts, nil, fmt.Errorf("--busy-poll: %w", err)
	}
	if opts.Nap, err = pipeline.ParseDuration(l.nap); err != nil {
		return opts, nil, fmt.Errorf("--nap: %w", err)
	}
	if opts.CACert != "" {
		// Read here, under the rule for every file a user names, so that
		// the error names the flag.
		if opts.CACertPEM, err = userfile.Read(opts.CACert, userfile.MaxSize); err != nil {
			return opts, nil, fmt.Errorf("--cacert %w", err)
		}
	}
	if err := validateLoadFlags(opts, false); err != nil {
		return opts, nil, err
	}
	if err := checkMethod(l.method); err != nil {
		return opts, nil, err
	}
	if cmd.Flags().Changed("threads") && opts.Threads > opts.Connections {
		// As wrk, which refuses it; here the threads are cut to -c.
		fmt.Fprintf(cmd.ErrOrStderr(), "note: -t %d is above -c %d: %d threads run (each drives at least one connection)\n", opts.Threads, opts.Connections, opts.Connections)
	}
	if err := l.judge.parse(l.findMax.on); err != nil {
		return opts, nil, err
	}
	if opts.Targets, err = l.targets(args); err != nil {
		return opts, nil, err
	}
	var reqScript *script.Script
	if l.scriptFile != "" {
		if reqScript, err = l.loadScript(cmd, opts.Targets[0].URL); err != nil {
			return opts, nil, err
		}
		opts.Requester = reqScript
		opts.OnResponse = reqScript.ResponseHook()
	}
	opts.Close = opts.Close || l.closeConns
	opts.Tag = "load"
	if err := validateLoadFlags(opts, true); err != nil {
		return opts, nil, err
	}
	return load.Defaults(opts), reqScript, nil
}

// targets builds one target per URL argument from the request flags
// (method, headers, body).
func (l *loadCmd) targets(args []string) ([]load.Target, error) {
	if l.body != "" && l.bodyFile != "" {
		return nil, errors.New("--body and --body-file are mutually exclusive")
	}
	var hs [][2]string
	for _, h := range l.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("-H %q: want 'Name: value'", h)
		}
		hs = append(hs, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	var payload []byte
	if l.body != "" {
		payload = []byte(l.body)
	}
	if l.bodyFile != "" {
		var err error
		if payload, err = pipeline.ReadLocalFile(l.bodyFile); err != nil {
			return nil, fmt.Errorf("--body-file %w", err)
		}
	}
	var ts []load.Target
	for _, a := range args {
		u, w, err := load.ParseWeightedURL(a)
		if err != nil {
			return nil, err
		}
		ts = append(ts, load.Target{URL: u, Method: strings.ToUpper(l.method), Headers: hs, Body: payload, Weight: w})
	}
	return ts, nil
}

// loadScript loads the -s request script, its paths relative to base.
func (l *loadCmd) loadScript(cmd *cobra.Command, base string) (*script.Script, error) {
	const starlarkOnly = "request scripts are Starlark, not Lua: a wrk script's request(), response() and done() become Starlark functions returning dicts (docs/starlark.md, \"Request scripts\")"
	file := l.scriptFile
	if strings.HasSuffix(file, ".lua") {
		return nil, fmt.Errorf("-s/--script %s: %s", file, starlarkOnly)
	}
	// The script's own path under the rule for every file a user names,
	// said in the path as given (script.Load reads it again, from its
	// folder, under the same rule).
	f, err := userfile.Open(file, userfile.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("-s/--script %w", err)
	}
	f.Close()
	s, err := script.Load(cmd.Context(), os.DirFS(filepath.Dir(file)), filepath.Base(file), base, script.Options{})
	if err != nil {
		if strings.Contains(err.Error(), "undefined: wrk") {
			return nil, fmt.Errorf("-s/--script %s: %w; %s", file, err, starlarkOnly)
		}
		return nil, fmt.Errorf("-s/--script %s: %w", file, err)
	}
	return s, nil
}

// limitProcs sizes the Go runtime to the load. -t means what it means in
// wrk: the number of threads doing the work, so the generator leaves the
// other cores to the server when both share a machine. This is the
// command's own policy, not a limit of load.Options: a pipeline's process
// also runs samplers, result writers and other steps, so its load steps
// size only their event loops. Event loops get one more Go processor,
// idle but for the once-a-second collector, so they can sleep without
// handing theirs back (see rawWait in engine/load/poll_linux.go).
func limitProcs(opts load.Options) {
	if n := min(opts.Threads, opts.Connections); n < runtime.NumCPU() {
		if load.EventLoops(opts) {
			n++
		}
		runtime.GOMAXPROCS(n)
	}
}

// runOnce drives one load, prints its summary (text or JSON), writes
// --out, and turns a load where every response failed into exit status 1.
func (l *loadCmd) runOnce(cmd *cobra.Command, opts load.Options, reqScript *script.Script) error {
	stderr := cmd.ErrOrStderr()
	live := !l.jsonOut && isTerminal(stderr)
	if live {
		opts.Progress = func(p load.Progress) {
			fmt.Fprintf(stderr, "\r  %5.0fs  %d requests  %d errors  %.0f req/s   ", p.Elapsed.Seconds(), p.Requests, p.Errors, p.RPS)
		}
	}
	stopMetrics, mErr := l.metrics.start(&opts, stderr)
	if mErr != nil {
		return mErr
	}
	defer stopMetrics()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, runErr := load.Run(ctx, opts)
	if live {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if res == nil {
		return runErr
	}
	if reqScript != nil {
		if err := reqScript.Err(); err != nil {
			return fmt.Errorf("-s/--script: %w", err)
		}
		if err := reqScript.Done(res); err != nil {
			return fmt.Errorf("-s/--script: %w", err)
		}
	}
	judged := l.judge.judge(res)
	stdout := cmd.OutOrStdout()
	var err error
	if l.jsonOut {
		err = measure.WriteJSON(stdout, res)
	} else {
		err = load.WriteText(stdout, res, l.latency)
	}
	if err != nil {
		return err
	}
	if l.out != "" && runErr == nil {
		if err := results.WriteLoadFile(l.out, "load", res); err != nil {
			return fmt.Errorf("writing %s: %w", l.out, err)
		}
	}
	if runErr != nil {
		return runErr
	}
	if judged != nil {
		return judged
	}
	if ok := res.Requests - res.ErrorsBy["http"]; ok == 0 {
		return &exitError{code: 1, err: fmt.Errorf("all %d responses had status >= 400: %s", res.Requests, statusCounts(res.Status))}
	}
	return nil
}

// statusCounts names the statuses of a load, most frequent first: "404 ×
// 1861, 500 × 3".
func statusCounts(status map[int]int64) string {
	codes := make([]int, 0, len(status))
	for c, n := range status {
		if n > 0 {
			codes = append(codes, c)
		}
	}
	sort.Slice(codes, func(i, j int) bool {
		if status[codes[i]] != status[codes[j]] {
			return status[codes[i]] > status[codes[j]]
		}
		return codes[i] < codes[j]
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d × %d", c, status[c])
	}
	return strings.Join(parts, ", ")
}

// checkMethod refuses a -m that is no HTTP method: a token (RFC 9110)
// beginning with a letter. h2load's -m is the streams per connection, so
// a number names --streams.
func checkMethod(m string) error {
	ok := m != "" && (m[0]|0x20 >= 'a' && m[0]|0x20 <= 'z')
	for _, c := range m {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			ok = false
		}
	}
	if ok {
		return nil
	}
	hint := ""
	if _, err := strconv.Atoi(m); err == nil {
		hint = fmt.Sprintf("; h2load's -m is the concurrent streams per connection: here --streams %s (with --h2 or --h3)", m)
	}
	return fmt.Errorf("-m/--method %q: not an HTTP method (a token beginning with a letter: GET, POST, PUT, DELETE, …)%s", m, hint)
}

// loadFlags names each load.Options setting (load.FieldError.Field) by
// its flag, from the options' declaration (load.Declared).
var loadFlags = func() map[string]string {
	m := map[string]string{}
	for _, d := range load.Declared {
		if d.Attr != "" && d.Flag != "" {
			m[d.Attr] = d.FlagName()
		}
	}
	return m
}()

// validateLoadFlags applies load.Options.Validate, the rule load and warm
// steps follow too, and words its first problem with the flag's name. On
// the command line 0 is never "the default" for -c and -t (their flags
// carry the defaults), so 0 is refused there as any count below 1 is.
// Without targets (before the URLs are parsed) the missing target is not
// reported.
func validateLoadFlags(opts load.Options, targets bool) error {
	var fes []*load.FieldError
	for _, fe := range load.FieldErrors(opts.Validate()) {
		if targets || fe.Field != "target" {
			fes = append(fes, fe)
		}
	}
	if opts.Threads == 0 {
		fes = append([]*load.FieldError{{Field: "threads", Value: "0", Reason: "must be at least 1"}}, fes...)
	}
	if opts.Connections == 0 && !load.ConnectionStages(opts.Stages) {
		fes = append([]*load.FieldError{{Field: "connections", Value: "0", Reason: "must be at least 1"}}, fes...)
	}
	if len(fes) == 0 {
		return nil
	}
	fe := fes[0]
	if flag, ok := loadFlags[fe.Field]; ok {
		return fmt.Errorf("%s %s: %s", flag, fe.Value, fe.Reason)
	}
	return fe
}

// isTerminal reports whether w is (or wraps, see engine/redact) a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
