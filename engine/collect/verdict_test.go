package collect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

// verdictCase is one file of testdata/verdicts: the averaged samples of a
// load (system.parquet's split, the processes' mean CPU) and the verdict
// the rules must reach.
type verdictCase struct {
	About  string `json:"about"`
	CPUs   int    `json:"cpus"`
	System struct {
		User    float64 `json:"user_pct"`
		Nice    float64 `json:"nice_pct"`
		System  float64 `json:"system_pct"`
		Idle    float64 `json:"idle_pct"`
		IOWait  float64 `json:"iowait_pct"`
		IRQ     float64 `json:"irq_pct"`
		SoftIRQ float64 `json:"softirq_pct"`
		Steal   float64 `json:"steal_pct"`
	} `json:"system"`
	Processes []ProcCPU `json:"processes"`
	// Unlisted is the CPU per role of processes each below the listing
	// threshold: in the budget, in no entry.
	Unlisted map[string]float64                 `json:"unlisted"`
	Load     LoadInfo                           `json:"load"`
	Quiet    *results.QuietCheck                `json:"quiet"`
	Expect   struct{ Verdict, Evidence string } `json:"expect"`
}

// TestVerdicts decides the verdict of every recorded case with the same
// budget arithmetic the sampler uses.
func TestVerdicts(t *testing.T) {
	files, err := filepath.Glob("testdata/verdicts/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no verdict cases: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c verdictCase
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			sp := c.System
			if sum := sp.User + sp.Nice + sp.System + sp.Idle + sp.IOWait + sp.IRQ + sp.SoftIRQ + sp.Steal; sum < 99.9 || sum > 100.1 {
				t.Fatalf("%s: system split adds up to %.1f, not 100", f, sum)
			}
			roles := map[string]float64{}
			for _, p := range c.Processes {
				roles[p.Role] += p.CPUPct + p.ChildrenPct
			}
			for r, v := range c.Unlisted {
				roles[r] += v
			}
			budget := BudgetFrom(c.CPUs, results.SystemSample{UserPct: sp.User, NicePct: sp.Nice, SystemPct: sp.System,
				IdlePct: sp.Idle, IOWaitPct: sp.IOWait, IRQPct: sp.IRQ, SoftIRQPct: sp.SoftIRQ, StealPct: sp.Steal}, roles)
			v := Judge(Evidence{Budget: budget, Procs: c.Processes, Load: c.Load, Quiet: c.Quiet})
			if v.Kind != c.Expect.Verdict || v.Evidence != c.Expect.Evidence {
				t.Errorf("%s (%s):\n got  %s\n want %s (%s)\nbudget %+v", f, c.About, v, c.Expect.Verdict, c.Expect.Evidence, budget)
			}
			seen[v.Kind] = true
		})
	}
	for _, k := range []string{VerdictServer, VerdictInfra, VerdictLoader, VerdictNotCPU, VerdictNoisy} {
		if !seen[k] {
			t.Errorf("no case reaches %q", k)
		}
	}
}

// TestBudgetAddsUp: whatever the inputs, the parts add up to the total.
func TestBudgetAddsUp(t *testing.T) {
	split := results.SystemSample{UserPct: 31.5, NicePct: 0.5, SystemPct: 20, IdlePct: 40, IOWaitPct: 1, IRQPct: 0.5, SoftIRQPct: 4.5, StealPct: 2}
	roles := map[string]float64{RoleLoader: 40.2, RoleService: 55.1, RoleInfra: 12.3, RoleKernel: 3.3, RoleOther: 7.7}
	b := BudgetFrom(2, split, roles)
	sum := 0.0
	for _, p := range BudgetParts(b) {
		sum += p.Pct
	}
	if b.TotalPct != 200 || sum < 199.999999 || sum > 200.000001 {
		t.Errorf("total %v, parts add up to %v: %+v", b.TotalPct, sum, b)
	}
	if b.IdlePct != 82 || b.StealPct != 4 {
		t.Errorf("idle %v (want 82 = (40+1)%% of 200), steal %v (want 4)", b.IdlePct, b.StealPct)
	}
	// Naively 200 − (40.2+55.1+12.3+3.3+10+7.7+82+4) = −14.6: the processes
	// absorbed the whole 10% of irq+softirq (tick accounting), which is then
	// counted once, in them, leaving −4.6 to the tick's wobble: taken from
	// the roles in proportion (no reaped children here), so that no part
	// is negative and the processes make up the busy time, 114.
	near := func(got, want float64) bool { return got > want-1e-6 && got < want+1e-6 }
	f := 114 / 118.6
	if !near(b.IRQInProcessesPct, 10) || !near(b.KernelPct, 3.3*f) || !near(b.UnattributedPct, 0) || !near(b.LoaderPct, 40.2*f) {
		t.Errorf("irq in processes %v (want 10), kernel %v (want %v), loader %v (want %v), unattributed %v (want 0)", b.IRQInProcessesPct, b.KernelPct, 3.3*f, b.LoaderPct, 40.2*f, b.UnattributedPct)
	}

	// Part of the interrupt time inside the processes: only that part moves.
	roles[RoleService] = 55.1 - 8.6 // naive remainder −6
	b = BudgetFrom(2, split, roles)
	if !near(b.IRQInProcessesPct, 6) || !near(b.KernelPct, 3.3+4) || !near(b.UnattributedPct, 0) {
		t.Errorf("partial overlap: irq in processes %v (want 6), kernel %v (want 7.3), unattributed %v (want 0)", b.IRQInProcessesPct, b.KernelPct, b.UnattributedPct)
	}

	// A positive remainder (short-lived processes) keeps all interrupt time
	// in the kernel's part.
	roles[RoleService] = 55.1 - 16.7 // naive remainder +2.1
	b = BudgetFrom(2, split, roles)
	if b.IRQInProcessesPct != 0 || !near(b.KernelPct, 13.3) || !near(b.UnattributedPct, 2.1) {
		t.Errorf("no overlap: irq in processes %v (want 0), kernel %v (want 13.3), unattributed %v (want 2.1)", b.IRQInProcessesPct, b.KernelPct, b.UnattributedPct)
	}
	for _, bb := range []results.CPUBudget{b} {
		sum := 0.0
		for _, p := range BudgetParts(bb) {
			sum += p.Pct
		}
		if !near(sum, 200) {
			t.Errorf("parts add up to %v", sum)
		}
	}
}
