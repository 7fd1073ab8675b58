// Package loadmetrics serves a load's running totals in Prometheus' text
// format (`benchflow load --metrics-addr`): requests, errors by class, the
// corrected latency as a histogram, the connections, the schedule's lag
// and the loader's CPU, labelled with the run, trial and step. It reads
// the load through load.Observer on each scrape, so a load nobody scrapes
// costs nothing, and the requests' path is never touched.
package loadmetrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/benchflow/benchflow/engine/load"
)

// Labels name what is loaded: the run, the trial and the step (empty
// values are exported as empty labels).
type Labels struct{ Run, Trial, Step string }

// Buckets are the latency histogram's upper bounds, in seconds.
var Buckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Server is a metrics endpoint. Watch points it at a load; between loads
// it keeps serving the last one's final totals.
type Server struct {
	ln  net.Listener
	srv *http.Server
	mu  sync.Mutex
	obs *load.Observer
	lab Labels
}

var labelNames = []string{"run", "trial", "step"}

var (
	descRequests    = prometheus.NewDesc("benchflow_load_requests_total", "Responses received (any status).", labelNames, nil)
	descErrors      = prometheus.NewDesc("benchflow_load_errors_total", "Failed requests by kind (connect, timeout, read, write, parse, http, reset, goaway, check).", append(labelNames, "kind"), nil)
	descLatency     = prometheus.NewDesc("benchflow_load_latency_seconds", "Corrected latency of the responses (open loop: from the intended send).", labelNames, nil)
	descConnections = prometheus.NewDesc("benchflow_load_connections", "Connections of the load.", labelNames, nil)
	descLag         = prometheus.NewDesc("benchflow_load_schedule_lag_max_seconds", "How far behind its schedule the latest send was, at most (open loop).", labelNames, nil)
	descCPU         = prometheus.NewDesc("benchflow_load_loader_cpu_seconds_total", "CPU time of the loading process over the measured phase.", labelNames, nil)
	descElapsed     = prometheus.NewDesc("benchflow_load_elapsed_seconds", "Time since the load's measured phase began.", labelNames, nil)
)

// Listen binds addr (127.0.0.1:0 lets the kernel pick a port: Addr says
// which) and serves /metrics until Close.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Addr is the address the endpoint listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Watch exports obs's totals under labels from now on.
func (s *Server) Watch(obs *load.Observer, labels Labels) {
	s.mu.Lock()
	s.obs, s.lab = obs, labels
	s.mu.Unlock()
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Describe is prometheus.Collector's.
func (s *Server) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descErrors, descLatency, descConnections, descLag, descCPU, descElapsed} {
		ch <- d
	}
}

// Collect is prometheus.Collector's: the watched load's totals now.
func (s *Server) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	obs, lab := s.obs, s.lab
	s.mu.Unlock()
	if obs == nil {
		return
	}
	t := obs.Totals()
	lv := []string{lab.Run, lab.Trial, lab.Step}
	ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(t.Requests), lv...)
	for _, k := range load.ErrorClasses {
		ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(t.ErrorsBy[k]), append(lv, k)...)
	}
	ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(t.Connections), lv...)
	ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, t.MaxBehind.Seconds(), lv...)
	ch <- prometheus.MustNewConstMetric(descCPU, prometheus.CounterValue, t.LoaderCPU.Seconds(), lv...)
	ch <- prometheus.MustNewConstMetric(descElapsed, prometheus.GaugeValue, t.Elapsed.Seconds(), lv...)
	// The HDR histogram's counts folded into the fixed buckets: a value
	// (µs, the lowest of its HDR bucket) is counted under the first bound
	// at or above it.
	buckets := make(map[float64]uint64, len(Buckets))
	var sum float64
	var count uint64
	for _, b := range t.Latency.Distribution() {
		if b.Count == 0 {
			continue
		}
		v := float64(b.From) / 1e6
		sum += v * float64(b.Count)
		count += uint64(b.Count)
		for _, ub := range Buckets {
			if v <= ub {
				buckets[ub] += uint64(b.Count)
			}
		}
	}
	ch <- prometheus.MustNewConstHistogram(descLatency, count, sum, buckets, lv...)
}
