package fake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	napi "github.com/hashicorp/nomad/api"
)

// Nomad replays the job, allocation, evaluation and deployment endpoints of
// the Nomad HTTP API for one client node at 127.0.0.1.
type Nomad struct {
	// Token, when set, must be sent as X-Nomad-Token; otherwise 403
	// "Permission denied".
	Token string
	// Drivers the node offers (default docker, exec, raw_exec). A task
	// whose driver is missing cannot be placed.
	Drivers []string
	// CPU and MemoryMB are the node's allocatable resources (default
	// 4000 MHz and 8192 MB). A job asking for more cannot be placed.
	CPU, MemoryMB int
	// TaskStatus is the status the in-process tasks answer on their
	// service's check path (default 200). Anything else keeps the Consul
	// check critical and the deployment running, as with a broken task.
	TaskStatus int
	// TaskFailure, when set, makes every task fail to start: allocations
	// are "failed" with a "Driver Failure" task event carrying this
	// message, and nothing listens.
	TaskFailure string
	// UnhealthyFails makes a deployment fail ("Failed due to unhealthy
	// allocations") as soon as a check of one of its allocations is
	// critical, as Nomad does when healthy_deadline passes — without the
	// wait.
	UnhealthyFails bool
	// MaxCheckInterval caps the check interval the fake's Consul agent
	// uses, so tests need not wait 10s (default 100ms).
	MaxCheckInterval time.Duration

	consul *Consul
	srv    *httptest.Server
	notifier
	jobs   map[string]*fakeJob // by namespace + "/" + id
	allocs map[string]*fakeAlloc
	evals  map[string]*napi.Evaluation
	deps   map[string]*napi.Deployment
	wg     sync.WaitGroup
}

type fakeJob struct {
	job         *napi.Job
	status      string
	stop        bool
	createIndex uint64
	modifyIndex uint64
	submit      int64
}

type fakeAlloc struct {
	a       *napi.Allocation
	servers []*http.Server
	consul  []string // service ids registered in Consul
}

// NewNomad starts a Nomad fake whose allocations register their services
// in consul (which may be nil when jobs declare no Consul services).
func NewNomad(consul *Consul) *Nomad {
	n := &Nomad{
		consul: consul,
		jobs:   map[string]*fakeJob{},
		allocs: map[string]*fakeAlloc{},
		evals:  map[string]*napi.Evaluation{},
		deps:   map[string]*napi.Deployment{},
	}
	n.init()
	n.srv = httptest.NewServer(http.HandlerFunc(n.serve))
	return n
}

// URL is the agent's HTTP address (what NOMAD_ADDR would hold).
func (n *Nomad) URL() string { return n.srv.URL }

// Close stops every allocation and the HTTP server.
func (n *Nomad) Close() {
	n.mu.Lock()
	for id, fa := range n.allocs {
		n.stopAllocLocked(fa)
		delete(n.allocs, id)
	}
	n.mu.Unlock()
	n.srv.Close()
	n.wg.Wait()
}

// Jobs lists the ids of the registered jobs (stopped but not purged jobs
// included), sorted.
func (n *Nomad) Jobs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, j := range n.jobs {
		out = append(out, *j.job.ID)
	}
	sort.Strings(out)
	return out
}

// RunningAllocs lists the addresses (host:port of the first port) of the
// running allocations, sorted.
func (n *Nomad) RunningAllocs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, fa := range n.allocs {
		if fa.a.ClientStatus == napi.AllocClientStatusRunning {
			for _, p := range fa.a.AllocatedResources.Shared.Ports {
				out = append(out, net.JoinHostPort(p.HostIP, strconv.Itoa(p.Value)))
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Job returns a copy of a registered job as the fake received it.
func (n *Nomad) Job(namespace, id string) (*napi.Job, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	j, ok := n.jobs[nsKey(namespace, id)]
	if !ok {
		return nil, false
	}
	b, _ := json.Marshal(j.job)
	var cp napi.Job
	_ = json.Unmarshal(b, &cp)
	return &cp, true
}

func nsKey(ns, id string) string {
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + id
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// httpError writes a Nomad-style plain-text error.
func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprint(w, msg)
}

func (n *Nomad) writeJSON(w http.ResponseWriter, index uint64, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
	json.NewEncoder(w).Encode(v)
}

func (n *Nomad) serve(w http.ResponseWriter, r *http.Request) {
	if n.Token != "" && requestToken(r, "X-Nomad-Token") != n.Token {
		httpError(w, http.StatusForbidden, "Permission denied")
		return
	}
	ns := r.URL.Query().Get("namespace")
	p := r.URL.Path
	switch {
	case p == "/v1/jobs":
		switch r.Method {
		case http.MethodPut, http.MethodPost:
			n.register(w, r)
		case http.MethodGet:
			n.listJobs(w, r, ns)
		default:
			httpError(w, http.StatusMethodNotAllowed, "Invalid method")
		}
	case strings.HasPrefix(p, "/v1/job/"):
		rest := strings.TrimPrefix(p, "/v1/job/")
		id, sub, _ := strings.Cut(rest, "/")
		if id == "" {
			httpError(w, http.StatusNotFound, "job not found")
			return
		}
		switch {
		case sub == "" && r.Method == http.MethodDelete:
			n.deregister(w, r, ns, id)
		case sub == "" && r.Method == http.MethodGet:
			n.query(w, r, func() (any, error) {
				j, ok := n.jobs[nsKey(ns, id)]
				if !ok {
					return nil, errNotFound("job not found")
				}
				return j.job, nil
			})
		case sub == "allocations" && r.Method == http.MethodGet:
			n.query(w, r, func() (any, error) { return n.jobAllocsLocked(ns, id, boolParam(r, "all")), nil })
		case sub == "evaluations" && r.Method == http.MethodGet:
			n.query(w, r, func() (any, error) {
				out := []*napi.Evaluation{}
				for _, e := range n.evals {
					if e.JobID == id && nsKey(e.Namespace, "") == nsKey(ns, "") {
						out = append(out, e)
					}
				}
				return out, nil
			})
		case sub == "deployment" && r.Method == http.MethodGet:
			n.query(w, r, func() (any, error) { return n.latestDeploymentLocked(ns, id), nil })
		case sub == "deployments" && r.Method == http.MethodGet:
			n.query(w, r, func() (any, error) {
				out := []*napi.Deployment{}
				if d := n.latestDeploymentLocked(ns, id); d != nil {
					out = append(out, d)
				}
				return out, nil
			})
		default:
			httpError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL path %q", p))
		}
	case strings.HasPrefix(p, "/v1/allocation/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/v1/allocation/")
		n.query(w, r, func() (any, error) {
			fa, ok := n.allocs[id]
			if !ok {
				return nil, errNotFound("alloc not found")
			}
			return fa.a, nil
		})
	case strings.HasPrefix(p, "/v1/evaluation/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/v1/evaluation/")
		n.query(w, r, func() (any, error) {
			e, ok := n.evals[id]
			if !ok {
				return nil, errNotFound("eval not found")
			}
			return e, nil
		})
	case strings.HasPrefix(p, "/v1/deployment/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/v1/deployment/")
		n.query(w, r, func() (any, error) {
			d, ok := n.deps[id]
			if !ok {
				return nil, errNotFound("deployment not found")
			}
			return d, nil
		})
	default:
		httpError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL path %q", p))
	}
}

type notFound string

func (e notFound) Error() string { return string(e) }

func errNotFound(msg string) error { return notFound(msg) }

// query serves a read endpoint with blocking-query semantics.
func (n *Nomad) query(w http.ResponseWriter, r *http.Request, read func() (any, error)) {
	n.block(r.Context(), parseIndex(r), parseWait(r))
	n.mu.Lock()
	v, err := read()
	index := n.index
	var body []byte
	if err == nil {
		body, err = json.Marshal(v)
	}
	n.mu.Unlock()
	var nf notFound
	if errors.As(err, &nf) {
		httpError(w, http.StatusNotFound, nf.Error())
		return
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
	w.Write(body)
}

func (n *Nomad) listJobs(w http.ResponseWriter, r *http.Request, ns string) {
	withMeta := r.URL.Query().Get("meta") == "true"
	prefix := r.URL.Query().Get("prefix")
	n.query(w, r, func() (any, error) {
		out := []*napi.JobListStub{}
		for _, j := range n.jobs {
			if ns != "*" && nsKey(*j.job.Namespace, "") != nsKey(ns, "") {
				continue
			}
			if !strings.HasPrefix(*j.job.ID, prefix) {
				continue
			}
			st := &napi.JobListStub{
				ID: *j.job.ID, Name: *j.job.Name, Namespace: *j.job.Namespace,
				Datacenters: j.job.Datacenters, Type: *j.job.Type, Priority: *j.job.Priority,
				Stop: j.stop, Status: j.status, CreateIndex: j.createIndex,
				ModifyIndex: j.modifyIndex, JobModifyIndex: j.modifyIndex, SubmitTime: j.submit,
			}
			if withMeta {
				st.Meta = j.job.Meta
			}
			out = append(out, st)
		}
		sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
		return out, nil
	})
}

// validate applies the checks of the Nomad job validation the provider can
// run into; messages follow Nomad's multierror format.
func validate(j *napi.Job) error {
	var errs []string
	if j.ID == nil || *j.ID == "" {
		errs = append(errs, "Missing job ID")
	} else if strings.ContainsAny(*j.ID, " \t\n") {
		errs = append(errs, "Job ID contains a space")
	}
	if j.Type == nil || *j.Type != napi.JobTypeService {
		errs = append(errs, "the fake accepts only service jobs")
	}
	if len(j.TaskGroups) == 0 {
		errs = append(errs, "Missing job task groups")
	}
	for _, tg := range j.TaskGroups {
		name := ptrString(tg.Name)
		if name == "" {
			errs = append(errs, "Job task group 1 missing name")
		}
		if tg.Count != nil && *tg.Count < 0 {
			errs = append(errs, fmt.Sprintf("Task group %s count can't be negative", name))
		}
		if len(tg.Tasks) == 0 {
			errs = append(errs, fmt.Sprintf("Task group %s: Missing tasks for task group", name))
		}
		for _, t := range tg.Tasks {
			if t.Driver == "" {
				errs = append(errs, fmt.Sprintf("Task group %s: Task %s: Missing task driver", name, t.Name))
			}
		}
		for _, s := range tg.Services {
			if s.PortLabel != "" && !hasPort(tg, s.PortLabel) {
				errs = append(errs, fmt.Sprintf("Task group %s: Service %s: port label %q does not exist", name, s.Name, s.PortLabel))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d error(s) occurred:\n", len(errs))
	for _, e := range errs {
		msg += "\n* " + e
	}
	return errors.New(msg)
}

func hasPort(tg *napi.TaskGroup, label string) bool {
	for _, nw := range tg.Networks {
		for _, p := range append(slices.Clone(nw.DynamicPorts), nw.ReservedPorts...) {
			if p.Label == label {
				return true
			}
		}
	}
	return false
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (n *Nomad) register(w http.ResponseWriter, r *http.Request) {
	var req napi.JobRegisterRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "Failed to decode HTTP body: "+err.Error())
		return
	}
	if req.Job == nil {
		httpError(w, http.StatusBadRequest, "Job must be specified")
		return
	}
	job := req.Job
	if ns := r.URL.Query().Get("namespace"); ns != "" && (job.Namespace == nil || *job.Namespace == "") {
		job.Namespace = &ns
	}
	job.Canonicalize()
	if err := validate(job); err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	key := nsKey(*job.Namespace, *job.ID)
	fj, exists := n.jobs[key]
	if exists {
		for id, fa := range n.allocs {
			if fa.a.JobID == *job.ID && fa.a.Namespace == *job.Namespace {
				n.stopAllocLocked(fa)
				delete(n.allocs, id)
			}
		}
	} else {
		fj = &fakeJob{createIndex: n.index + 1}
		n.jobs[key] = fj
	}
	index := n.bumpLocked()
	fj.job, fj.stop, fj.modifyIndex, fj.submit = job, false, index, time.Now().UnixNano()
	job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = &fj.createIndex, &index, &index

	eval := &napi.Evaluation{
		ID: newID(), Priority: *job.Priority, Type: *job.Type, TriggeredBy: "job-register",
		Namespace: *job.Namespace, JobID: *job.ID, JobModifyIndex: index,
		Status: "complete", CreateIndex: index, ModifyIndex: index,
		CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano(),
	}
	n.evals[eval.ID] = eval
	failed := n.placeLocked(job)
	if len(failed) > 0 {
		eval.FailedTGAllocs = failed
		eval.BlockedEval = newID()
		eval.QueuedAllocations = map[string]int{}
		for g := range failed {
			eval.QueuedAllocations[g] = groupCount(job, g)
		}
		fj.status = "pending"
	} else {
		fj.status = "running"
	}
	n.writeJSON(w, index, napi.JobRegisterResponse{
		EvalID: eval.ID, EvalCreateIndex: index, JobModifyIndex: index,
	})
}

func groupCount(job *napi.Job, group string) int {
	for _, tg := range job.TaskGroups {
		if *tg.Name == group {
			return *tg.Count
		}
	}
	return 0
}

// placeLocked schedules the job on the fake node: it checks drivers and
// resources like the scheduler's feasibility checks, then starts one
// in-process server per allocation. It returns the failed task groups'
// metrics (nothing is started then).
func (n *Nomad) placeLocked(job *napi.Job) map[string]*napi.AllocationMetric {
	drivers := n.Drivers
	if len(drivers) == 0 {
		drivers = []string{"docker", "exec", "raw_exec"}
	}
	cpuCap, memCap := n.CPU, n.MemoryMB
	if cpuCap == 0 {
		cpuCap = 4000
	}
	if memCap == 0 {
		memCap = 8192
	}
	for _, fa := range n.allocs {
		if fa.a.ClientStatus == napi.AllocClientStatusRunning {
			cpuCap -= int(allocCPU(fa.a))
			memCap -= int(allocMem(fa.a))
		}
	}
	failed := map[string]*napi.AllocationMetric{}
	cpuNeed, memNeed := 0, 0
	for _, tg := range job.TaskGroups {
		m := &napi.AllocationMetric{NodesEvaluated: 1, NodesAvailable: map[string]int{"dc1": 1}}
		for _, t := range tg.Tasks {
			if !slices.Contains(drivers, t.Driver) {
				m.NodesFiltered = 1
				m.ConstraintFiltered = map[string]int{"missing drivers": 1}
				m.ClassFiltered = map[string]int{}
			}
			if t.Resources != nil {
				cpuNeed += *tg.Count * ptrInt(t.Resources.CPU)
				memNeed += *tg.Count * ptrInt(t.Resources.MemoryMB)
			}
		}
		if m.NodesFiltered == 0 {
			switch {
			case cpuNeed > cpuCap:
				m.NodesExhausted = 1
				m.DimensionExhausted = map[string]int{"cpu": 1}
			case memNeed > memCap:
				m.NodesExhausted = 1
				m.DimensionExhausted = map[string]int{"memory": 1}
			}
		}
		if m.NodesFiltered > 0 || m.NodesExhausted > 0 {
			failed[*tg.Name] = m
		}
	}
	if len(failed) > 0 {
		return failed
	}
	for _, tg := range job.TaskGroups {
		dep := &napi.Deployment{
			ID: newID(), Namespace: *job.Namespace, JobID: *job.ID,
			JobVersion: *job.Version, JobModifyIndex: *job.JobModifyIndex,
			JobCreateIndex: *job.CreateIndex, Status: "running",
			StatusDescription: "Deployment is running",
			TaskGroups: map[string]*napi.DeploymentState{*tg.Name: {
				DesiredTotal: *tg.Count, PlacedAllocs: *tg.Count,
			}},
			CreateIndex: n.index, ModifyIndex: n.index,
		}
		n.deps[dep.ID] = dep
		for i := 0; i < *tg.Count; i++ {
			n.startAllocLocked(job, tg, i, dep)
		}
		if *tg.Count == 0 {
			dep.Status, dep.StatusDescription = "successful", "Deployment completed successfully"
		}
	}
	return nil
}

func ptrInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func allocCPU(a *napi.Allocation) int64 {
	var s int64
	for _, t := range a.AllocatedResources.Tasks {
		s += t.Cpu.CpuShares
	}
	return s
}

func allocMem(a *napi.Allocation) int64 {
	var s int64
	for _, t := range a.AllocatedResources.Tasks {
		s += t.Memory.MemoryMB
	}
	return s
}

// startAllocLocked "runs" one allocation: a real HTTP server on
// 127.0.0.1 per port label of the group, registered in Consul with the
// group's services and their HTTP checks.
func (n *Nomad) startAllocLocked(job *napi.Job, tg *napi.TaskGroup, i int, dep *napi.Deployment) {
	id := newID()
	name := fmt.Sprintf("%s.%s[%d]", *job.ID, *tg.Name, i)
	status := n.TaskStatus
	if status == 0 {
		status = http.StatusOK
	}
	fa := &fakeAlloc{}
	if n.TaskFailure != "" {
		states := map[string]*napi.TaskState{}
		for _, t := range tg.Tasks {
			states[t.Name] = &napi.TaskState{State: "dead", Failed: true, Events: []*napi.TaskEvent{
				{Type: "Received", DisplayMessage: "Task received by client"},
				{Type: "Driver Failure", DisplayMessage: n.TaskFailure, DriverError: n.TaskFailure},
			}}
		}
		fa.a = &napi.Allocation{ID: id, Namespace: *job.Namespace, Name: name, JobID: *job.ID, TaskGroup: *tg.Name,
			NodeID: "3d7f3ab5-0000-4000-8000-000000000001", NodeName: "fake-node-1",
			AllocatedResources: &napi.AllocatedResources{}, DesiredStatus: "run",
			ClientStatus: napi.AllocClientStatusFailed, ClientDescription: "Failed tasks",
			TaskStates: states, DeploymentID: dep.ID, CreateIndex: n.index, ModifyIndex: n.index}
		n.allocs[id] = fa
		dep.Status, dep.StatusDescription = "failed", "Failed due to unhealthy allocations"
		return
	}
	shared := napi.AllocatedSharedResources{}
	nw := &napi.NetworkResource{Mode: "host", IP: "127.0.0.1"}
	var labels []napi.Port
	for _, gn := range tg.Networks {
		labels = append(labels, gn.DynamicPorts...)
		labels = append(labels, gn.ReservedPorts...)
	}
	for _, pl := range labels {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			continue
		}
		port := ln.Addr().(*net.TCPAddr).Port
		body := fmt.Sprintf("hello from %s (alloc %s)\n", name, id[:8])
		srv := &http.Server{Handler: taskHandler(body, status), ReadHeaderTimeout: 10 * time.Second}
		fa.servers = append(fa.servers, srv)
		n.wg.Add(1)
		go func() { defer n.wg.Done(); _ = srv.Serve(ln) }()
		shared.Ports = append(shared.Ports, napi.PortMapping{Label: pl.Label, Value: port, To: pl.To, HostIP: "127.0.0.1"})
		nw.DynamicPorts = append(nw.DynamicPorts, napi.Port{Label: pl.Label, Value: port, To: pl.To})
	}
	shared.Networks = []*napi.NetworkResource{nw}
	tasks := map[string]*napi.AllocatedTaskResources{}
	states := map[string]*napi.TaskState{}
	for _, t := range tg.Tasks {
		tr := &napi.AllocatedTaskResources{}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(ptrInt(t.Resources.CPU))
			tr.Memory.MemoryMB = int64(ptrInt(t.Resources.MemoryMB))
		}
		tasks[t.Name] = tr
		states[t.Name] = &napi.TaskState{State: "running", StartedAt: time.Now()}
	}
	healthy := false
	fa.a = &napi.Allocation{
		ID: id, Namespace: *job.Namespace, Name: name, NodeID: "3d7f3ab5-0000-4000-8000-000000000001",
		NodeName: "fake-node-1", JobID: *job.ID, TaskGroup: *tg.Name,
		AllocatedResources: &napi.AllocatedResources{Tasks: tasks, Shared: shared},
		DesiredStatus:      "run", ClientStatus: napi.AllocClientStatusRunning,
		TaskStates: states, DeploymentID: dep.ID,
		DeploymentStatus: &napi.AllocDeploymentStatus{Healthy: &healthy},
		CreateIndex:      n.index, ModifyIndex: n.index, AllocModifyIndex: n.index,
		CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano(),
	}
	n.allocs[id] = fa

	services := append([]*napi.Service(nil), tg.Services...)
	for _, t := range tg.Tasks {
		services = append(services, t.Services...)
	}
	if n.consul == nil || len(services) == 0 {
		healthy = true
		n.markHealthLocked(dep)
		return
	}
	for _, s := range services {
		if s.Provider != "" && s.Provider != "consul" {
			continue
		}
		var port int
		for _, p := range shared.Ports {
			if p.Label == s.PortLabel {
				port = p.Value
			}
		}
		sid := fmt.Sprintf("_nomad-task-%s-group-%s-%s-%s", id, *tg.Name, s.Name, s.PortLabel)
		fa.consul = append(fa.consul, sid)
		in := Instance{ID: sid, Name: s.Name, Address: "127.0.0.1", Port: port, Tags: s.Tags, Meta: s.Meta}
		var check *napi.ServiceCheck
		for k := range s.Checks {
			if s.Checks[k].Type == "http" {
				check = &s.Checks[k]
			}
		}
		if check == nil {
			in.Status = StatusPassing
			n.consul.Register(in)
			continue
		}
		interval, timeout := check.Interval, check.Timeout
		maxI := n.MaxCheckInterval
		if maxI <= 0 {
			maxI = 100 * time.Millisecond
		}
		if interval <= 0 || interval > maxI {
			interval = maxI
		}
		if timeout <= 0 {
			timeout = 2 * time.Second
		}
		path := check.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		n.consul.RegisterHTTPCheck(in, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), interval, timeout)
	}
	// The allocation turns healthy (and the deployment successful) once
	// every service instance of it passes, as Nomad's health watcher does
	// with health_check = "checks".
	n.wg.Add(1)
	go n.watchHealth(id, dep.ID, fa.consul, n.UnhealthyFails)
}

func taskHandler(body string, checkStatus int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if checkStatus != http.StatusOK {
			http.Error(w, "task is unhealthy", checkStatus)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, body)
	})
}

func (n *Nomad) watchHealth(allocID, depID string, serviceIDs []string, failFast bool) {
	defer n.wg.Done()
	for {
		all, critical := true, false
		for _, in := range n.consul.Instances() {
			if slices.Contains(serviceIDs, in.ID) && in.Status != StatusPassing {
				all = false
				critical = critical || in.Status == StatusCritical
			}
		}
		n.mu.Lock()
		fa, ok := n.allocs[allocID]
		if !ok || fa.a.ClientStatus != napi.AllocClientStatusRunning {
			n.mu.Unlock()
			return
		}
		// A just-registered check is critical until it first runs; only
		// a check that ran counts.
		if failFast && critical && checksRan(n.consul, serviceIDs) {
			h := false
			fa.a.DeploymentStatus.Healthy = &h
			if d, ok := n.deps[depID]; ok && d.Status == "running" {
				d.Status, d.StatusDescription = "failed", "Failed due to unhealthy allocations"
				d.ModifyIndex = n.bumpLocked()
			}
			n.mu.Unlock()
			return
		}
		if all {
			h := true
			fa.a.DeploymentStatus.Healthy = &h
			n.bumpLocked()
			if d, ok := n.deps[depID]; ok {
				n.markHealthLocked(d)
			}
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
}

// checksRan reports whether every check of the ids has run at least once.
func checksRan(c *Consul, ids []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if !c.ran[id] {
			return false
		}
	}
	return true
}

// markHealthLocked recounts the deployment's healthy allocations.
func (n *Nomad) markHealthLocked(d *napi.Deployment) {
	for g, st := range d.TaskGroups {
		healthy := 0
		for _, fa := range n.allocs {
			if fa.a.DeploymentID == d.ID && fa.a.TaskGroup == g && fa.a.DeploymentStatus != nil &&
				fa.a.DeploymentStatus.Healthy != nil && *fa.a.DeploymentStatus.Healthy {
				healthy++
			}
		}
		st.HealthyAllocs = healthy
		if healthy < st.DesiredTotal {
			return
		}
	}
	d.Status, d.StatusDescription = "successful", "Deployment completed successfully"
	d.ModifyIndex = n.bumpLocked()
}

// stopAllocLocked stops an allocation's servers and deregisters its
// services.
func (n *Nomad) stopAllocLocked(fa *fakeAlloc) {
	for _, s := range fa.servers {
		_ = s.Close()
	}
	fa.servers = nil
	if n.consul != nil {
		for _, sid := range fa.consul {
			n.consul.Deregister(sid)
		}
	}
	fa.consul = nil
	fa.a.ClientStatus, fa.a.DesiredStatus = napi.AllocClientStatusComplete, "stop"
}

func (n *Nomad) jobAllocsLocked(ns, id string, all bool) []*napi.AllocationListStub {
	out := []*napi.AllocationListStub{}
	for _, fa := range n.allocs {
		a := fa.a
		if a.JobID != id || nsKey(a.Namespace, "") != nsKey(ns, "") {
			continue
		}
		out = append(out, &napi.AllocationListStub{
			ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace, NodeID: a.NodeID,
			NodeName: a.NodeName, JobID: a.JobID, JobType: "service", TaskGroup: a.TaskGroup,
			DesiredStatus: a.DesiredStatus, ClientStatus: a.ClientStatus, TaskStates: a.TaskStates,
			DeploymentStatus: a.DeploymentStatus, CreateIndex: a.CreateIndex,
			ModifyIndex: a.ModifyIndex, CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (n *Nomad) latestDeploymentLocked(ns, id string) *napi.Deployment {
	var best *napi.Deployment
	for _, d := range n.deps {
		if d.JobID == id && nsKey(d.Namespace, "") == nsKey(ns, "") && (best == nil || d.CreateIndex > best.CreateIndex) {
			best = d
		}
	}
	return best
}

func (n *Nomad) deregister(w http.ResponseWriter, r *http.Request, ns, id string) {
	purge := r.URL.Query().Get("purge") == "true"
	n.mu.Lock()
	defer n.mu.Unlock()
	key := nsKey(ns, id)
	fj, ok := n.jobs[key]
	if !ok {
		httpError(w, http.StatusNotFound, "job not found")
		return
	}
	for aid, fa := range n.allocs {
		if fa.a.JobID == id && nsKey(fa.a.Namespace, "") == nsKey(ns, "") {
			n.stopAllocLocked(fa)
			if purge {
				delete(n.allocs, aid)
			}
		}
	}
	index := n.bumpLocked()
	if purge {
		delete(n.jobs, key)
		for did, d := range n.deps {
			if d.JobID == id {
				delete(n.deps, did)
			}
		}
	} else {
		fj.stop, fj.status, fj.modifyIndex = true, "dead", index
	}
	eval := &napi.Evaluation{ID: newID(), Namespace: ns, JobID: id, TriggeredBy: "job-deregister",
		Status: "complete", CreateIndex: index, ModifyIndex: index}
	n.evals[eval.ID] = eval
	n.writeJSON(w, index, napi.JobDeregisterResponse{EvalID: eval.ID, EvalCreateIndex: index, JobModifyIndex: index})
}
