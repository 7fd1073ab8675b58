package collect

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/benchflow/benchflow/engine/results"
	"github.com/benchflow/benchflow/providers"
)

// Accounting per host: a trial whose services or agents run on other
// machines (the ssh provider) has a collect step sample each of them as
// it samples this one, and one verdict that names the machine that was
// the limit.

// HostSampler is implemented by deployments and providers whose processes
// run on other machines that can be sampled there (the ssh provider:
// a service's host, the hosts of its agents).
type HostSampler interface {
	// SampledHosts names the machines, as the host column does.
	SampledHosts() []string
	// SampleHost starts sampling host for a collect step configured as
	// cfg (its function fields are not used: the host reports the run's
	// processes itself, those of run). foreign are the run's processes of
	// other machines, which a host sharing this machine's kernel counts
	// as the run's (providers.Process.Host).
	SampleHost(ctx context.Context, host string, cfg Config, run string, foreign []providers.Process) (HostRun, error)
}

// HostRun is a sampler running on another machine.
type HostRun interface {
	// Stop ends it and returns what it sampled.
	Stop(ctx context.Context) (*HostResult, error)
}

// HostResult is what a collect step sampled on another machine.
type HostResult struct {
	Host        string
	Cores       int
	Processes   []results.ProcessSample
	System      []results.SystemSample
	Network     []results.NetSample
	Explanation *Explanation // nil without machine accounting
	// SharesKernel says the host runs on this machine's kernel (a
	// network namespace or container here): its budget is this
	// machine's too.
	SharesKernel bool
}

// LocalHost is the host column's value for this machine's rows: its
// hostname ("localhost" when it has none).
func LocalHost() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// HostEvidence is one machine's evidence for the verdict.
type HostEvidence struct {
	Host string // the host column's value
	// Local marks this machine (where benchflow runs).
	Local bool
	// Services and Loader say what of the run ran there: services make
	// it a server host, the load generator (benchflow itself, agents) a
	// client host.
	Services, Loader bool
	Evidence
}

// Label names the machine in a verdict: "server host 10.0.0.2", "client
// host (this machine)".
func (h HostEvidence) Label() string {
	kind := "host"
	switch {
	case h.Services && h.Loader:
		kind = "server and client host"
	case h.Services:
		kind = "server host"
	case h.Loader:
		kind = "client host"
	}
	if h.Local {
		return kind + " (this machine)"
	}
	return kind + " " + h.Host
}

// HostVerdict is one machine's verdict within a multi-host one.
type HostVerdict struct {
	Host string
	Verdict
}

// limiting reports a verdict that names a CPU limit.
func limiting(kind string) bool {
	return kind == VerdictServer || kind == VerdictLoader || kind == VerdictInfra
}

// JudgeHosts judges each machine by Judge's rules on its own evidence and
// names the one that was the limit:
//
//  1. a noisy machine makes the load noisy (the first in order: this
//     machine, then the others as given), whatever the others say;
//  2. of the machines whose own verdict is CPU-bound (server-, loader- or
//     infrastructure-bound), the limit is one that runs what its verdict
//     names (services for server- and infrastructure-bound, the load
//     generator for loader-bound), the least idle of them: its verdict is
//     the load's;
//  3. otherwise this machine's verdict stands (not CPU-bound,
//     undetermined), or the first machine's without it.
//
// The evidence is the limit's own, labelled, followed by every other
// machine's CPU in one clause each: "server host 10.0.0.2: nginx 392% of
// 4 cores (saturated: idle 2%); client host (this machine): 41% of 8
// cores busy, loader 38%". With one machine it is Judge's verdict as is.
func JudgeHosts(hs []HostEvidence) (Verdict, string, []HostVerdict) {
	if len(hs) == 0 {
		return Verdict{Kind: VerdictUnclear, Evidence: "no CPU accounting"}, "", nil
	}
	vs := make([]HostVerdict, len(hs))
	for i, h := range hs {
		vs[i] = HostVerdict{Host: h.Host, Verdict: Judge(h.Evidence)}
	}
	if len(hs) == 1 {
		return vs[0].Verdict, hs[0].Host, vs
	}
	limit := -1
	for i := range hs {
		if vs[i].Kind == VerdictNoisy {
			limit = i
			break
		}
	}
	if limit < 0 {
		// A machine whose own processes hold the role its verdict names
		// comes first (on a shared kernel every machine sees the
		// service; only one runs it), then the least idle.
		bestOwn, bestIdle := false, 0.0
		for i, h := range hs {
			if !limiting(vs[i].Kind) || h.Budget.TotalPct <= 0 {
				continue
			}
			own := (vs[i].Kind == VerdictServer || vs[i].Kind == VerdictInfra) && h.Services || vs[i].Kind == VerdictLoader && h.Loader
			idle := h.Budget.IdlePct / h.Budget.TotalPct
			if limit < 0 || own && !bestOwn || own == bestOwn && idle < bestIdle {
				limit, bestOwn, bestIdle = i, own, idle
			}
		}
	}
	if limit < 0 {
		limit = 0
		for i, h := range hs {
			if h.Local {
				limit = i
				break
			}
		}
	}
	var b strings.Builder
	b.WriteString(hs[limit].Label() + ": " + vs[limit].Evidence)
	for i, h := range hs {
		if i != limit {
			b.WriteString("; " + h.Label() + ": " + hostCPU(h))
		}
	}
	return Verdict{Kind: vs[limit].Kind, Evidence: b.String()}, hs[limit].Host, vs
}

// hostCPU is a machine's CPU in a clause: "41% of 8 cores busy, loader
// 38%" (busy is all but idle and steal, in % of one core).
func hostCPU(h HostEvidence) string {
	b := h.Budget
	if b.TotalPct <= 0 {
		return "no CPU accounting"
	}
	busy := b.TotalPct - b.IdlePct - b.StealPct
	s := fmt.Sprintf("%s of %s busy", fmtPct(busy), plural(b.TotalPct/100, "core"))
	var parts []string
	for _, p := range []BudgetPart{{"service", b.ServicePct}, {"loader", b.LoaderPct}, {"infra", b.InfraPct}, {"other", b.OtherPct}} {
		if p.Pct >= 0.5 {
			parts = append(parts, p.Name+" "+fmtPct(p.Pct))
		}
	}
	if len(parts) > 0 {
		s += ", " + strings.Join(parts, ", ")
	}
	if h.Budget.IdlePct/b.TotalPct*100 < SaturatedIdlePct {
		s += " (saturated)"
	}
	return s
}
