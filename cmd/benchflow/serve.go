package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchflow/benchflow/engine/serve"
	"github.com/benchflow/benchflow/engine/units"
)

func init() { rootCmd.AddCommand(newServeCmd()) }

// newServeCmd builds `benchflow serve`.
func newServeCmd() *cobra.Command {
	var (
		cfg    serve.Config
		size   string
		status int
		idle   time.Duration

		headerTimeout, bodyTimeout time.Duration
		maxBody, maxHeader         string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the built-in HTTP target server (HTTP/1.1, h2c, TLS, HTTP/3)",
		Long: `serve runs a small, fast HTTP server (HTTP/1.1 and h2c on one port, HTTPS
with HTTP/2 by ALPN under --tls) to benchmark against, so a first
pipeline needs nothing installed. Every path answers a generated body of --size
bytes ("hello\n" repeated), or the files of --dir; /bytes/<n> always answers n
bytes (n may carry a unit: /bytes/4KiB). --h3 adds HTTP/3 over QUIC on
the UDP port of the same number (TLS implied), advertised by Alt-Svc on the
TLS responses, with 0-RTT early data accepted. It can misbehave on purpose: --delay
waits before each answer, --stall/--stall-every freeze it periodically (for
coordinated-omission tests), --status sets the response code. With --workers N
and --delay D it is a queue of known capacity: N requests are served at once,
each for exactly D, the others wait — N/D requests per second, the yardstick
for "benchflow load --find-max".

A keep-alive connection idle for --idle-timeout (60s) is closed, so clients
that leave connections open cannot hold the server's descriptors for good;
so is one whose request headers take longer than --header-timeout (30s), or
whose body takes longer than --body-timeout (30s, answered 408) or is longer
than --max-body (64MiB, answered 413): bodies are read and discarded.

It prints "listening on http://ADDR" (https://ADDR with --tls or --h3) once ready,
what it speaks on stderr, and stops gracefully on SIGINT or SIGTERM.`,
		Example: `  benchflow serve
  benchflow serve --addr 127.0.0.1:0 --size 4KiB
  benchflow serve --dir ./www
  benchflow serve --stall 200ms --stall-every 2s
  benchflow serve --workers 4 --delay 2ms      # capacity 2,000 req/s
  benchflow serve --h3                         # then: benchflow load --h3 https://127.0.0.1:8080/
  benchflow serve --idle-timeout 5s            # close idle keep-alive connections sooner`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := serve.ParseSize(size)
			if err != nil {
				return fmt.Errorf("--size: %w", err)
			}
			cfg.Size = n
			cfg.Status = status
			switch {
			case idle < 0:
				return fmt.Errorf("--idle-timeout %s: must not be negative (0 keeps idle connections open)", idle)
			case idle == 0:
				cfg.IdleTimeout = -1 // never
			default:
				cfg.IdleTimeout = idle
			}
			// The request's bounds: 0 on the command line is none.
			for _, d := range []struct {
				name string
				v    time.Duration
				into *time.Duration
			}{{"--header-timeout", headerTimeout, &cfg.HeaderTimeout}, {"--body-timeout", bodyTimeout, &cfg.BodyTimeout}} {
				switch {
				case d.v < 0:
					return fmt.Errorf("%s %s: must not be negative (0: no limit)", d.name, d.v)
				case d.v == 0:
					*d.into = -1
				default:
					*d.into = d.v
				}
			}
			if cfg.MaxBodyBytes, err = serve.ParseSize(maxBody); err != nil {
				return fmt.Errorf("--max-body: %w", err)
			}
			if cfg.MaxBodyBytes == 0 {
				cfg.MaxBodyBytes = -1
			}
			mh, err := serve.ParseSize(maxHeader)
			if err == nil && (mh < 1<<10 || mh > 64<<20) {
				err = fmt.Errorf("%s: want 1KiB to 64MiB", maxHeader)
			}
			if err != nil {
				return fmt.Errorf("--max-header: %w", err)
			}
			cfg.MaxHeaderBytes = int(mh)
			if cfg.H3 {
				if cmd.Flags().Changed("tls") && !cfg.TLS {
					return fmt.Errorf("--h3 with --tls=false: HTTP/3 runs over QUIC, which is always TLS (leave --tls out: --h3 implies it)")
				}
				cfg.TLS = true
			}
			if !serve.IsLoopback(cfg.Addr) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s is not a loopback address: anyone who can reach this host can load this server\n", cfg.Addr)
			}
			out := cmd.OutOrStdout()
			cfg.Ready = func(a net.Addr) {
				// The first line is exactly "listening on URL": scripts
				// and tests read the address from it; what the server
				// speaks goes to stderr.
				if cfg.H3 {
					fmt.Fprintf(out, "listening on https://%s\n", a)
					_, port, _ := net.SplitHostPort(a.String())
					fmt.Fprintf(cmd.ErrOrStderr(), "serving HTTP/3 over QUIC on UDP port %s (0-RTT accepted), HTTP/2 (ALPN h2) and HTTP/1.1 over TLS, with a self-signed certificate made at start: benchflow load --h3 https://%s/\n", port, a)
					return
				}
				if cfg.TLS {
					fmt.Fprintf(out, "listening on https://%s\n", a)
					fmt.Fprintln(cmd.ErrOrStderr(), "serving HTTP/2 (ALPN h2) and HTTP/1.1 over TLS with a self-signed certificate made at start")
					return
				}
				fmt.Fprintf(out, "listening on http://%s\n", a)
				fmt.Fprintln(cmd.ErrOrStderr(), "serving HTTP/1.1 and HTTP/2 with prior knowledge (h2c) on one port")
			}
			if cfg.MaxStreams < 0 {
				return fmt.Errorf("--max-streams %d: must be at least 1 (0: the default, 250)", cfg.MaxStreams)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve.ListenAndServe(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", serve.DefaultAddr, "listen on `HOST:PORT` (port 0 picks a free one)")
	f.StringVar(&cfg.Dir, "dir", "", "serve the files under `DIR` instead of a generated body")
	f.StringVar(&size, "size", "6", "answer a generated body of `N` bytes (6, 4KiB, 1MiB, 1k, 1MB)")
	f.Var(units.NewDurationFlag(&cfg.Delay, 0), "delay", "wait `DUR` before answering each request")
	f.IntVar(&cfg.Workers, "workers", 0, "with --delay: serve at most `N` requests at once, each for exactly --delay, the rest queued (capacity N/delay req/s)")
	f.Var(units.NewDurationFlag(&cfg.Stall, 0), "stall", "stall every request for up to `DUR` once per --stall-every period")
	f.Var(units.NewDurationFlag(&cfg.StallEvery, 0), "stall-every", "stall once every `DUR` (with --stall)")
	f.IntVar(&status, "status", 200, "answer every request with status `CODE`")
	f.BoolVar(&cfg.TLS, "tls", false, "serve HTTPS (HTTP/2 by ALPN, and HTTP/1.1) with a self-signed certificate made at start")
	f.BoolVar(&cfg.H3, "h3", false, "also serve HTTP/3 over QUIC on the UDP port of the same number, 0-RTT accepted (implies --tls)")
	f.IntVar(&cfg.MaxStreams, "max-streams", 0, "allow at most `N` concurrent HTTP/2 streams (with --h3: QUIC request streams) per connection (0: 250)")
	f.DurationVar(&idle, "idle-timeout", serve.DefaultIdleTimeout, "close a keep-alive connection idle for `DUR` (0: never)")
	f.DurationVar(&headerTimeout, "header-timeout", serve.DefaultHeaderTimeout, "close a connection whose request headers take longer than `DUR` (0: no limit)")
	f.DurationVar(&bodyTimeout, "body-timeout", serve.DefaultBodyTimeout, "answer 408 and close a connection whose request body takes longer than `DUR` to arrive (0: no limit)")
	f.StringVar(&maxBody, "max-body", "64MiB", "answer 413 and close a connection whose request body is longer than `SIZE` (0: no limit)")
	f.StringVar(&maxHeader, "max-header", "1MiB", "refuse a request whose headers are longer than `SIZE` (431; 1KiB to 64MiB)")
	return cmd
}
