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
	return BudgetFromParts(ncpu, split, roles, nil)
}

// BudgetTolerancePct is how far the parts of a budget may add up from
// TotalPct (percent of one core): floating-point rounding only.
const BudgetTolerancePct = 0.01

// BudgetFromParts is BudgetFrom with, per role, the part of its CPU that
// came from children no sample saw (reaped: credited to the process that
// reaped them, counted in roles too). Every part is in [0, TotalPct] and
// the parts add up to TotalPct (within BudgetTolerancePct): when the
// processes add up to more than the busy time of /proc/stat, even once
// the interrupt time they absorbed is counted (IRQInProcessesPct), the
// excess is taken from the reaped children first (the CPU of a child that
// ran partly before the window and ended inside it), then from every role
// in proportion; UnattributedPct is never negative.
func BudgetFromParts(ncpu int, split results.SystemSample, roles, reaped map[string]float64) results.CPUBudget {
	total := float64(ncpu) * 100
	share := func(pct float64) float64 { return clampPct(pct/100*total, total) }
	role := func(r string) float64 { return clampPct(roles[r], total) }
	b := results.CPUBudget{
		TotalPct:   total,
		LoaderPct:  role(RoleLoader),
		ServicePct: role(RoleService),
		InfraPct:   role(RoleInfra),
		KernelPct:  role(RoleKernel),
		OtherPct:   role(RoleOther),
		IdlePct:    share(split.IdlePct + split.IOWaitPct),
		StealPct:   share(split.StealPct),
	}
	b.StealPct = min(b.StealPct, total-b.IdlePct)
	busy := total - b.IdlePct - b.StealPct
	irq := min(share(split.IRQPct+split.SoftIRQPct), busy)
	parts := []*float64{&b.LoaderPct, &b.ServicePct, &b.InfraPct, &b.KernelPct, &b.OtherPct}
	names := []string{RoleLoader, RoleService, RoleInfra, RoleKernel, RoleOther}
	sum := func() float64 {
		t := 0.0
		for _, p := range parts {
			t += *p
		}
		return t
	}
	raw := busy - sum() - irq
	if raw < 0 {
		b.IRQInProcessesPct = min(irq, -raw)
		raw += b.IRQInProcessesPct
	}
	if raw < 0 {
		// The processes account for more than the machine was busy:
		// first the reaped children's share, then every role alike.
		excess := -raw
		kids := 0.0
		for i, n := range names {
			kids += min(clampPct(reaped[n], total), *parts[i])
		}
		if kids > 0 {
			cut := min(excess, kids)
			for i, n := range names {
				k := min(clampPct(reaped[n], total), *parts[i])
				*parts[i] -= cut * k / kids
			}
			excess -= cut
		}
		if s := sum(); excess > 0 && s > 0 {
			f := max(0, (s-excess)/s)
			for _, p := range parts {
				*p *= f
			}
		}
		raw = 0
	}
	b.KernelPct += irq - b.IRQInProcessesPct
	for _, p := range parts {
		*p = max(0, *p) // rounding
	}
	b.UnattributedPct = max(0, raw)
	return b
}

// clampPct bounds a share to [0, total]; NaN is 0.
func clampPct(v, total float64) float64 {
	if !(v > 0) {
		return 0
	}
	return min(v, total)
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
