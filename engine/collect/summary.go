package collect

import (
	"sort"
	"strings"

	"github.com/benchflow/benchflow/engine/results"
)

// ProcessCPU is the average of one process name over a collect step: the
// CPU of all its pids added up at each sample time, then averaged over the
// sample times at which the name was present.
type ProcessCPU struct {
	Step      string
	Process   string
	Role      string  // role of the first row seen
	PIDs      int     // distinct pids
	Samples   int     // sample times
	CPUPct    float64 // mean, 100 = one core
	UserPct   float64
	SystemPct float64
	MaxCPUPct float64 // highest sum at one sample time
	RSSBytes  int64   // highest sum at one sample time
}

// Summary: mean CPU% per process name over a set of samples (for the
// report/progress line: "nginx 96%, docker-proxy 120%"). Rows of role
// other are another's: named by program name alone (no pid, no command
// line), added up per name, never added to the run's of the same name. The result is sorted by step, then by CPU, highest first.
func Summary(ps []results.ProcessSample) []ProcessCPU {
	type key struct {
		step, name string
		other      bool
	}
	type instant struct {
		cpu, user, sys float64
		rss            int64
	}
	type acc struct {
		first int
		role  string
		pids  map[int]bool
		at    map[float64]*instant
	}
	groups := map[key]*acc{}
	for i, p := range ps {
		label := procLabel(p.Process, int(p.PID), "")
		if p.OutsideRun {
			label += OutsideRunSuffix
		}
		k := key{p.Step, label, p.Role == RoleOther}
		g := groups[k]
		if g == nil {
			g = &acc{first: i, role: p.Role, pids: map[int]bool{}, at: map[float64]*instant{}}
			groups[k] = g
		}
		g.pids[p.PID] = true
		in := g.at[p.T]
		if in == nil {
			in = &instant{}
			g.at[p.T] = in
		}
		in.cpu += p.CPUPct
		in.user += p.UserPct
		in.sys += p.SystemPct
		in.rss += p.RSSBytes
	}
	out := make([]ProcessCPU, 0, len(groups))
	for k, g := range groups {
		c := ProcessCPU{Step: k.step, Process: k.name, Role: g.role, PIDs: len(g.pids), Samples: len(g.at)}
		for _, in := range g.at {
			c.CPUPct += in.cpu
			c.UserPct += in.user
			c.SystemPct += in.sys
			c.MaxCPUPct = max(c.MaxCPUPct, in.cpu)
			c.RSSBytes = max(c.RSSBytes, in.rss)
		}
		n := float64(len(g.at))
		c.CPUPct /= n
		c.UserPct /= n
		c.SystemPct /= n
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		if a.CPUPct != b.CPUPct {
			return a.CPUPct > b.CPUPct
		}
		return a.Process < b.Process
	})
	return out
}

// FormatSummary prints a summary on one line, in its order:
// "docker-proxy 120%, nginx 96%, dockerd 8.3%". Values under 10% keep one
// decimal.
func FormatSummary(cs []ProcessCPU) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, c.Process+" "+fmtPct(c.CPUPct))
	}
	return strings.Join(parts, ", ")
}
