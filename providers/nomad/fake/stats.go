package fake

import (
	"github.com/benchflow/benchflow/engine/procfs"

	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	napi "github.com/hashicorp/nomad/api"
)

// The node the fake's client is: one node, on this machine.
const (
	nodeID   = "3d7f3ab5-0000-4000-8000-000000000001"
	nodeName = "fake-node-1"
)

// The Measured lists Nomad's executor reports for raw_exec and exec
// tasks (drivers/shared/executor: ExecutorBasicMeasuredMemStats and
// ExecutorBasicMeasuredCpuStats).
var (
	measuredMem = []string{"RSS", "Swap"}
	measuredCPU = []string{"System Mode", "User Mode", "Percent"}
)

// node serves GET /v1/node/:id: the client node, whose unique.hostname
// attribute is what Nomad's fingerprint reads (os.Hostname), unless
// NodeHostname says otherwise.
func (n *Nomad) node(w http.ResponseWriter, id string) {
	if id != nodeID {
		httpError(w, http.StatusNotFound, "node not found")
		return
	}
	host := n.NodeHostname
	if host == "" {
		host, _ = os.Hostname()
	}
	n.mu.Lock()
	index := n.tables[tableAllocs]
	n.mu.Unlock()
	n.writeJSON(w, index, &napi.Node{
		ID: nodeID, Name: nodeName, Datacenter: "dc1", NodePool: "default", Status: "ready",
		HTTPAddr: strings.TrimPrefix(n.srv.URL, "http://"), SchedulingEligibility: "eligible",
		Attributes: map[string]string{
			"unique.hostname": host, "nomad.version": n.nomadVersion(), "kernel.name": "linux",
			"os.name": "linux", "cpu.numcores": "2",
		},
	})
}

// allocStats serves GET /v1/client/allocation/:id/stats as a Nomad client
// does: the allocation's resource usage and, per running task, its own
// (AllocResourceUsage). For raw_exec and exec tasks Nomad's executor
// lists the processes of the task's cgroup, keyed by pid (Pids): the fake
// lists the process it runs for the task (RunRawExec) and its
// descendants. Tasks the fake serves in-process have no process, so no
// Pids, as the docker driver reports none. An allocation the client does
// not know answers 404.
func (n *Nomad) allocStats(w http.ResponseWriter, allocID string) {
	n.mu.Lock()
	fa, ok := n.allocs[allocID]
	type task struct {
		name string
		pid  int
	}
	var tasks []task
	var names []string
	if ok {
		for tn, st := range fa.a.TaskStates {
			if st.State == "running" {
				names = append(names, tn)
			}
		}
		for _, p := range fa.procs {
			if p.cmd.Process != nil {
				tasks = append(tasks, task{p.task, p.cmd.Process.Pid})
			}
		}
	}
	n.mu.Unlock()
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Sprintf("Unknown allocation %q", allocID))
		return
	}
	now := time.Now().UnixNano()
	out := &napi.AllocResourceUsage{
		ResourceUsage: &napi.ResourceUsage{MemoryStats: &napi.MemoryStats{Measured: measuredMem}, CpuStats: &napi.CpuStats{Measured: measuredCPU}},
		Tasks:         map[string]*napi.TaskResourceUsage{}, Timestamp: now,
	}
	for _, tn := range names {
		out.Tasks[tn] = &napi.TaskResourceUsage{
			ResourceUsage: &napi.ResourceUsage{MemoryStats: &napi.MemoryStats{Measured: measuredMem}, CpuStats: &napi.CpuStats{Measured: measuredCPU}},
			Timestamp:     now,
		}
	}
	for _, t := range tasks {
		tu, ok := out.Tasks[t.name]
		if !ok {
			continue
		}
		tu.Pids = map[string]*napi.ResourceUsage{}
		for _, pid := range family(t.pid) {
			ru := &napi.ResourceUsage{MemoryStats: &napi.MemoryStats{Measured: measuredMem}, CpuStats: &napi.CpuStats{Measured: measuredCPU}}
			ru.MemoryStats.RSS = procfs.ResidentBytes(pid)
			tu.Pids[strconv.Itoa(pid)] = ru
			tu.ResourceUsage.MemoryStats.RSS += ru.MemoryStats.RSS
		}
		out.ResourceUsage.MemoryStats.RSS += tu.ResourceUsage.MemoryStats.RSS
	}
	n.writeJSON(w, 0, out)
}

// family is pid and its live descendants, from /proc, sorted.
func family(pid int) []int {
	if !procfs.Alive(pid) {
		return nil
	}
	parent := map[int]int{}
	pids, _ := procfs.PIDs("")
	for _, p := range pids {
		l, _, err := procfs.ReadStat(p)
		if err != nil || l.Fields() < 2 {
			continue
		}
		if pp, err := l.Int(4); err == nil {
			parent[p] = pp
		}
	}
	in := map[int]bool{pid: true}
	for grew := true; grew; {
		grew = false
		for p, pp := range parent {
			if !in[p] && in[pp] {
				in[p], grew = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for p := range in {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}
