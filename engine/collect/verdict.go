package collect

import (
	"fmt"
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/results"
)

// Verdict kinds (docs/collect.md, "Verdict rules").
const (
	VerdictNoisy   = "noisy"
	VerdictLoader  = "loader-bound"
	VerdictServer  = "server-bound"
	VerdictInfra   = "infrastructure-bound"
	VerdictNotCPU  = "not CPU-bound"
	VerdictUnclear = "undetermined"
)

// Thresholds of the verdict rules, in percent.
const (
	// NoisyPct: processes outside the run using this much of one core
	// during the load make it noisy.
	NoisyPct = 20.0
	// NoisyUnattributedPct: this much of one core unattributed (processes
	// that lived less than a sampling interval: a build, a script) makes
	// the load noisy too.
	NoisyUnattributedPct = 40.0
	// SaturatedIdlePct: the machine counts as CPU-saturated when less
	// than this share of it was idle.
	SaturatedIdlePct = 10.0
	// CorePct: a thread at this much of one core is saturated.
	CorePct = 90.0
	// LoaderSaturatedPct: the loader at this share of the cores it may use
	// is saturated.
	LoaderSaturatedPct = 90.0
	// NotCPUIdlePct: at least this share of the machine idle in a closed
	// loop means the load waited on something else than CPU.
	NotCPUIdlePct = 25.0
)

// LoadInfo is what the verdict needs of the load itself.
type LoadInfo struct {
	TargetRate  float64 `json:"target_rate"` // req/s; 0 for a closed loop
	RPS         float64 `json:"rps"`
	RateWarning string  `json:"rate_warning,omitempty"`
	// LagP99US is the open-loop lag: corrected minus uncorrected p99 (µs).
	LagP99US float64 `json:"lag_p99_us,omitempty"`
	// LoaderCPUs is how many CPUs the loader may use (GOMAXPROCS within
	// its affinity); 0 means all.
	LoaderCPUs int `json:"loader_cpus,omitempty"`
}

// Evidence is everything a verdict is decided from.
type Evidence struct {
	Budget results.CPUBudget   `json:"budget"`
	Procs  []ProcCPU           `json:"processes"`
	Load   LoadInfo            `json:"load"`
	Quiet  *results.QuietCheck `json:"quiet,omitempty"`
}

// Verdict names what limited a load and the numbers that say so.
type Verdict struct {
	Kind     string `json:"verdict"`
	Evidence string `json:"evidence"`
}

// String is "kind (evidence)".
func (v Verdict) String() string {
	if v.Evidence == "" {
		return v.Kind
	}
	return v.Kind + " (" + v.Evidence + ")"
}

// Judge applies the verdict rules, in order (the first that holds wins):
//
//  1. noisy: the quiet check flagged a busy start, or processes outside
//     the run (role other) used NoisyPct of a core or more during the load,
//     or NoisyUnattributedPct of a core is unattributed;
//  2. loader-bound: the loader used LoaderSaturatedPct of the cores it may
//     use, or an open loop fell short of its rate while the loader used the
//     most CPU of loader, service and infrastructure;
//  3. machine saturated (idle below SaturatedIdlePct of the machine): the
//     biggest of service, infrastructure and loader names the verdict;
//  4. a service thread at CorePct of a core: server-bound; an
//     infrastructure process with one thread at CorePct: infrastructure-bound;
//     infrastructure using more CPU than the service and the loader
//     together while less than NotCPUIdlePct of the machine was idle:
//     infrastructure-bound (the proxies, shims and filesystems a variant
//     adds took most of a nearly busy machine);
//  5. closed loop with NotCPUIdlePct of the machine idle: not CPU-bound,
//     naming the busiest infrastructure or other process (the top waiter);
//     an open loop that met its rate: not CPU-bound;
//  6. otherwise undetermined, with the budget as evidence.
func Judge(e Evidence) Verdict {
	b := e.Budget
	if b.TotalPct <= 0 {
		return Verdict{Kind: VerdictUnclear, Evidence: "no CPU accounting"}
	}
	machinePct := func(v float64) float64 { return v / b.TotalPct * 100 }
	idle := machinePct(b.IdlePct)
	byRole := func(role string) []ProcCPU {
		var out []ProcCPU
		for _, p := range e.Procs {
			if p.Role == role {
				out = append(out, p)
			}
		}
		return out
	}
	top := func(role string, n int) string { return topNames(byRole(role), n) }

	// 1. noisy
	if q := e.Quiet; q != nil && q.Busy {
		ev := fmt.Sprintf("other processes used %s of a core in the %.1f s before the load", fmtPct(q.OtherPct), q.WindowS)
		if q.Top != "" {
			ev += ": " + q.Top
		}
		return Verdict{VerdictNoisy, ev}
	}
	if b.OtherPct >= NoisyPct {
		ev := fmt.Sprintf("other processes used %s of a core during the load", fmtPct(b.OtherPct))
		if t := partsOf(byRole(RoleOther), b.OtherPct, 3); t != "" {
			ev += ": " + t
		}
		return Verdict{VerdictNoisy, ev}
	}
	if b.UnattributedPct >= NoisyUnattributedPct {
		return Verdict{VerdictNoisy, fmt.Sprintf("%s of a core went to processes no sample saw (shorter than one interval: a build, a script)", fmtPct(b.UnattributedPct))}
	}

	// 2. loader-bound
	cpus := float64(b.TotalPct / 100)
	if e.Load.LoaderCPUs > 0 && float64(e.Load.LoaderCPUs) < cpus {
		cpus = float64(e.Load.LoaderCPUs)
	}
	loaderShare := b.LoaderPct / (cpus * 100) * 100
	openShort := e.Load.TargetRate > 0 && e.Load.RateWarning != ""
	lag := ""
	if e.Load.TargetRate > 0 && e.Load.LagP99US > 0 {
		lag = fmt.Sprintf("; open-loop lag p99 %s", fmtDurUS(e.Load.LagP99US))
	}
	if loaderShare >= LoaderSaturatedPct {
		return Verdict{VerdictLoader, fmt.Sprintf("loader at %.0f%% of its %s%s", loaderShare, plural(cpus, "CPU"), lag)}
	}
	biggest := RoleService
	if b.InfraPct > b.ServicePct {
		biggest = RoleInfra
	}
	if b.LoaderPct > max(b.ServicePct, b.InfraPct) {
		biggest = RoleLoader
	}
	if openShort && biggest == RoleLoader {
		return Verdict{VerdictLoader, fmt.Sprintf("open loop short of its rate (%s) and the loader used the most CPU, %s%s", e.Load.RateWarning, fmtPct(b.LoaderPct), lag)}
	}

	// 3. machine saturated
	if idle < SaturatedIdlePct {
		split := fmt.Sprintf("service %s, infra %s, loader %s of %s; idle %.0f%%", fmtPct(b.ServicePct), fmtPct(b.InfraPct), fmtPct(b.LoaderPct), fmtPct(b.TotalPct), idle)
		switch biggest {
		case RoleLoader:
			return Verdict{VerdictLoader, "machine saturated, the loader used the most: " + split}
		case RoleInfra:
			return Verdict{VerdictInfra, withTop(top(RoleInfra, 2), split)}
		default:
			return Verdict{VerdictServer, withTop(top(RoleService, 2), split)}
		}
	}

	// 4. one saturated thread
	for _, p := range byRole(RoleService) {
		hot := p.HotThreadPct
		if p.Threads == 1 {
			hot = max(hot, p.CPUPct)
		}
		if hot >= CorePct {
			if p.Threads <= 1 {
				return Verdict{VerdictServer, fmt.Sprintf("%s pid %d at %s of a core, 1 thread", p.Process, p.PID, fmtPct(hot))}
			}
			return Verdict{VerdictServer, fmt.Sprintf("%s pid %d: busiest thread at %s of a core", p.Process, p.PID, fmtPct(hot))}
		}
	}
	for _, p := range byRole(RoleInfra) {
		if p.Threads == 1 && p.CPUPct >= CorePct {
			return Verdict{VerdictInfra, fmt.Sprintf("%s pid %d at %s of a core, 1 thread", p.Process, p.PID, fmtPct(p.CPUPct))}
		}
	}

	if idle < NotCPUIdlePct && b.InfraPct > b.ServicePct+b.LoaderPct {
		split := fmt.Sprintf("service %s, infra %s, loader %s of %s; idle %.0f%%", fmtPct(b.ServicePct), fmtPct(b.InfraPct), fmtPct(b.LoaderPct), fmtPct(b.TotalPct), idle)
		return Verdict{VerdictInfra, withTop(top(RoleInfra, 2), "infra above service and loader together: "+split)}
	}

	// 5. idle
	if e.Load.TargetRate == 0 && idle >= NotCPUIdlePct {
		ev := fmt.Sprintf("%.0f%% idle while closed-loop: waiting on something", idle)
		waiters := append(byRole(RoleInfra), byRole(RoleOther)...)
		sort.SliceStable(waiters, func(i, j int) bool { return waiters[i].CPUPct > waiters[j].CPUPct })
		if len(waiters) > 0 {
			ev += fmt.Sprintf(" — top waiter %s %s", waiters[0].Label(), fmtPct(waiters[0].CPUPct))
		}
		return Verdict{VerdictNotCPU, ev}
	}
	if e.Load.TargetRate > 0 && !openShort {
		return Verdict{VerdictNotCPU, fmt.Sprintf("open loop met its rate of %.0f req/s; %.0f%% idle", e.Load.TargetRate, idle)}
	}

	// 6. undetermined
	return Verdict{VerdictUnclear, fmt.Sprintf("service %s, infra %s, loader %s, kernel %s of %s; idle %.0f%%",
		fmtPct(b.ServicePct), fmtPct(b.InfraPct), fmtPct(b.LoaderPct), fmtPct(b.KernelPct), fmtPct(b.TotalPct), idle)}
}

// partsOf lists what makes up a role's share of the budget (total, % of
// one core) from its processes: the n busiest names (another's processes
// each by name, pid and command line: ProcCPU.Label), each with the CPU of
// its children that ended between samples (which the budget counts with
// the parent that reaped them), the other listed processes as "N more",
// and the remainder, the processes each below the listing threshold, so
// the parts add up to total: "make 88% (86% in children that ended
// between samples), sh 3.1%, 2 more 1.4%; 0.5% in processes each below
// the listing threshold".
func partsOf(ps []ProcCPU, total float64, n int) string {
	by := map[string]int{}
	var parts []namePart
	listed := 0.0
	for _, p := range ps {
		l := p.Label()
		i, ok := by[l]
		if !ok {
			i = len(parts)
			by[l] = i
			parts = append(parts, namePart{name: l})
		}
		parts[i].own += p.CPUPct
		parts[i].kids += p.ChildrenPct
		parts[i].count++
		listed += p.CPUPct + p.ChildrenPct
	}
	res := listParts(parts, n, "between samples")
	if rest := total - listed; rest >= 0.05 {
		if res != "" {
			res += "; "
		}
		res += fmt.Sprintf("%s in processes each below the listing threshold", fmtPct(rest))
	}
	return res
}

// topNames lists the n busiest names ("docker-proxy 118%, dockerd 29%"),
// pids of one name added up.
func topNames(ps []ProcCPU, n int) string {
	sum := map[string]float64{}
	for _, p := range ps {
		sum[p.Process] += p.CPUPct
	}
	cs := make([]ProcessCPU, 0, len(sum))
	for name, v := range sum {
		cs = append(cs, ProcessCPU{Process: name, CPUPct: v})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].CPUPct != cs[j].CPUPct {
			return cs[i].CPUPct > cs[j].CPUPct
		}
		return cs[i].Process < cs[j].Process
	})
	if len(cs) > n {
		cs = cs[:n]
	}
	return FormatSummary(cs)
}

func withTop(top, rest string) string {
	if top == "" {
		return rest
	}
	return top + "; " + rest
}

func plural(n float64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", n), ".0") + " " + unit + "s"
}

func fmtDurUS(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.0f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
