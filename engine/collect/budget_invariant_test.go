package collect

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// checkBudget fails unless every part of b is in [0, TotalPct] and the
// parts add up to TotalPct within BudgetTolerancePct.
func checkBudget(t *testing.T, what string, b results.CPUBudget) {
	t.Helper()
	sum := 0.0
	for _, p := range BudgetParts(b) {
		if !(p.Pct >= 0 && p.Pct <= b.TotalPct) {
			t.Errorf("%s: %s %.2f%% outside [0, %.0f]: %+v", what, p.Name, p.Pct, b.TotalPct, b)
		}
		sum += p.Pct
	}
	if math.Abs(sum-b.TotalPct) > BudgetTolerancePct {
		t.Errorf("%s: the parts add up to %.4f%%, not %.0f%%: %+v", what, sum, b.TotalPct, b)
	}
	if b.IRQInProcessesPct < 0 || b.IRQInProcessesPct > b.TotalPct {
		t.Errorf("%s: irq in processes %.2f%%", what, b.IRQInProcessesPct)
	}
}

// TestBudgetFromPartsInvariant: whatever the roles, the reaped children
// and the CPU split (random, including processes that add up to many
// times the machine), every part is possible and they add up.
func TestBudgetFromPartsInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(62, 1))
	roleNames := []string{RoleLoader, RoleService, RoleInfra, RoleKernel, RoleOther}
	for i := range 5000 {
		ncpu := 1 + rng.IntN(8)
		total := float64(ncpu) * 100
		idle := rng.Float64() * 100
		steal := rng.Float64() * (100 - idle) / 4
		irq := rng.Float64() * (100 - idle - steal) / 3
		split := results.SystemSample{IdlePct: idle, StealPct: steal, SoftIRQPct: irq, UserPct: 100 - idle - steal - irq}
		roles, reaped := map[string]float64{}, map[string]float64{}
		for _, r := range roleNames {
			scale := total
			if rng.IntN(4) == 0 {
				scale = total * 20 // a child's whole life credited to the window
			}
			roles[r] = rng.Float64() * scale / 3
			if rng.IntN(2) == 0 {
				reaped[r] = rng.Float64() * roles[r]
			}
		}
		b := BudgetFromParts(ncpu, split, roles, reaped)
		checkBudget(t, "case "+string(rune('0'+i%10)), b)
		if t.Failed() {
			t.Fatalf("roles %v reaped %v split %+v", roles, reaped, split)
		}
	}
}

// TestBudgetSyntheticTrees samples many random process trees on a fake
// /proc: processes born before and during the window, exiting and reaped
// by their parents (whose cutime grows by the child's whole life), and
// children no pass saw that ran long before the window and end inside it
// (the case that gave cpu_other_pct 1830 on 2 cores). Every budget part
// stays in [0, 100 × cores] and they add up.
func TestBudgetSyntheticTrees(t *testing.T) {
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 62))
		f := newFakeProc(t)
		self := &fakePID{pid: 10, ppid: 1, comm: "benchflow", start: 100}
		svc := &fakePID{pid: 11, ppid: 10, comm: "nginx", start: 100}
		all := []*fakePID{self, svc}
		alive := []*fakePID{self, svc}
		next := 100
		spawn := func(start uint64) *fakePID {
			parent := alive[rng.IntN(len(alive))]
			if rng.IntN(3) == 0 {
				parent = &fakePID{pid: 1}
			}
			p := &fakePID{pid: next, ppid: parent.pid, comm: []string{"make", "sh", "cc1", "go", "link"}[rng.IntN(5)], start: start}
			next++
			if start == 100 {
				p.utime = uint64(rng.IntN(3000)) // what it used before the window
			}
			all = append(all, p)
			alive = append(alive, p)
			return p
		}
		for range 5 + rng.IntN(10) {
			spawn(100)
		}
		s := f.sampler(10, func(context.Context) []providers.Process {
			return []providers.Process{{PID: 11, Name: "nginx", Role: RoleService}}
		})
		f.set(0, 0, all...)
		f.pass(s)
		byPID := func(pid int) *fakePID {
			for _, p := range alive {
				if p.pid == pid {
					return p
				}
			}
			return nil
		}
		for pass := range 3 + rng.IntN(6) {
			dt := 0.25 + rng.Float64()
			capacity := uint64(dt * 2 * clockTicks)
			var used uint64
			for _, p := range alive {
				u := uint64(rng.IntN(int(capacity/4) + 1))
				p.utime += u
				used += u
			}
			// Exits: the parent reaps the child's whole life.
			var still []*fakePID
			for _, p := range alive {
				if p != self && p != svc && rng.IntN(4) == 0 {
					p.removed = true
					if up := byPID(p.ppid); up != nil && !up.removed {
						up.cutime += p.utime + p.stime + p.cutime + p.cstime
					}
					continue
				}
				still = append(still, p)
			}
			alive = still
			// A child no pass saw, that ran long before the window.
			if rng.IntN(2) == 0 {
				p := alive[rng.IntN(len(alive))]
				p.cutime += uint64(rng.IntN(5000))
			}
			if pass%2 == 0 {
				spawn(uint64((f.up + dt/2) * clockTicks))
			}
			f.set(dt, min(used, capacity), all...)
			f.pass(s)
		}
		ex := f.finish(s)
		if ex.Budget == nil {
			t.Fatalf("seed %d: no budget", seed)
		}
		checkBudget(t, "seed "+string(rune('a'+seed%26)), *ex.Budget)
		for _, p := range ex.Procs {
			if p.CPUPct < 0 || p.ChildrenPct < 0 || p.CPUPct > ex.Budget.TotalPct || p.ChildrenPct > ex.Budget.TotalPct {
				t.Errorf("seed %d: %s pid %d at %.1f%% (children %.1f%%), outside [0, %.0f]", seed, p.Process, p.PID, p.CPUPct, p.ChildrenPct, ex.Budget.TotalPct)
			}
		}
		if t.Failed() {
			t.Fatalf("seed %d: budget %+v", seed, *ex.Budget)
		}
	}
}

// TestBudgetUnderRealChurn samples the real machine while a process
// outside the run spawns short-lived children without end (each a shell
// that counts for a moment and exits, many per interval): the budget's
// parts stay possible and add up, and the children's CPU is credited to
// their parent, never beyond what the machine had.
func TestBudgetUnderRealChurn(t *testing.T) {
	startOrphan(t, `while :; do sh -c "i=0; while [ \$i -lt 3000 ]; do i=\$((i+1)); done"; done`)
	startOrphan(t, `while :; do /bin/true; done`)
	s, err := Start(context.Background(), Config{
		Step:     "cpu",
		Interval: 200 * time.Millisecond,
		System:   true,
		Machine:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	s.Stop()
	ex := s.Explain()
	if ex == nil || ex.Budget == nil {
		t.Fatalf("no budget: %+v", ex)
	}
	b := *ex.Budget
	t.Logf("budget %+v", b)
	checkBudget(t, "churn", b)
	if b.OtherPct+b.UnattributedPct <= 0 {
		t.Errorf("the churning processes are nowhere in the budget: %+v", b)
	}
	for _, p := range ex.Procs {
		if p.CPUPct < 0 || p.ChildrenPct < 0 || p.CPUPct+p.ChildrenPct > b.TotalPct {
			t.Errorf("%s pid %d at %.1f%% (children %.1f%%): outside [0, %.0f]", p.Process, p.PID, p.CPUPct, p.ChildrenPct, b.TotalPct)
		}
	}
}
