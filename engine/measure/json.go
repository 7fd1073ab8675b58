package measure

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// JSONResult is the JSON form of a Result (benchflow load --json). Field
// names are part of the CLI contract; latencies are microseconds.
type JSONResult struct {
	Tag         string            `json:"tag,omitempty"`
	Targets     []string          `json:"targets"`
	Started     time.Time         `json:"started"`
	DurationS   float64           `json:"duration_s"`
	Connections int               `json:"connections"`
	Threads     int               `json:"threads"`
	Close       bool              `json:"close"`
	Requests    int64             `json:"requests"`
	Errors      int64             `json:"errors"`
	RPS         float64           `json:"rps"`
	Bytes       int64             `json:"bytes"`
	BytesPerS   float64           `json:"bytes_per_s"`
	Latency     *JSONLatency      `json:"latency_us"`
	Uncorrected *JSONLatency      `json:"uncorrected_latency_us,omitempty"`
	Connect     *JSONLatency      `json:"connect_us,omitempty"`
	Status      map[string]int64  `json:"status"`
	ErrorsBy    map[string]int64  `json:"errors_by"`
	ErrorSample map[string]string `json:"error_samples,omitempty"`
	TargetRate  float64           `json:"target_rate,omitempty"`
	MeanBehind  float64           `json:"mean_behind_us,omitempty"`
	MaxBehind   float64           `json:"max_behind_us,omitempty"`
	LateSends   int64             `json:"late_sends,omitempty"`
	Reconnects  int64             `json:"reconnects"`
	Engine      string            `json:"engine"`
	Protocol    string            `json:"protocol"`
	Streams     int               `json:"streams"`
	MaxInFlight int               `json:"max_in_flight,omitempty"`
	Goaways     int64             `json:"goaways,omitempty"`
	H3ZeroRTT   bool              `json:"h3_0rtt,omitempty"`
	Used0RTT    *int64            `json:"used_0rtt,omitempty"` // HTTP/3 only, 0 included
	// UDP socket of HTTP/3 connections (Record.UDPRecvBuf …): omitted
	// when not read.
	UDPRecvBuf int64   `json:"udp_rcvbuf_bytes,omitempty"`
	UDPSendBuf int64   `json:"udp_sndbuf_bytes,omitempty"`
	UDPGSO     *bool   `json:"udp_gso,omitempty"`
	Naps       int64   `json:"naps,omitempty"`
	NapMeanUS  float64 `json:"nap_mean_us,omitempty"`
	TLSVersion string  `json:"tls_version,omitempty"`
	TLSCipher  string  `json:"tls_cipher,omitempty"`
	ALPN       string  `json:"alpn,omitempty"`
	LoaderCPUS float64 `json:"loader_cpu_s,omitempty"`
	// LoaderCPUPerReqUS is the loader's CPU µs per response.
	LoaderCPUPerReqUS float64        `json:"loader_cpu_us_per_req,omitempty"`
	Warning           string         `json:"warning,omitempty"`
	Intervals         []JSONInterval `json:"intervals"`

	// Intended, Missed and Unfinished are Record's (open loop with a
	// duration; Missed and Unfinished present, 0 included, whenever
	// Intended is).
	Intended   int64  `json:"intended,omitempty"`
	Missed     *int64 `json:"missed,omitempty"`
	Unfinished *int64 `json:"unfinished,omitempty"`
	// Thresholds are Record's (load --threshold), in the order given.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
}

// JSONLatency summarises a histogram in microseconds.
type JSONLatency struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	Stdev float64 `json:"stdev"`
	P50   float64 `json:"p50"`
	P75   float64 `json:"p75"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"`
	Max   float64 `json:"max"`
}

// JSONInterval is one timeseries row.
type JSONInterval struct {
	TS        float64 `json:"t_s"`
	DurationS float64 `json:"duration_s"`
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	Bytes     int64   `json:"bytes"`
	P50       float64 `json:"latency_p50_us"`
	P99       float64 `json:"latency_p99_us"`
}

// Summarize returns the percentiles of h (zeros for an empty histogram).
func Summarize(h *hdrhistogram.Histogram) *JSONLatency {
	if h == nil {
		return &JSONLatency{}
	}
	if h.TotalCount() == 0 {
		return &JSONLatency{}
	}
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) }
	return &JSONLatency{
		Count: h.TotalCount(), Min: float64(h.Min()), Mean: h.Mean(), Stdev: h.StdDev(),
		P50: q(50), P75: q(75), P90: q(90), P99: q(99), P999: q(99.9), P9999: q(99.99),
		Max: float64(h.Max()),
	}
}

// ToJSON converts r to its JSON form.
func ToJSON(r *Record) *JSONResult {
	j := &JSONResult{
		Tag: r.Tag, Targets: r.Targets, Started: r.Started.UTC(), DurationS: r.Duration.Seconds(),
		Connections: r.Connections, Threads: r.Threads, Close: r.Close,
		Requests: r.Requests, Errors: r.Errors, RPS: r.RPS(), Bytes: r.Bytes,
		Latency: Summarize(r.Latency), Status: map[string]int64{}, ErrorsBy: map[string]int64{},
		ErrorSample: r.ErrorSample, TargetRate: r.TargetRate, Reconnects: r.Reconnects, Engine: r.Engine,
		Protocol: r.Protocol, Streams: r.Streams, MaxInFlight: r.MaxInFlight, Goaways: r.Goaways, TLSVersion: r.TLSVersion, TLSCipher: r.TLSCipher, ALPN: r.ALPN,
		Warning: r.Warning, Intervals: []JSONInterval{},
	}
	if r.Protocol == ProtoH3 {
		j.H3ZeroRTT = r.H3ZeroRTT
		n := r.Used0RTT
		j.Used0RTT = &n
		if r.UDPRecvBuf > 0 || r.UDPSendBuf > 0 {
			j.UDPRecvBuf, j.UDPSendBuf = r.UDPRecvBuf, r.UDPSendBuf
			gso := r.UDPGSO
			j.UDPGSO = &gso
		}
	}
	if r.Naps > 0 {
		j.Naps = r.Naps
		j.NapMeanUS = float64(r.NapMean().Nanoseconds()) / 1e3
	}
	if r.LoaderCPU > 0 {
		j.LoaderCPUS = r.LoaderCPU.Seconds()
		j.LoaderCPUPerReqUS = float64(r.CPUPerRequest().Nanoseconds()) / 1e3
	}
	if j.Targets == nil {
		j.Targets = []string{}
	}
	if r.Duration > 0 {
		j.BytesPerS = float64(r.Bytes) / r.Duration.Seconds()
	}
	if r.Uncorrected != nil {
		j.Uncorrected = Summarize(r.Uncorrected)
	}
	if r.Connect != nil && r.Connect.TotalCount() > 0 {
		j.Connect = Summarize(r.Connect)
	}
	codes := make([]int, 0, len(r.Status))
	for c := range r.Status {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		j.Status[fmt.Sprint(c)] = r.Status[c]
	}
	for _, k := range ErrorClasses {
		j.ErrorsBy[k] = r.ErrorsBy[k]
	}
	if r.TargetRate > 0 {
		j.MeanBehind = float64(r.MeanBehind) / 1e3
		j.MaxBehind = float64(r.MaxBehind) / 1e3
		j.LateSends = r.LateSends
	}
	j.Thresholds = r.Thresholds
	if r.Intended > 0 {
		missed, unfinished := r.Missed, r.Unfinished
		j.Intended, j.Missed, j.Unfinished = r.Intended, &missed, &unfinished
	}
	for _, iv := range r.Intervals {
		ji := JSONInterval{TS: iv.Start.Seconds(), DurationS: iv.Duration.Seconds(),
			Requests: iv.Requests, Errors: iv.Errors, Bytes: iv.Bytes}
		if iv.Latency != nil && iv.Latency.TotalCount() > 0 {
			ji.P50 = float64(iv.Latency.ValueAtQuantile(50))
			ji.P99 = float64(iv.Latency.ValueAtQuantile(99))
		}
		j.Intervals = append(j.Intervals, ji)
	}
	return j
}

// WriteJSON prints r as one indented JSON object (see JSONResult).
func WriteJSON(w io.Writer, r *Record) error {
	if r == nil {
		return fmt.Errorf("writing JSON summary: no result")
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ToJSON(r)); err != nil {
		return fmt.Errorf("writing JSON summary: %w", err)
	}
	return nil
}
