package collect

import (
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/results"
)

// hostEv builds one machine's evidence from its CPU split (percent of all
// CPUs) and its processes, through BudgetFrom as a sampler does.
func hostEv(host string, local, services, loader bool, ncpu int, idle float64, procs ...ProcCPU) HostEvidence {
	roles := map[string]float64{}
	for _, p := range procs {
		roles[p.Role] += p.CPUPct
	}
	split := results.SystemSample{IdlePct: idle, UserPct: 100 - idle}
	return HostEvidence{Host: host, Local: local, Services: services, Loader: loader,
		Evidence: Evidence{Budget: BudgetFrom(ncpu, split, roles), Procs: procs}}
}

func TestJudgeHostsNamesTheSaturatedServerHost(t *testing.T) {
	client := hostEv("client-1", true, false, true, 8, 95, ProcCPU{Process: LoaderName, PID: 10, Role: RoleLoader, CPUPct: 38, Threads: 8})
	server := hostEv("10.0.0.2", false, true, false, 4, 2, ProcCPU{Process: "nginx", PID: 20, Role: RoleService, CPUPct: 392, Threads: 4})
	v, limit, per := JudgeHosts([]HostEvidence{client, server})
	if v.Kind != VerdictServer || limit != "10.0.0.2" {
		t.Fatalf("verdict %v naming %q, want server-bound naming 10.0.0.2", v, limit)
	}
	for _, want := range []string{"server host 10.0.0.2: nginx 392%", "client host (this machine): ", "of 8 cores busy", "loader 38%"} {
		if !strings.Contains(v.Evidence, want) {
			t.Errorf("evidence %q lacks %q", v.Evidence, want)
		}
	}
	if !strings.HasPrefix(v.Evidence, "server host") {
		t.Errorf("evidence %q does not start with the limit", v.Evidence)
	}
	if len(per) != 2 || per[0].Host != "client-1" || per[1].Kind != VerdictServer {
		t.Errorf("per-host verdicts %+v", per)
	}
}

func TestJudgeHostsLoaderBoundClient(t *testing.T) {
	client := hostEv("client-1", true, false, true, 2, 1, ProcCPU{Process: LoaderName, PID: 10, Role: RoleLoader, CPUPct: 196, Threads: 2})
	server := hostEv("10.0.0.2", false, true, false, 4, 70, ProcCPU{Process: "nginx", PID: 20, Role: RoleService, CPUPct: 110, Threads: 4})
	v, limit, _ := JudgeHosts([]HostEvidence{client, server})
	if v.Kind != VerdictLoader || limit != "client-1" || !strings.HasPrefix(v.Evidence, "client host (this machine): loader at") {
		t.Fatalf("verdict %v naming %q: want loader-bound naming this machine", v, limit)
	}
	if !strings.Contains(v.Evidence, "server host 10.0.0.2: 120% of 4 cores busy, service 110%") {
		t.Errorf("evidence %q lacks the server host's clause", v.Evidence)
	}
}

// On one kernel (a host in a network namespace) every machine sees the
// service saturate the CPUs; the machine that runs it is the limit.
func TestJudgeHostsSharedKernelPrefersTheOwner(t *testing.T) {
	nginx := ProcCPU{Process: "nginx", PID: 20, Role: RoleService, CPUPct: 150, Threads: 1}
	loader := ProcCPU{Process: LoaderName, PID: 10, Role: RoleLoader, CPUPct: 45, Threads: 2}
	client := hostEv("box", true, false, true, 2, 1, nginx, loader)
	server := hostEv("10.213.0.2", false, true, false, 2, 3, nginx, loader)
	v, limit, _ := JudgeHosts([]HostEvidence{client, server})
	if v.Kind != VerdictServer || limit != "10.213.0.2" {
		t.Fatalf("verdict %v naming %q, want server-bound naming the server host", v, limit)
	}
}

// A noisy machine makes the load noisy, named, whatever the others say.
func TestJudgeHostsNoisyHost(t *testing.T) {
	client := hostEv("client-1", true, false, true, 8, 95, ProcCPU{Process: LoaderName, PID: 10, Role: RoleLoader, CPUPct: 38, Threads: 8})
	server := hostEv("10.0.0.2", false, true, false, 4, 2,
		ProcCPU{Process: "nginx", PID: 20, Role: RoleService, CPUPct: 300, Threads: 4},
		ProcCPU{Process: "make", PID: 30, Role: RoleOther, CPUPct: 90, Threads: 1})
	v, limit, _ := JudgeHosts([]HostEvidence{client, server})
	if v.Kind != VerdictNoisy || limit != "10.0.0.2" || !strings.HasPrefix(v.Evidence, "server host 10.0.0.2: other processes used 90%") {
		t.Fatalf("verdict %v naming %q: want noisy naming the server host", v, limit)
	}
}

// One machine: Judge's verdict, unchanged.
func TestJudgeHostsOne(t *testing.T) {
	e := hostEv("client-1", true, false, true, 2, 1, ProcCPU{Process: LoaderName, PID: 10, Role: RoleLoader, CPUPct: 196, Threads: 2})
	v, limit, _ := JudgeHosts([]HostEvidence{e})
	if v != Judge(e.Evidence) || limit != "client-1" {
		t.Errorf("one host: %v naming %q, want %v", v, limit, Judge(e.Evidence))
	}
}
