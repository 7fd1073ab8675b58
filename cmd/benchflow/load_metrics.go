package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/benchflow/benchflow/engine/load"
	"github.com/benchflow/benchflow/engine/loadmetrics"
	"github.com/benchflow/benchflow/engine/run"
)

// metricsFlags is `benchflow load --metrics-addr`: live Prometheus metrics.
type metricsFlags struct{ addr string }

func (m *metricsFlags) register(f *pflag.FlagSet) {
	f.StringVar(&m.addr, "metrics-addr", "", "serve live Prometheus metrics at http://`ADDR`/metrics during the load (requests, errors by kind, latency buckets, schedule lag, loader CPU); port 0 picks a free one, printed on stderr")
}

// start serves the metrics of the load opts describes, if asked: it sets
// opts.OnStart and returns the function that stops serving (after the
// result is printed, so a last scrape sees the final totals).
func (m *metricsFlags) start(opts *load.Options, stderr io.Writer) (func(), error) {
	if m.addr == "" {
		return func() {}, nil
	}
	srv, err := loadmetrics.Listen(m.addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", m.addr, err)
	}
	// Said once the load is watched, so a scrape after the line sees it.
	opts.OnStart = func(o *load.Observer) {
		srv.Watch(o, loadmetrics.Labels{Step: "load"})
		fmt.Fprintf(stderr, "metrics: http://%s/metrics\n", srv.Addr())
	}
	return func() { srv.Close() }, nil
}

// applyMetrics serves `apply --metrics-addr`: each load of the run is
// watched as it starts, under its run, trial and step.
func applyMetrics(ro *run.Options, addr string) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	srv, err := loadmetrics.Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	fmt.Fprintf(stderr, "metrics: http://%s/metrics\n", srv.Addr())
	ro.OnLoadStart = func(runID, trialID, step string, o *load.Observer) {
		srv.Watch(o, loadmetrics.Labels{Run: runID, Trial: trialID, Step: step})
	}
	return func() { srv.Close() }, nil
}
