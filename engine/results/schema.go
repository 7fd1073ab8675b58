package results

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The tables of a run. Each is defined once here, as a list of columns with
// an accessor into its row struct; the same definition writes Parquet and
// Arrow IPC and reads both back. docs/results.md documents every column.

// TrialRow is one row of trials.parquet: one trial × one load or warm step
// (a trial that failed before any step has one row with an empty step).
type TrialRow struct {
	RunID      string
	TrialID    string
	Index      int64
	Repetition int64
	Step       string
	StepKind   string // "load" or "warm" ("" when the trial has no step)
	Params     []Param
	Provider   string
	StartedAt  time.Time
	DurationS  float64
	Requests   int64
	Errors     int64
	RPS        float64
	Bytes      int64

	LatencyP50US  float64
	LatencyP90US  float64
	LatencyP99US  float64
	LatencyP999US float64
	LatencyMaxUS  float64
	LatencyMeanUS float64
	// LatencyUncorrectedP99US is the p99 measured from the actual send
	// (open loop); equals LatencyP99US in closed loop.
	LatencyUncorrectedP99US float64
	ConnectP50US            float64
	TargetRate              float64
	RateWarning             string
	Connections             int64
	Threads                 int64

	ErrorsConnect int64
	ErrorsTimeout int64
	ErrorsRead    int64
	ErrorsWrite   int64
	ErrorsParse   int64
	ErrorsHTTP    int64
	Status1xx     int64
	Status2xx     int64
	Status3xx     int64
	Status4xx     int64
	Status5xx     int64

	Status          string // the step's status, or the trial's when it has no step
	Error           string
	ServiceVersions string // JSON object: service name -> version line

	// Where the machine's CPU went (StepRecord.CPU), % of one core.
	CPUTotalPct        float64
	CPULoaderPct       float64
	CPUServicePct      float64
	CPUInfraPct        float64
	CPUKernelPct       float64
	CPUOtherPct        float64
	CPUIdlePct         float64
	CPUStealPct        float64
	CPUUnattributedPct float64
	CPUIRQInProcsPct   float64
	Verdict            string
	VerdictEvidence    string
	VerdictHost        string
	// The quiet check before the load (StepRecord.Quiet).
	QuietWindowS float64
	QuietPct     float64
	QuietTop     string
	BusyStart    bool
	// QuietLoadAvg is the 1-minute load average at the end of the quiet
	// check (QuietCheck.LoadAvg); 0 without one, or in rows written
	// before the column existed.
	QuietLoadAvg float64
	// Steady is CheckSteady's verdict on the step's timeseries;
	// SteadyReason says why not (or "not checked: …"). A row written
	// before these columns existed reads as Steady false with no reason:
	// unknown, not unsteady (see Unsteady).
	Steady       bool
	SteadyReason string
	// A load step with a search block (StepRecord.Capacity): the highest
	// rate that met the SLO, what bounded the search, and the SLO. The
	// step's other columns are the figures of the probe at that rate.
	CapacityRPS   float64
	CapacityLimit string
	SLO           string
	// CapacityFailRPS is the lowest probed rate that failed the SLO (0
	// when none did): with CapacityLimit "none" the capacity is below it.
	CapacityFailRPS float64
	// LoadEngine is the load generator's engine that ran the step
	// (measure.Record.Engine: "uring", "epoll" or "goroutines"); empty in
	// runs written before the column existed.
	LoadEngine string
	// Protocol is the protocol the load spoke ("http/1.1", "h2" over TLS,
	// "h2c" cleartext HTTP/2, "h3"), Streams the concurrent streams per
	// connection (1 for HTTP/1.1); TLSVersion, TLSCipher and ALPN what the
	// first TLS handshake negotiated (empty without TLS). ErrorsReset and
	// ErrorsGoaway count HTTP/2 and HTTP/3 streams reset by the server
	// and HTTP/2 streams refused by GOAWAY. All empty in runs written before the columns existed.
	Protocol     string
	Streams      int64
	TLSVersion   string
	TLSCipher    string
	ALPN         string
	ErrorsReset  int64
	ErrorsGoaway int64
	// Agents is the number of agents that ran the step (its agents
	// block); 0 when it ran in the benchflow process.
	Agents int64
	// Attempt is 1 for a trial's first run, 2 and 3 for its re-runs
	// (pipeline busy_rerun); 0 in runs written before the column existed.
	// Discarded rows are attempts left out of the estimates (the machine
	// was busy), DiscardedWhy says why; the attempt that counts has
	// Discarded false.
	Attempt      int64
	Discarded    bool
	DiscardedWhy string
	// Connects counts the connections the load opened (its first ones,
	// those of --close, reconnects); Used0RTT the HTTP/3 connections whose
	// 0-RTT early data the server accepted (h3_0rtt). Both 0 in runs
	// written before the columns existed.
	Connects int64
	Used0RTT int64
	// Intended and Missed are an open loop's intended sends and those
	// never sent (measure.Record's); 0 in closed loop and in runs written
	// before the columns existed.
	Intended int64
	Missed   int64
	// ErrorsCheck counts responses that failed a response check (a load
	// step's checks); 0 in runs written before the column existed.
	ErrorsCheck int64
	// UDPRecvBuf, UDPSendBuf and UDPGSO describe an HTTP/3 load's UDP
	// sockets (measure.Record's fields of the same names); 0 and false
	// for other protocols and in runs written before the columns existed.
	UDPRecvBuf int64
	UDPSendBuf int64
	UDPGSO     bool
}

// Unsteady reports whether the steadiness check failed for this row.
func (r *TrialRow) Unsteady() bool { return !r.Steady && r.SteadyReason != "" }

// LatencyRow is one non-empty HDR histogram bucket of one trial × step
// (latency.parquet). Values v with LowerUS <= v <= UpperUS were counted.
type LatencyRow struct {
	RunID   string
	TrialID string
	Step    string
	LowerUS float64
	UpperUS float64
	Count   int64
	// Agent is the agent whose histogram the bucket belongs to (1-based)
	// for a step that ran on agents, 0 otherwise: the buckets of a step
	// on agents are each agent's own, and their union is the merged
	// histogram.
	Agent int64
}

// TimeseriesRow is one interval of one trial × step (timeseries.parquet).
type TimeseriesRow struct {
	RunID        string
	TrialID      string
	Step         string
	TS           float64 // interval start, seconds since the step started
	IntervalS    float64
	Requests     int64
	Errors       int64
	Bytes        int64
	RPS          float64
	LatencyP50US float64
	LatencyP99US float64
	LatencyMaxUS float64
}

// ProcessRow is one sample of one process (processes.parquet).
type ProcessRow struct {
	RunID                   string
	TrialID                 string
	Step                    string
	TS                      float64
	Process                 string
	PID                     int64
	Role                    string
	CPUPct                  float64
	UserPct                 float64
	SystemPct               float64
	RSSBytes                int64
	Threads                 int64
	CtxSwitchesVoluntary    int64
	CtxSwitchesNonvoluntary int64
	Container               string
	OutsideRun              bool
	Host                    string
}

// SystemRow is one /proc/stat sample (system.parquet).
type SystemRow struct {
	RunID      string
	TrialID    string
	Step       string
	TS         float64
	UserPct    float64
	NicePct    float64
	SystemPct  float64
	IdlePct    float64
	IOWaitPct  float64
	IRQPct     float64
	SoftIRQPct float64
	StealPct   float64
	Host       string
}

// NetworkRow is one /proc/net/dev sample of one interface (network.parquet).
type NetworkRow struct {
	RunID     string
	TrialID   string
	Step      string
	TS        float64
	Interface string
	RxBytes   int64
	TxBytes   int64
	RxPackets int64
	TxPackets int64
	Host      string
}

// column describes one column of a table of rows R: its name, Arrow type,
// and column-wise accessors between a batch of rows and an Arrow array.
type column[R any] struct {
	name string
	typ  arrow.DataType
	put  func(b array.Builder, rows []R)
	get  func(a arrow.Array, rows []R)
	// num reads a numeric column's value as a float64 (nil for the others).
	num func(*R) float64
}

var tsType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

func str[R any](name string, p func(*R) *string) column[R] {
	return column[R]{name, arrow.BinaryTypes.String,
		func(b array.Builder, rows []R) {
			sb := b.(*array.StringBuilder)
			sb.Reserve(len(rows))
			for i := range rows {
				sb.Append(*p(&rows[i]))
			}
		},
		func(a arrow.Array, rows []R) {
			// Values alias the array's buffers: copy them, once per run of
			// equal values (ids repeat on consecutive rows).
			var last string
			val := func(int) string { return "" }
			if d, ok := a.(*array.Dictionary); ok {
				getDict(d, rows, p)
				return
			}
			switch a := a.(type) {
			case *array.String:
				val = a.Value
			case *array.LargeString:
				val = a.Value
			default:
				return
			}
			for i := range rows {
				if a.IsNull(i) {
					continue
				}
				if v := val(i); v != last {
					last = strings.Clone(v)
				}
				*p(&rows[i]) = last
			}
		}, nil}
}

// getDict stores the values of a dictionary array of strings: each
// distinct value is copied once.
func getDict[R any](d *array.Dictionary, rows []R, p func(*R) *string) {
	var vals []string
	switch dict := d.Dictionary().(type) {
	case *array.String:
		vals = make([]string, dict.Len())
		for i := range vals {
			vals[i] = strings.Clone(dict.Value(i))
		}
	case *array.LargeString:
		vals = make([]string, dict.Len())
		for i := range vals {
			vals[i] = strings.Clone(dict.Value(i))
		}
	default:
		return
	}
	for i := range rows {
		if d.IsValid(i) {
			*p(&rows[i]) = vals[d.GetValueIndex(i)]
		}
	}
}

func i64[R any](name string, p func(*R) *int64) column[R] {
	return column[R]{name, arrow.PrimitiveTypes.Int64,
		func(b array.Builder, rows []R) {
			ib := b.(*array.Int64Builder)
			ib.Reserve(len(rows))
			for i := range rows {
				ib.UnsafeAppend(*p(&rows[i]))
			}
		},
		func(a arrow.Array, rows []R) {
			if a, ok := a.(*array.Int64); ok {
				vs := a.Int64Values()
				for i := range rows {
					*p(&rows[i]) = vs[i]
				}
			}
		}, func(r *R) float64 { return float64(*p(r)) }}
}

func f64[R any](name string, p func(*R) *float64) column[R] {
	return column[R]{name, arrow.PrimitiveTypes.Float64,
		func(b array.Builder, rows []R) {
			fb := b.(*array.Float64Builder)
			fb.Reserve(len(rows))
			for i := range rows {
				fb.UnsafeAppend(*p(&rows[i]))
			}
		},
		func(a arrow.Array, rows []R) {
			if a, ok := a.(*array.Float64); ok {
				vs := a.Float64Values()
				for i := range rows {
					*p(&rows[i]) = vs[i]
				}
			}
		}, func(r *R) float64 { return *p(r) }}
}

func boolean[R any](name string, p func(*R) *bool) column[R] {
	return column[R]{name, arrow.FixedWidthTypes.Boolean,
		func(b array.Builder, rows []R) {
			bb := b.(*array.BooleanBuilder)
			bb.Reserve(len(rows))
			for i := range rows {
				bb.UnsafeAppend(*p(&rows[i]))
			}
		},
		func(a arrow.Array, rows []R) {
			if a, ok := a.(*array.Boolean); ok {
				for i := range rows {
					if a.IsValid(i) {
						*p(&rows[i]) = a.Value(i)
					}
				}
			}
		}, nil}
}

func tstamp[R any](name string, p func(*R) *time.Time) column[R] {
	return column[R]{name, tsType,
		func(b array.Builder, rows []R) {
			tb := b.(*array.TimestampBuilder)
			for i := range rows {
				t := *p(&rows[i])
				if t.IsZero() {
					tb.AppendNull()
				} else {
					tb.Append(arrow.Timestamp(t.UnixMicro()))
				}
			}
		},
		func(a arrow.Array, rows []R) {
			if a, ok := a.(*array.Timestamp); ok {
				for i := range rows {
					if a.IsValid(i) {
						*p(&rows[i]) = time.UnixMicro(int64(a.Value(i))).UTC()
					}
				}
			}
		}, nil}
}

// Column lists. Required contract columns come first, in the order
// docs/results.md lists them; TrialRow.Params is inserted after "step_kind".

var trialColumnsHead = []column[TrialRow]{
	str("run_id", func(r *TrialRow) *string { return &r.RunID }),
	str("trial_id", func(r *TrialRow) *string { return &r.TrialID }),
	i64("trial_index", func(r *TrialRow) *int64 { return &r.Index }),
	i64("repetition", func(r *TrialRow) *int64 { return &r.Repetition }),
	str("step", func(r *TrialRow) *string { return &r.Step }),
	str("step_kind", func(r *TrialRow) *string { return &r.StepKind }),
}

var trialColumnsTail = []column[TrialRow]{
	str("provider", func(r *TrialRow) *string { return &r.Provider }),
	tstamp("started_at", func(r *TrialRow) *time.Time { return &r.StartedAt }),
	f64("duration_s", func(r *TrialRow) *float64 { return &r.DurationS }),
	i64("requests", func(r *TrialRow) *int64 { return &r.Requests }),
	i64("errors", func(r *TrialRow) *int64 { return &r.Errors }),
	f64("rps", func(r *TrialRow) *float64 { return &r.RPS }),
	i64("bytes", func(r *TrialRow) *int64 { return &r.Bytes }),
	f64("latency_p50_us", func(r *TrialRow) *float64 { return &r.LatencyP50US }),
	f64("latency_p90_us", func(r *TrialRow) *float64 { return &r.LatencyP90US }),
	f64("latency_p99_us", func(r *TrialRow) *float64 { return &r.LatencyP99US }),
	f64("latency_p999_us", func(r *TrialRow) *float64 { return &r.LatencyP999US }),
	f64("latency_max_us", func(r *TrialRow) *float64 { return &r.LatencyMaxUS }),
	f64("latency_mean_us", func(r *TrialRow) *float64 { return &r.LatencyMeanUS }),
	f64("latency_uncorrected_p99_us", func(r *TrialRow) *float64 { return &r.LatencyUncorrectedP99US }),
	f64("connect_p50_us", func(r *TrialRow) *float64 { return &r.ConnectP50US }),
	f64("target_rate", func(r *TrialRow) *float64 { return &r.TargetRate }),
	str("rate_warning", func(r *TrialRow) *string { return &r.RateWarning }),
	i64("connections", func(r *TrialRow) *int64 { return &r.Connections }),
	i64("threads", func(r *TrialRow) *int64 { return &r.Threads }),
	i64("errors_connect", func(r *TrialRow) *int64 { return &r.ErrorsConnect }),
	i64("errors_timeout", func(r *TrialRow) *int64 { return &r.ErrorsTimeout }),
	i64("errors_read", func(r *TrialRow) *int64 { return &r.ErrorsRead }),
	i64("errors_write", func(r *TrialRow) *int64 { return &r.ErrorsWrite }),
	i64("errors_parse", func(r *TrialRow) *int64 { return &r.ErrorsParse }),
	i64("errors_http", func(r *TrialRow) *int64 { return &r.ErrorsHTTP }),
	i64("status_1xx", func(r *TrialRow) *int64 { return &r.Status1xx }),
	i64("status_2xx", func(r *TrialRow) *int64 { return &r.Status2xx }),
	i64("status_3xx", func(r *TrialRow) *int64 { return &r.Status3xx }),
	i64("status_4xx", func(r *TrialRow) *int64 { return &r.Status4xx }),
	i64("status_5xx", func(r *TrialRow) *int64 { return &r.Status5xx }),
	str("status", func(r *TrialRow) *string { return &r.Status }),
	str("error", func(r *TrialRow) *string { return &r.Error }),
	str("service_versions", func(r *TrialRow) *string { return &r.ServiceVersions }),
	f64("cpu_total_pct", func(r *TrialRow) *float64 { return &r.CPUTotalPct }),
	f64("cpu_loader_pct", func(r *TrialRow) *float64 { return &r.CPULoaderPct }),
	f64("cpu_service_pct", func(r *TrialRow) *float64 { return &r.CPUServicePct }),
	f64("cpu_infra_pct", func(r *TrialRow) *float64 { return &r.CPUInfraPct }),
	f64("cpu_kernel_pct", func(r *TrialRow) *float64 { return &r.CPUKernelPct }),
	f64("cpu_other_pct", func(r *TrialRow) *float64 { return &r.CPUOtherPct }),
	f64("cpu_idle_pct", func(r *TrialRow) *float64 { return &r.CPUIdlePct }),
	f64("cpu_steal_pct", func(r *TrialRow) *float64 { return &r.CPUStealPct }),
	f64("cpu_unattributed_pct", func(r *TrialRow) *float64 { return &r.CPUUnattributedPct }),
	f64("cpu_irq_in_processes_pct", func(r *TrialRow) *float64 { return &r.CPUIRQInProcsPct }),
	str("verdict", func(r *TrialRow) *string { return &r.Verdict }),
	str("verdict_evidence", func(r *TrialRow) *string { return &r.VerdictEvidence }),
	f64("quiet_window_s", func(r *TrialRow) *float64 { return &r.QuietWindowS }),
	f64("quiet_other_pct", func(r *TrialRow) *float64 { return &r.QuietPct }),
	str("quiet_top", func(r *TrialRow) *string { return &r.QuietTop }),
	boolean("busy_start", func(r *TrialRow) *bool { return &r.BusyStart }),
	f64("quiet_load_avg", func(r *TrialRow) *float64 { return &r.QuietLoadAvg }),
	boolean("steady", func(r *TrialRow) *bool { return &r.Steady }),
	str("steady_reason", func(r *TrialRow) *string { return &r.SteadyReason }),
	f64("capacity_rps", func(r *TrialRow) *float64 { return &r.CapacityRPS }),
	str("capacity_limit", func(r *TrialRow) *string { return &r.CapacityLimit }),
	str("slo", func(r *TrialRow) *string { return &r.SLO }),
	str("load_engine", func(r *TrialRow) *string { return &r.LoadEngine }),
	i64("agents", func(r *TrialRow) *int64 { return &r.Agents }),
	f64("capacity_first_failing_rps", func(r *TrialRow) *float64 { return &r.CapacityFailRPS }),
	str("protocol", func(r *TrialRow) *string { return &r.Protocol }),
	i64("streams", func(r *TrialRow) *int64 { return &r.Streams }),
	str("tls_version", func(r *TrialRow) *string { return &r.TLSVersion }),
	str("tls_cipher", func(r *TrialRow) *string { return &r.TLSCipher }),
	str("alpn", func(r *TrialRow) *string { return &r.ALPN }),
	i64("errors_reset", func(r *TrialRow) *int64 { return &r.ErrorsReset }),
	i64("errors_goaway", func(r *TrialRow) *int64 { return &r.ErrorsGoaway }),
	i64("attempt", func(r *TrialRow) *int64 { return &r.Attempt }),
	boolean("discarded", func(r *TrialRow) *bool { return &r.Discarded }),
	str("discarded_why", func(r *TrialRow) *string { return &r.DiscardedWhy }),
	i64("connects", func(r *TrialRow) *int64 { return &r.Connects }),
	i64("used_0rtt", func(r *TrialRow) *int64 { return &r.Used0RTT }),
	i64("udp_rcvbuf_bytes", func(r *TrialRow) *int64 { return &r.UDPRecvBuf }),
	i64("udp_sndbuf_bytes", func(r *TrialRow) *int64 { return &r.UDPSendBuf }),
	boolean("udp_gso", func(r *TrialRow) *bool { return &r.UDPGSO }),
	i64("intended", func(r *TrialRow) *int64 { return &r.Intended }),
	i64("missed", func(r *TrialRow) *int64 { return &r.Missed }),
	i64("errors_check", func(r *TrialRow) *int64 { return &r.ErrorsCheck }),
	str("verdict_host", func(r *TrialRow) *string { return &r.VerdictHost }),
}

// ProbeRow is one row of probes.parquet: one probe of a capacity search
// (a load step with a search block).
type ProbeRow struct {
	RunID, TrialID, Step       string
	Probe                      int64 // 1-based, in the order run
	Rate, AchievedRPS          float64
	Requests, Errors           int64
	P50US, P99US, P999US       float64
	UncorrectedP99US           float64
	MeanBehindUS, LoaderCPUPct float64
	Pass, GeneratorLimited     bool
	Reason                     string
}

var probeColumns = []column[ProbeRow]{
	str("run_id", func(r *ProbeRow) *string { return &r.RunID }),
	str("trial_id", func(r *ProbeRow) *string { return &r.TrialID }),
	str("step", func(r *ProbeRow) *string { return &r.Step }),
	i64("probe", func(r *ProbeRow) *int64 { return &r.Probe }),
	f64("rate", func(r *ProbeRow) *float64 { return &r.Rate }),
	f64("achieved_rps", func(r *ProbeRow) *float64 { return &r.AchievedRPS }),
	i64("requests", func(r *ProbeRow) *int64 { return &r.Requests }),
	i64("errors", func(r *ProbeRow) *int64 { return &r.Errors }),
	f64("latency_p50_us", func(r *ProbeRow) *float64 { return &r.P50US }),
	f64("latency_p99_us", func(r *ProbeRow) *float64 { return &r.P99US }),
	f64("latency_p999_us", func(r *ProbeRow) *float64 { return &r.P999US }),
	f64("latency_uncorrected_p99_us", func(r *ProbeRow) *float64 { return &r.UncorrectedP99US }),
	f64("mean_behind_us", func(r *ProbeRow) *float64 { return &r.MeanBehindUS }),
	f64("loader_cpu_pct", func(r *ProbeRow) *float64 { return &r.LoaderCPUPct }),
	boolean("pass", func(r *ProbeRow) *bool { return &r.Pass }),
	boolean("generator_limited", func(r *ProbeRow) *bool { return &r.GeneratorLimited }),
	str("reason", func(r *ProbeRow) *string { return &r.Reason }),
}

var latencyColumns = []column[LatencyRow]{
	str("run_id", func(r *LatencyRow) *string { return &r.RunID }),
	str("trial_id", func(r *LatencyRow) *string { return &r.TrialID }),
	str("step", func(r *LatencyRow) *string { return &r.Step }),
	f64("lower_us", func(r *LatencyRow) *float64 { return &r.LowerUS }),
	f64("upper_us", func(r *LatencyRow) *float64 { return &r.UpperUS }),
	i64("count", func(r *LatencyRow) *int64 { return &r.Count }),
	i64("agent", func(r *LatencyRow) *int64 { return &r.Agent }),
}

var timeseriesColumns = []column[TimeseriesRow]{
	str("run_id", func(r *TimeseriesRow) *string { return &r.RunID }),
	str("trial_id", func(r *TimeseriesRow) *string { return &r.TrialID }),
	str("step", func(r *TimeseriesRow) *string { return &r.Step }),
	f64("t_s", func(r *TimeseriesRow) *float64 { return &r.TS }),
	f64("interval_s", func(r *TimeseriesRow) *float64 { return &r.IntervalS }),
	i64("requests", func(r *TimeseriesRow) *int64 { return &r.Requests }),
	i64("errors", func(r *TimeseriesRow) *int64 { return &r.Errors }),
	i64("bytes", func(r *TimeseriesRow) *int64 { return &r.Bytes }),
	f64("rps", func(r *TimeseriesRow) *float64 { return &r.RPS }),
	f64("latency_p50_us", func(r *TimeseriesRow) *float64 { return &r.LatencyP50US }),
	f64("latency_p99_us", func(r *TimeseriesRow) *float64 { return &r.LatencyP99US }),
	f64("latency_max_us", func(r *TimeseriesRow) *float64 { return &r.LatencyMaxUS }),
}

var processColumns = []column[ProcessRow]{
	str("run_id", func(r *ProcessRow) *string { return &r.RunID }),
	str("trial_id", func(r *ProcessRow) *string { return &r.TrialID }),
	str("step", func(r *ProcessRow) *string { return &r.Step }),
	f64("t_s", func(r *ProcessRow) *float64 { return &r.TS }),
	str("process", func(r *ProcessRow) *string { return &r.Process }),
	i64("pid", func(r *ProcessRow) *int64 { return &r.PID }),
	str("role", func(r *ProcessRow) *string { return &r.Role }),
	f64("cpu_pct", func(r *ProcessRow) *float64 { return &r.CPUPct }),
	f64("user_pct", func(r *ProcessRow) *float64 { return &r.UserPct }),
	f64("system_pct", func(r *ProcessRow) *float64 { return &r.SystemPct }),
	i64("rss_bytes", func(r *ProcessRow) *int64 { return &r.RSSBytes }),
	i64("threads", func(r *ProcessRow) *int64 { return &r.Threads }),
	i64("ctx_switches_voluntary", func(r *ProcessRow) *int64 { return &r.CtxSwitchesVoluntary }),
	i64("ctx_switches_nonvoluntary", func(r *ProcessRow) *int64 { return &r.CtxSwitchesNonvoluntary }),
	str("container", func(r *ProcessRow) *string { return &r.Container }),
	boolean("outside_run", func(r *ProcessRow) *bool { return &r.OutsideRun }),
	str("host", func(r *ProcessRow) *string { return &r.Host }),
}

var systemColumns = []column[SystemRow]{
	str("run_id", func(r *SystemRow) *string { return &r.RunID }),
	str("trial_id", func(r *SystemRow) *string { return &r.TrialID }),
	str("step", func(r *SystemRow) *string { return &r.Step }),
	f64("t_s", func(r *SystemRow) *float64 { return &r.TS }),
	f64("user_pct", func(r *SystemRow) *float64 { return &r.UserPct }),
	f64("nice_pct", func(r *SystemRow) *float64 { return &r.NicePct }),
	f64("system_pct", func(r *SystemRow) *float64 { return &r.SystemPct }),
	f64("idle_pct", func(r *SystemRow) *float64 { return &r.IdlePct }),
	f64("iowait_pct", func(r *SystemRow) *float64 { return &r.IOWaitPct }),
	f64("irq_pct", func(r *SystemRow) *float64 { return &r.IRQPct }),
	f64("softirq_pct", func(r *SystemRow) *float64 { return &r.SoftIRQPct }),
	f64("steal_pct", func(r *SystemRow) *float64 { return &r.StealPct }),
	str("host", func(r *SystemRow) *string { return &r.Host }),
}

var networkColumns = []column[NetworkRow]{
	str("run_id", func(r *NetworkRow) *string { return &r.RunID }),
	str("trial_id", func(r *NetworkRow) *string { return &r.TrialID }),
	str("step", func(r *NetworkRow) *string { return &r.Step }),
	f64("t_s", func(r *NetworkRow) *float64 { return &r.TS }),
	str("interface", func(r *NetworkRow) *string { return &r.Interface }),
	i64("rx_bytes", func(r *NetworkRow) *int64 { return &r.RxBytes }),
	i64("tx_bytes", func(r *NetworkRow) *int64 { return &r.TxBytes }),
	i64("rx_packets", func(r *NetworkRow) *int64 { return &r.RxPackets }),
	i64("tx_packets", func(r *NetworkRow) *int64 { return &r.TxPackets }),
	str("host", func(r *NetworkRow) *string { return &r.Host }),
}

// Param value kinds (the type of a param_<axis> column).
const (
	kindString = "string"
	kindInt    = "int64"
	kindFloat  = "float64"
	kindBool   = "bool"
)

// axis is one matrix axis as a typed param_<axis> column.
type axis struct {
	Name string
	Kind string
}

// ParamColumn is the column name of a matrix axis in trials.parquet.
func ParamColumn(axisName string) string { return "param_" + axisName }

// normParam converts a param value to its column kind and canonical Go
// type (string, int64, float64, bool).
func normParam(v any) (any, string, error) {
	switch x := v.(type) {
	case string:
		return x, kindString, nil
	case bool:
		return x, kindBool, nil
	case int:
		return int64(x), kindInt, nil
	case int32:
		return int64(x), kindInt, nil
	case int64:
		return x, kindInt, nil
	case uint:
		return int64(x), kindInt, nil
	case uint32:
		return int64(x), kindInt, nil
	case float32:
		return float64(x), kindFloat, nil
	case float64:
		return x, kindFloat, nil
	default:
		return nil, "", fmt.Errorf("unsupported param type %T (want string, int64, float64 or bool)", v)
	}
}

func paramColumn(a axis) column[TrialRow] {
	find := func(r *TrialRow) *Param {
		for i := range r.Params {
			if r.Params[i].Name == a.Name {
				return &r.Params[i]
			}
		}
		return nil
	}
	var typ arrow.DataType
	switch a.Kind {
	case kindInt:
		typ = arrow.PrimitiveTypes.Int64
	case kindFloat:
		typ = arrow.PrimitiveTypes.Float64
	case kindBool:
		typ = arrow.FixedWidthTypes.Boolean
	default:
		typ = arrow.BinaryTypes.String
	}
	return column[TrialRow]{ParamColumn(a.Name), typ,
		func(b array.Builder, rows []TrialRow) {
			for i := range rows {
				p := find(&rows[i])
				if p == nil || p.Value == nil {
					b.AppendNull()
					continue
				}
				switch b := b.(type) {
				case *array.Int64Builder:
					b.Append(p.Value.(int64))
				case *array.Float64Builder:
					b.Append(p.Value.(float64))
				case *array.BooleanBuilder:
					b.Append(p.Value.(bool))
				case *array.StringBuilder:
					b.Append(fmt.Sprint(p.Value))
				}
			}
		},
		func(arr arrow.Array, rows []TrialRow) {
			for i := range rows {
				if arr.IsNull(i) {
					continue
				}
				var v any
				switch arr := arr.(type) {
				case *array.Int64:
					v = arr.Value(i)
				case *array.Float64:
					v = arr.Value(i)
				case *array.Boolean:
					v = arr.Value(i)
				case *array.String:
					v = strings.Clone(arr.Value(i))
				case *array.LargeString:
					v = strings.Clone(arr.Value(i))
				default:
					return
				}
				rows[i].Params = append(rows[i].Params, Param{Name: a.Name, Value: v})
			}
		}, nil}
}

func kindOf(t arrow.DataType) string {
	switch t.ID() {
	case arrow.INT64:
		return kindInt
	case arrow.FLOAT64:
		return kindFloat
	case arrow.BOOL:
		return kindBool
	default:
		return kindString
	}
}

// TrialNumber reads the numeric trials column name (int64 or float64) of a
// row as a float64; nil for a column that is not numeric or not there.
// Claims (engine/claims names the columns a claim may read) and the report
// read trials columns by name through it.
func TrialNumber(name string) func(*TrialRow) float64 {
	for _, c := range trialColumnsHead {
		if c.name == name {
			return c.num
		}
	}
	for _, c := range trialColumnsTail {
		if c.name == name {
			return c.num
		}
	}
	return nil
}

func trialColumns(axes []axis) []column[TrialRow] {
	cols := make([]column[TrialRow], 0, len(trialColumnsHead)+len(axes)+len(trialColumnsTail))
	cols = append(cols, trialColumnsHead...)
	for _, a := range axes {
		cols = append(cols, paramColumn(a))
	}
	return append(cols, trialColumnsTail...)
}

func schemaOf[R any](cols []column[R]) *arrow.Schema {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
	}
	md := arrow.NewMetadata([]string{MetadataKeySchemaVersion}, []string{SchemaVersion})
	return arrow.NewSchema(fields, &md)
}
