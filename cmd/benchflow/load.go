package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/engine/starconf/script"
)

func init() {
	var (
		opts                         load.Options
		duration, timeout, busyPoll  string
		headers                      []string
		method, body, bodyFile, out  string
		latency, jsonOut, closeConns bool
		h2                           bool
		scriptFile                   string
		findMax                      findMaxFlags
	)
	cmd := &cobra.Command{
		Use:   "load URL[@WEIGHT]...",
		Short: "Drive HTTP load at a URL, like wrk (closed loop) or wrk2 (-R, open loop)",
		Long: `load sends HTTP/1.1 requests to one or more URLs and prints what it measured
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
failed (with the reason) or a flag is wrong.`,
		Example: `  benchflow load -c 64 -d 10s http://127.0.0.1:8080/
  benchflow load -t 2 -c 100 -d 30s --latency http://127.0.0.1:8080/index.html
  benchflow load -c 16 -R 2000 -d 20s --latency http://127.0.0.1:8080/   # open loop, corrected latency
  benchflow load -c 4 -n 10000 --close http://127.0.0.1:8080/big.jpg      # new connection per request
  benchflow load -m POST -H 'Content-Type: application/json' --body '{"a":1}' http://127.0.0.1:8080/api
  benchflow load http://127.0.0.1:8080/a@3 http://127.0.0.1:8080/b@1      # 75% /a, 25% /b
  benchflow load --h2 -c 4 --streams 16 -d 10s https://127.0.0.1:8443/    # HTTP/2 over TLS, 64 streams in flight
  benchflow load --json -d 5s http://127.0.0.1:8080/ | jq .rps
  benchflow load -d 10s --out nginx.parquet http://127.0.0.1:8080/
  benchflow load -s requests.star -c 32 -d 10s http://127.0.0.1:8080      # request() builds the requests
  benchflow load --find-max --slo 'p99<10ms,errors<0.1%' -c 64 http://127.0.0.1:8080/   # capacity under an SLO`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("load needs at least one URL (e.g. benchflow load -c 64 -d 10s http://127.0.0.1:8080/)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if h2 {
				opts.Protocol = load.ProtoH2
			}
			if cmd.Flags().Changed("duration") || opts.Requests == 0 {
				if opts.Duration, err = pipeline.ParseDuration(duration); err != nil {
					return fmt.Errorf("-d/--duration: %w", err)
				}
				if opts.Duration <= 0 {
					// As wrk: a load of no time is a mistake, not "forever".
					return fmt.Errorf("-d/--duration %s: must be more than 0 (or leave -d out and bound the load with -n)", duration)
				}
			}
			if opts.Timeout, err = pipeline.ParseDuration(timeout); err != nil {
				return fmt.Errorf("--timeout: %w", err)
			}
			if opts.BusyPoll, err = pipeline.ParseDuration(busyPoll); err != nil {
				return fmt.Errorf("--busy-poll: %w", err)
			}
			// The settings first, as given (the URLs are read below).
			if err := validateLoadFlags(opts, false); err != nil {
				return err
			}
			if body != "" && bodyFile != "" {
				return errors.New("--body and --body-file are mutually exclusive")
			}
			var hs [][2]string
			for _, h := range headers {
				k, v, ok := strings.Cut(h, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return fmt.Errorf("-H %q: want 'Name: value'", h)
				}
				hs = append(hs, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
			}
			var payload []byte
			if body != "" {
				payload = []byte(body)
			}
			if bodyFile != "" {
				if payload, err = pipeline.ReadLocalFile(bodyFile); err != nil {
					return fmt.Errorf("--body-file: %w", err)
				}
			}
			for _, a := range args {
				u, w, err := load.ParseWeightedURL(a)
				if err != nil {
					return err
				}
				opts.Targets = append(opts.Targets, load.Target{URL: u, Method: strings.ToUpper(method), Headers: hs, Body: payload, Weight: w})
			}
			var reqScript *script.Script
			if scriptFile != "" {
				const starlarkOnly = "request scripts are Starlark, not Lua: a wrk script's request(), response() and done() become Starlark functions returning dicts (docs/starlark.md, \"Request scripts\")"
				if strings.HasSuffix(scriptFile, ".lua") {
					return fmt.Errorf("-s/--script %s: %s", scriptFile, starlarkOnly)
				}
				reqScript, err = script.Load(cmd.Context(), os.DirFS(filepath.Dir(scriptFile)), filepath.Base(scriptFile), opts.Targets[0].URL, script.Options{})
				if err != nil {
					if strings.Contains(err.Error(), "undefined: wrk") {
						return fmt.Errorf("-s/--script %s: %w; %s", scriptFile, err, starlarkOnly)
					}
					return fmt.Errorf("-s/--script %s: %w", scriptFile, err)
				}
				opts.Requester = reqScript
				opts.OnResponse = reqScript.ResponseHook()
			}
			opts.Close = opts.Close || closeConns
			opts.Tag = "load"
			if err := validateLoadFlags(opts, true); err != nil {
				return err
			}
			opts = load.Defaults(opts)
			// -t means what it means in wrk: the number of threads doing
			// the work, so the generator leaves the other cores to the
			// server when both share a machine. This is the command's
			// own policy, not a limit of load.Options: a pipeline's
			// process also runs samplers, result writers and other steps,
			// so its load steps size only their event loops.
			// Event loops get one more Go processor, idle but for the
			// once-a-second collector, so they can sleep without handing
			// theirs back (see rawWait in engine/load/poll_linux.go).
			if n := min(opts.Threads, opts.Connections); n < runtime.NumCPU() {
				if load.EventLoops(opts) {
					n++
				}
				runtime.GOMAXPROCS(n)
			}
			if findMax.on {
				return runFindMax(cmd, &findMax, opts, jsonOut)
			}
			stderr := cmd.ErrOrStderr()
			live := !jsonOut && isTerminal(stderr)
			if live {
				opts.Progress = func(p load.Progress) {
					fmt.Fprintf(stderr, "\r  %5.0fs  %d requests  %d errors  %.0f req/s   ", p.Elapsed.Seconds(), p.Requests, p.Errors, p.RPS)
				}
			}
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
			stdout := cmd.OutOrStdout()
			if jsonOut {
				err = load.WriteJSON(stdout, res)
			} else {
				err = load.WriteText(stdout, res, latency)
			}
			if err != nil {
				return err
			}
			if out != "" && runErr == nil {
				if err := results.WriteLoadFile(out, "load", res); err != nil {
					return fmt.Errorf("writing %s: %w", out, err)
				}
			}
			if runErr != nil {
				return runErr
			}
			if ok := res.Requests - res.ErrorsBy["http"]; ok == 0 {
				return &exitError{code: 1, err: fmt.Errorf("all %d responses had status >= 400", res.Requests)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.IntVarP(&opts.Connections, "connections", "c", 10, "connections to keep open (`N`)")
	f.IntVarP(&opts.Threads, "threads", "t", 2, "worker threads (`N`, at most -c)")
	f.StringVarP(&duration, "duration", "d", "10s", "how long to load (`DUR`: 10s, 2m, or seconds); with -n only, until -n")
	f.Int64VarP(&opts.Requests, "requests", "n", 0, "stop after `N` requests in total")
	f.Float64VarP(&opts.Rate, "rate", "R", 0, "open loop: `RATE` requests/s in total, latency corrected for coordinated omission")
	f.StringArrayVarP(&headers, "header", "H", nil, "add a request header ('Name: value'; repeatable)")
	f.StringVarP(&method, "method", "m", "GET", "request `METHOD`")
	f.StringVar(&body, "body", "", "request body (`TEXT`)")
	f.StringVar(&bodyFile, "body-file", "", "request body read from `FILE`")
	f.BoolVar(&closeConns, "close", false, "open a new connection per request (like -H 'Connection: close')")
	f.BoolVar(&h2, "h2", false, "HTTP/2: over TLS by ALPN for https://, cleartext with prior knowledge (h2c) for http://")
	f.IntVar(&opts.Streams, "streams", 1, "with --h2: concurrent streams per connection (`N`), at most the server's SETTINGS_MAX_CONCURRENT_STREAMS")
	f.StringVar(&opts.CACert, "cacert", "", "verify https:// certificates against the CA certificates in `FILE` (PEM); default: no verification")
	f.StringVar(&opts.SNI, "sni", "", "TLS server `NAME` to send (default: the URL's host)")
	f.BoolVar(&opts.TLSResume, "tls-resume", false, "resume TLS sessions on new connections (abbreviated handshakes); default: a full handshake per connection")
	f.StringVar(&timeout, "timeout", "2s", "per-request timeout (`DUR`)")
	f.StringVar(&busyPoll, "busy-poll", "0", "poll up to `DUR` (e.g. 20us) before sleeping: more client CPU, fewer wake-ups for a server on the same machine")
	f.StringVar(&opts.Engine, "engine", "", "load engine (`NAME`): auto (io_uring for --close loads where it runs, else epoll), uring, epoll or goroutines; default $BENCHFLOW_LOAD_ENGINE, else auto")
	f.BoolVar(&latency, "latency", false, "print the latency percentiles")
	f.BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	f.StringVarP(&scriptFile, "script", "s", "", "Starlark request script (`FILE.star`): its request() builds the requests, paths relative to the first URL, and done() gets the totals (docs/starlark.md)")
	f.StringVar(&out, "out", "", "also write the result to `FILE.parquet` (plus FILE.latency.parquet, FILE.timeseries.parquet)")
	findMax.register(f)
	rootCmd.AddCommand(cmd)
}

// loadFlags names each load.Options setting (load.FieldError.Field) by
// its flag.
var loadFlags = map[string]string{
	"connections": "-c/--connections",
	"threads":     "-t/--threads",
	"duration":    "-d/--duration",
	"requests":    "-n/--requests",
	"rate":        "-R/--rate",
	"timeout":     "--timeout",
	"busy_poll":   "--busy-poll",
	"engine":      "--engine",
	"protocol":    "--h2",
	"streams":     "--streams",
	"cacert":      "--cacert",
}

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
	if opts.Connections == 0 {
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
