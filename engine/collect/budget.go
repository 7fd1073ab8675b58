package collect

import "github.com/benchflow/benchflow/engine/results"

// BudgetFrom builds the CPU budget of a load from the machine's CPU split
// over the load (percent of all CPUs, the columns of system.parquet) and
// the CPU of the processes per role (percent of one core, keyed by
// RoleLoader, RoleService, RoleInfra, RoleKernel for kernel threads and
// RoleOther). Everything is converted to percent of one core; TotalPct is
// 100 × ncpu, and UnattributedPct is what makes the parts add up to it:
// the busy time of /proc/stat that no sampled process accounts for
// (processes that lived less than one interval, the last interval of
// exited ones, rounding).
//
// On kernels with tick-based CPU accounting (no CONFIG_IRQ_TIME_ACCOUNTING,
// the common case) a tick that lands in an interrupt or softirq is counted
// twice: in /proc/stat's irq/softirq and in the stime of the process it
// interrupted. The processes' sum then exceeds the busy time, and the raw
// remainder is negative by about the interrupt time they absorbed. That
// overlap, at most the irq+softirq time, is counted once, in the processes:
// it is taken out of KernelPct (which keeps kernel threads and the interrupt
// time no process was charged with, e.g. softirqs that ran while the CPU was
// idle) and recorded in IRQInProcessesPct.
func BudgetFrom(ncpu int, split results.SystemSample, roles map[string]float64) results.CPUBudget {
	total := float64(ncpu) * 100
	share := func(pct float64) float64 { return pct / 100 * total }
	b := results.CPUBudget{
		TotalPct:   total,
		LoaderPct:  roles[RoleLoader],
		ServicePct: roles[RoleService],
		InfraPct:   roles[RoleInfra],
		KernelPct:  roles[RoleKernel],
		OtherPct:   roles[RoleOther],
		IdlePct:    share(split.IdlePct + split.IOWaitPct),
		StealPct:   share(split.StealPct),
	}
	irq := share(split.IRQPct + split.SoftIRQPct)
	raw := total - (b.LoaderPct + b.ServicePct + b.InfraPct + b.KernelPct + irq + b.OtherPct + b.IdlePct + b.StealPct)
	if raw < 0 {
		b.IRQInProcessesPct = min(irq, -raw)
	}
	b.KernelPct += irq - b.IRQInProcessesPct
	b.UnattributedPct = raw + b.IRQInProcessesPct
	return b
}

// BudgetParts lists a budget's parts in the order reports stack them,
// with their names; they add up to TotalPct.
func BudgetParts(b results.CPUBudget) []BudgetPart {
	return []BudgetPart{
		{"loader", b.LoaderPct}, {"service", b.ServicePct}, {"infra", b.InfraPct},
		{"kernel", b.KernelPct}, {"other", b.OtherPct}, {"unattributed", b.UnattributedPct},
		{"idle", b.IdlePct}, {"steal", b.StealPct},
	}
}

// BudgetPart is one part of a CPU budget, in percent of one core.
type BudgetPart struct {
	Name string
	Pct  float64
}
