package results

import (
	"time"

	"github.com/benchflow/benchflow/engine/measure"
)

// TrialRecord is everything one finished (or failed, or interrupted) trial
// produced. The executor hands it to Writer.CommitTrial when the trial ends.
type TrialRecord struct {
	TrialID    string
	Index      int // 0-based position in execution order
	Repetition int // 1-based
	// Attempt is 1 for a trial's first run and counts its re-runs
	// (pipeline busy_rerun); Discarded says why an attempt was left out
	// of the estimates ("busy start: …", "noisy: …"), "" for the attempt
	// that counts. A discarded attempt is committed under its own id
	// (the trial's id plus "-a<attempt>"), the attempt that counts under
	// the trial's.
	Attempt   int
	Discarded string
	Params    []Param
	// Provider is the provider name (or "type.name" list joined by ",")
	// that deployed the trial's services.
	Provider   string
	Status     string // StatusOK, StatusFailed, StatusInterrupted, StatusSkipped
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
	Steps      []StepRecord
	Processes  []ProcessSample
	System     []SystemSample
	Network    []NetSample
	// ServiceVersions maps service name to the output of its
	// version_command (first line), when given.
	ServiceVersions map[string]string
	// Services describes where each service ran in this trial (recorded
	// in manifest.json).
	Services []ServiceEntry
}

// ServiceEntry is one provisioned service of a trial: its provider, its
// URL and the attributes the provider exposed (container id, Nomad job,
// allocation addresses, Kubernetes namespace, …).
type ServiceEntry struct {
	Name     string            `json:"name"`
	Provider string            `json:"provider"`
	Type     string            `json:"type"`
	URL      string            `json:"url,omitempty"`
	Attrs    map[string]string `json:"attrs,omitempty"`
	Reused   bool              `json:"reused,omitempty"`
	// Versions are the platform's versions as the provider reports them
	// (providers.VersionReporter: Kubernetes server, Nomad client, …).
	Versions map[string]string `json:"versions,omitempty"`
}

// Trial statuses.
const (
	StatusOK          = "ok"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	StatusSkipped     = "skipped"
	StatusPending     = "pending"
)

// Param is one matrix axis value of a trial. Value is string, int64,
// float64 or bool, the same Go type for every trial of an axis.
type Param struct {
	Name  string
	Value any
}

// StepRecord is the measurement of one load or warm step.
type StepRecord struct {
	Name   string // step name ("wrk")
	Kind   string // "load" or "warm"
	Status string
	Error  string
	Result *measure.Record // nil when the step failed before measuring
	// CPU is where the machine's CPU went during the step, from the
	// whole-machine accounting of a collect step that ran during it (nil
	// when none did).
	CPU *CPUBudget
	// Verdict names what limited the step ("server-bound", …) and
	// VerdictEvidence the numbers behind it; both empty without CPU.
	Verdict         string
	VerdictEvidence string
	// VerdictHost is the machine the verdict names as the limit (its host
	// column value) when the load was sampled on several machines (ssh
	// hosts); empty otherwise.
	VerdictHost string
	// Quiet is the machine quiet check taken just before the step's load
	// (nil when none was taken).
	Quiet *QuietCheck
	// Capacity is the result of a capacity search (a load step with a
	// search block); Result is then the probe at the capacity's rate.
	Capacity *measure.Capacity
	// Agents are the agents that ran the step (an agents block), in index
	// order; Result is then their merged result. Empty for a step run in
	// the benchflow process.
	Agents []AgentRecord
}

// CPUBudget is where the machine's CPU went during one load, in percent
// of one core (100 = one core busy), averaged over the load. The parts add
// up to TotalPct (100 × the CPUs of the machine).
type CPUBudget struct {
	TotalPct        float64 `json:"total_pct"`        // 100 × CPUs
	LoaderPct       float64 `json:"loader_pct"`       // benchflow itself (the load generator)
	ServicePct      float64 `json:"service_pct"`      // the services' processes
	InfraPct        float64 `json:"infra_pct"`        // container engines, proxies, agents, …
	KernelPct       float64 `json:"kernel_pct"`       // kernel threads, plus irq and softirq time not charged to a process
	OtherPct        float64 `json:"other_pct"`        // every other process
	IdlePct         float64 `json:"idle_pct"`         // idle and iowait
	StealPct        float64 `json:"steal_pct"`        // taken by the hypervisor
	UnattributedPct float64 `json:"unattributed_pct"` // busy time no sampled process accounts for (see docs/collect.md)
	// IRQInProcessesPct is not a part: the irq/softirq time of /proc/stat
	// that the kernel also charged to the interrupted processes (tick-based
	// accounting), counted once, inside their roles, and not in KernelPct.
	IRQInProcessesPct float64 `json:"irq_in_processes_pct,omitempty"`
}

// QuietCheck is the CPU used by processes outside the run in a short
// window before a load.
type QuietCheck struct {
	WindowS  float64 `json:"window_s"`      // seconds observed
	OtherPct float64 `json:"other_pct"`     // CPU of processes outside the run, % of one core
	Top      string  `json:"top,omitempty"` // what adds up to OtherPct ("go 85%, 2 more 1.0%"), when any
	Busy     bool    `json:"busy"`          // OtherPct at or above the busy threshold
	// LoadAvg is the 1-minute load average (/proc/loadavg) at the end of
	// the window, just before the load: 0 when unreadable.
	LoadAvg float64 `json:"load_avg,omitempty"`
}

// ProcessSample is one sample of one process during a collect step.
type ProcessSample struct {
	Step                    string  // the collect step's name
	T                       float64 // seconds since the load started
	Process                 string
	PID                     int
	Role                    string  // "service", "infra", "loader", "named", "kernel", "other"
	CPUPct                  float64 // user+system, 100 = one core
	UserPct                 float64
	SystemPct               float64
	RSSBytes                int64
	Threads                 int64
	CtxSwitchesVoluntary    int64 // since the previous sample
	CtxSwitchesNonvoluntary int64
	// Container names the container the process runs in
	// ("docker:0123456789ab"), "" on the host.
	Container string
	// OutsideRun marks a process a collect step's `processes` matched by
	// name that the run did not start (role "named"; docs/collect.md,
	// "Whose process is it"): another's process of the same name.
	OutsideRun bool
	// Host is the machine the process ran on (docs/results.md, the host
	// column): this machine's hostname, or an ssh host's address.
	Host string
}

// SystemSample is one sample of /proc/stat (percent of all CPUs).
type SystemSample struct {
	Step       string
	T          float64
	UserPct    float64
	NicePct    float64
	SystemPct  float64
	IdlePct    float64
	IOWaitPct  float64
	IRQPct     float64
	SoftIRQPct float64
	StealPct   float64
	Host       string // the machine sampled, as ProcessSample.Host
}

// NetSample is one sample of one interface from /proc/net/dev (deltas since
// the previous sample).
type NetSample struct {
	Step      string
	T         float64
	Interface string
	RxBytes   int64
	TxBytes   int64
	RxPackets int64
	TxPackets int64
	Host      string // the machine sampled, as ProcessSample.Host
}
