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
	"syscall"
	"time"

	napi "github.com/hashicorp/nomad/api"
)

// Nomad replays the job, allocation, evaluation, deployment, service
// registration and client (logs, checks) endpoints of the Nomad HTTP API
// for one client node at 127.0.0.1.
//
// It is asynchronous the way a real agent (observed with Nomad 1.6.5) is:
// a registration answers with an evaluation that is still "pending"; the
// scheduler completes it ScheduleDelay later and creates "pending"
// allocations, which run StartDelay after that. A deregistration answers
// at once too: the allocations are marked desired "stop" ScheduleDelay
// later, their Consul services are removed first (as the Nomad client does
// before killing a task) and they turn "complete" StopDelay after that. A
// failed task's events end with the restart policy's "Not Restarting"
// event, as Nomad's do.
//
// Services with provider "nomad" use Nomad's native service discovery
// instead of Consul: see services.go. A Nomad built without a Consul fake
// is a client without Consul: a job with a Consul service cannot be placed
// there, as in Nomad (the "${attr.consul.version} semver >= 1.7.0"
// constraint filters the node).
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
	// message (followed by "Not Restarting"), and nothing listens.
	TaskFailure string
	// TaskExitCode, when not zero, makes every task start, write
	// TaskStderr to its stderr log and exit with this code: the events
	// are "Started", "Terminated" ("Exit Code: N") and "Not Restarting".
	TaskExitCode int
	TaskStderr   string
	// UnhealthyFails makes a deployment fail ("Failed due to unhealthy
	// allocations") as soon as a check of one of its allocations is
	// critical, as Nomad does when healthy_deadline passes — without the
	// wait.
	UnhealthyFails bool
	// MaxCheckInterval caps the check interval the fake's Consul agent,
	// and its Nomad client for nomad-provider checks, use, so tests need
	// not wait 10s (default 100ms).
	MaxCheckInterval time.Duration
	// RunRawExec makes raw_exec tasks run their command for real, as the
	// Nomad client's raw_exec driver does: with the task's env plus
	// NOMAD_PORT_<label>, NOMAD_IP_<label>, NOMAD_ADDR_<label>,
	// NOMAD_ALLOC_INDEX, NOMAD_ALLOC_ID and NOMAD_ALLOC_NAME, ${…}
	// interpolated in the command and its args; its output becomes the
	// task's logs, and stopping the allocation sends it SIGINT (SIGKILL
	// StopDelay later). Without it tasks are in-process HTTP servers.
	RunRawExec bool
	// ScheduleDelay (default 20ms), StartDelay (default 30ms) and
	// StopDelay (default 150ms) pace the asynchronous steps above.
	ScheduleDelay, StartDelay, StopDelay time.Duration
	// NodeHostname is the unique.hostname attribute of the client node
	// (GET /v1/node/:id); default os.Hostname(), as Nomad fingerprints
	// it: the client runs on this machine. Set it to simulate a client on
	// another machine.
	NodeHostname string
	// ServiceSyncDelay (default 10ms) is how long the client's RPC to the
	// servers takes to add a nomad-provider service registration once its
	// task runs, and to remove it once the allocation is told to stop.
	ServiceSyncDelay time.Duration
	// Version is the Nomad version the agent (GET /v1/agent/self, its
	// serf member's "build" tag in /v1/agent/members) and the client node
	// (attribute nomad.version) report; default DefaultNomadVersion.
	Version string

	consul *Consul
	srv    *httptest.Server
	notifier
	jobs   map[string]*fakeJob // by namespace + "/" + id
	allocs map[string]*fakeAlloc
	evals  map[string]*napi.Evaluation
	deps   map[string]*napi.Deployment
	// services holds the nomad-provider service registrations, by id.
	services map[string]*napi.ServiceRegistration
	// tables holds the index of each state table's last write: Nomad
	// answers (and blocks) with the index of the table an endpoint reads,
	// which is 0 until the table is first written.
	tables map[string]uint64
	// vars are the variables (/v1/var), by nsKey(namespace, path).
	vars   map[string]*napi.Variable
	timers map[*time.Timer]struct{} // pending afterLocked steps
	closed bool
	wg     sync.WaitGroup
}

// Nomad's state tables, as far as the endpoints below read them.
const (
	tableJobs        = "jobs"
	tableEvals       = "evals"
	tableAllocs      = "allocs"
	tableDeployments = "deployment"
	tableServices    = "service_registrations"
)

type fakeJob struct {
	job         *napi.Job
	status      string
	stop        bool
	createIndex uint64
	modifyIndex uint64
	submit      int64
}

type fakeAlloc struct {
	a         *napi.Allocation
	jobCreate uint64 // the create index of the job version it belongs to
	servers   []*http.Server
	consul    []string // service ids registered in Consul
	// nomadServices are the ids of its nomad-provider registrations
	// (registered or about to be); checks the results of their checks,
	// by check id, which checkStops end.
	nomadServices []string
	checks        map[string]*napi.AllocCheckStatus
	checkStops    []chan struct{}
	logs          map[string]string
	procs         []*taskProc // raw_exec tasks run for real (RunRawExec)
}

// NewNomad starts a Nomad fake whose allocations register their services
// in consul, or nil for a Nomad without Consul (jobs must then use
// services with provider "nomad", or none). Like a Nomad agent configured
// with Consul, it registers its own "nomad" and "nomad-client" services
// there.
func NewNomad(consul *Consul) *Nomad {
	n := &Nomad{
		consul: consul,
		jobs:   map[string]*fakeJob{},
		allocs: map[string]*fakeAlloc{},
		evals:  map[string]*napi.Evaluation{},
		deps:   map[string]*napi.Deployment{},
		tables: map[string]uint64{},

		services: map[string]*napi.ServiceRegistration{},
		vars:     map[string]*napi.Variable{},
		timers:   map[*time.Timer]struct{}{},
	}
	n.init()
	n.srv = httptest.NewServer(http.HandlerFunc(n.serve))
	if consul != nil {
		host, port, _ := net.SplitHostPort(strings.TrimPrefix(n.srv.URL, "http://"))
		p, _ := strconv.Atoi(port)
		for _, s := range []struct{ id, name string }{
			{"_nomad-server-" + newID()[:8], "nomad"}, {"_nomad-client-" + newID()[:8], "nomad-client"},
		} {
			consul.Register(Instance{ID: s.id, Name: s.name, Address: host, Port: p, Tags: []string{"http"},
				Meta: map[string]string{"external-source": "nomad"}, Status: StatusPassing})
		}
	}
	return n
}

// URL is the agent's HTTP address (what NOMAD_ADDR would hold).
func (n *Nomad) URL() string { return n.srv.URL }

// Close stops every allocation and the HTTP server. Steps still pending
// (a start, a stop, a registration) are dropped.
func (n *Nomad) Close() {
	n.mu.Lock()
	n.closed = true
	for id, fa := range n.allocs {
		n.killAllocLocked(fa)
		delete(n.allocs, id)
	}
	for t := range n.timers {
		if t.Stop() {
			n.wg.Done() // its func will not run
		}
	}
	n.timers = nil
	n.mu.Unlock()
	n.srv.Close()
	n.wg.Wait()
}

// afterLocked runs f with n.mu held d from now, unless the fake is closed
// by then. n.mu is held.
func (n *Nomad) afterLocked(d time.Duration, f func()) {
	if n.closed {
		return
	}
	n.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer n.wg.Done()
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.timers, t)
		if !n.closed {
			f()
		}
	})
	n.timers[t] = struct{}{}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (n *Nomad) scheduleDelay() time.Duration { return orDefault(n.ScheduleDelay, 20*time.Millisecond) }
func (n *Nomad) startDelay() time.Duration    { return orDefault(n.StartDelay, 30*time.Millisecond) }
func (n *Nomad) stopDelay() time.Duration     { return orDefault(n.StopDelay, 150*time.Millisecond) }
func (n *Nomad) serviceSyncDelay() time.Duration {
	return orDefault(n.ServiceSyncDelay, 10*time.Millisecond)
}

// writeLocked advances the raft index and marks the tables written.
func (n *Nomad) writeLocked(tables ...string) uint64 {
	idx := n.bumpLocked()
	for _, t := range tables {
		n.tables[t] = idx
	}
	return idx
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

// LiveAllocs lists "name (desired/client status)" of every allocation that
// is not terminal yet (pending or running, whatever its desired status),
// sorted. Purged jobs' allocations count until they stop, as in Nomad.
func (n *Nomad) LiveAllocs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, fa := range n.allocs {
		if !terminal(fa.a.ClientStatus) {
			out = append(out, fmt.Sprintf("%s (desired=%s client=%s)", fa.a.Name, fa.a.DesiredStatus, fa.a.ClientStatus))
		}
	}
	sort.Strings(out)
	return out
}

func terminal(clientStatus string) bool {
	switch clientStatus {
	case napi.AllocClientStatusComplete, napi.AllocClientStatusFailed, napi.AllocClientStatusLost:
		return true
	}
	return false
}

// Job returns a copy of a registered job as the fake stored it.
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
			n.query(w, r, tableJobs, func() (any, error) {
				j, ok := n.jobs[nsKey(ns, id)]
				if !ok {
					return nil, errNotFound("job not found")
				}
				return j.job, nil
			})
		case sub == "allocations" && r.Method == http.MethodGet:
			n.query(w, r, tableAllocs, func() (any, error) { return n.jobAllocsLocked(ns, id, boolParam(r, "all")), nil })
		case sub == "evaluations" && r.Method == http.MethodGet:
			n.query(w, r, tableEvals, func() (any, error) {
				out := []*napi.Evaluation{}
				for _, e := range n.evals {
					if e.JobID == id && nsKey(e.Namespace, "") == nsKey(ns, "") {
						out = append(out, e)
					}
				}
				sort.Slice(out, func(a, b int) bool { return out[a].CreateIndex > out[b].CreateIndex })
				return out, nil
			})
		case sub == "deployment" && r.Method == http.MethodGet:
			n.query(w, r, tableDeployments, func() (any, error) { return n.latestDeploymentLocked(ns, id), nil })
		case sub == "deployments" && r.Method == http.MethodGet:
			n.query(w, r, tableDeployments, func() (any, error) {
				out := []*napi.Deployment{}
				if d := n.latestDeploymentLocked(ns, id); d != nil {
					out = append(out, d)
				}
				return out, nil
			})
		default:
			httpError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL path %q", p))
		}
	case p == "/v1/agent/self" && r.Method == http.MethodGet:
		n.agentSelf(w)
	case p == "/v1/agent/members" && r.Method == http.MethodGet:
		n.agentMembers(w)
	case strings.HasPrefix(p, "/v1/var/"):
		n.variable(w, r, ns, strings.TrimPrefix(p, "/v1/var/"))
	case p == "/v1/vars" && r.Method == http.MethodGet:
		n.listVariables(w, r, ns)
	case strings.HasPrefix(p, "/v1/allocation/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/v1/allocation/")
		n.query(w, r, tableAllocs, func() (any, error) {
			fa, ok := n.allocs[id]
			if !ok {
				return nil, errNotFound("alloc not found")
			}
			return fa.a, nil
		})
	case strings.HasPrefix(p, "/v1/client/fs/logs/") && r.Method == http.MethodGet:
		n.logs(w, r, strings.TrimPrefix(p, "/v1/client/fs/logs/"))
	case strings.HasPrefix(p, "/v1/client/allocation/") && strings.HasSuffix(p, "/checks") && r.Method == http.MethodGet:
		n.allocChecks(w, strings.TrimSuffix(strings.TrimPrefix(p, "/v1/client/allocation/"), "/checks"))
	case strings.HasPrefix(p, "/v1/client/allocation/") && strings.HasSuffix(p, "/stats") && r.Method == http.MethodGet:
		n.allocStats(w, strings.TrimSuffix(strings.TrimPrefix(p, "/v1/client/allocation/"), "/stats"))
	case strings.HasPrefix(p, "/v1/node/") && r.Method == http.MethodGet:
		n.node(w, strings.TrimPrefix(p, "/v1/node/"))
	case p == "/v1/services" && r.Method == http.MethodGet:
		n.query(w, r, tableServices, func() (any, error) { return n.listServicesLocked(ns), nil })
	case strings.HasPrefix(p, "/v1/service/") && r.Method == http.MethodGet:
		name := strings.TrimPrefix(p, "/v1/service/")
		n.query(w, r, tableServices, func() (any, error) { return n.serviceLocked(ns, name), nil })
	case strings.HasPrefix(p, "/v1/evaluation/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/v1/evaluation/")
		n.query(w, r, tableEvals, func() (any, error) {
			e, ok := n.evals[id]
			if !ok {
				return nil, errNotFound("eval not found")
			}
			return e, nil
		})
	case strings.HasPrefix(p, "/v1/deployment/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/v1/deployment/")
		n.query(w, r, tableDeployments, func() (any, error) {
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

// logs serves GET /v1/client/fs/logs/:alloc?task=&type=stdout|stderr
// &plain=true[&origin=end&offset=N]: the task's log as plain text (the
// framed, non-plain form is not replayed).
func (n *Nomad) logs(w http.ResponseWriter, r *http.Request, allocID string) {
	q := r.URL.Query()
	typ := q.Get("type")
	if typ != "stdout" && typ != "stderr" {
		httpError(w, http.StatusBadRequest, "must provide type as either stdout or stderr")
		return
	}
	if q.Get("task") == "" {
		httpError(w, http.StatusBadRequest, "must provide task name")
		return
	}
	if !boolParam(r, "plain") {
		httpError(w, http.StatusBadRequest, "the fake serves plain=true logs only")
		return
	}
	n.mu.Lock()
	fa, ok := n.allocs[allocID]
	var text string
	if ok {
		text = fa.logs[q.Get("task")+"."+typ]
	}
	n.mu.Unlock()
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Sprintf("Unknown allocation %q", allocID))
		return
	}
	off, _ := strconv.Atoi(q.Get("offset"))
	if off < 0 {
		off = 0
	}
	if q.Get("origin") == "end" {
		if off < len(text) {
			text = text[len(text)-off:]
		}
	} else if off < len(text) {
		text = text[off:]
	} else {
		text = ""
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, text)
}

type notFound string

func (e notFound) Error() string { return string(e) }

func errNotFound(msg string) error { return notFound(msg) }

// query serves a read endpoint with blocking-query semantics on the index
// of the table it reads.
func (n *Nomad) query(w http.ResponseWriter, r *http.Request, table string, read func() (any, error)) {
	n.blockOn(r.Context(), parseIndex(r), parseWait(r), func() uint64 { return n.tables[table] })
	n.mu.Lock()
	v, err := read()
	index := n.tables[table]
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
	n.query(w, r, tableJobs, func() (any, error) {
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

// usesConsul reports whether a job declares a Consul service.
func usesConsul(job *napi.Job) bool {
	for _, tg := range job.TaskGroups {
		for _, s := range tg.Services {
			if s.Provider == "" || s.Provider == "consul" {
				return true
			}
		}
		for _, t := range tg.Tasks {
			for _, s := range t.Services {
				if s.Provider == "" || s.Provider == "consul" {
					return true
				}
			}
		}
	}
	return false
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
	// The agent fills in its region and the default node pool, and adds
	// the Consul version constraint to jobs with Consul services, so the
	// stored job differs from the submitted one as Nomad's does.
	if job.Region == nil || *job.Region == "" {
		job.Region = new("global")
	}
	if job.NodePool == nil || *job.NodePool == "" {
		job.NodePool = new("default")
	}
	job.Canonicalize()
	if err := validate(job); err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if usesConsul(job) {
		for _, tg := range job.TaskGroups {
			tg.Constraints = append(tg.Constraints, consulConstraint())
		}
	}
	addNomadServiceConstraints(job)

	n.mu.Lock()
	defer n.mu.Unlock()
	key := nsKey(*job.Namespace, *job.ID)
	fj, exists := n.jobs[key]
	if exists {
		for _, fa := range n.allocs {
			if fa.a.JobID == *job.ID && fa.a.Namespace == *job.Namespace && !terminal(fa.a.ClientStatus) {
				n.stopAllocLocked(fa)
			}
		}
	} else {
		fj = &fakeJob{createIndex: n.index + 1}
		n.jobs[key] = fj
	}
	index := n.writeLocked(tableJobs, tableEvals)
	fj.job, fj.stop, fj.modifyIndex, fj.submit, fj.status = job, false, index, time.Now().UnixNano(), "pending"
	job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = &fj.createIndex, &index, &index

	eval := &napi.Evaluation{
		ID: newID(), Priority: *job.Priority, Type: *job.Type, TriggeredBy: "job-register",
		Namespace: *job.Namespace, JobID: *job.ID, JobModifyIndex: index,
		Status: "pending", CreateIndex: index, ModifyIndex: index,
		CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano(),
	}
	n.evals[eval.ID] = eval
	n.afterLocked(n.scheduleDelay(), func() { n.scheduleLocked(eval, fj, job) })
	n.writeJSON(w, index, napi.JobRegisterResponse{
		EvalID: eval.ID, EvalCreateIndex: index, JobModifyIndex: index,
	})
}

// scheduleLocked is the scheduler's pass over a registration's evaluation:
// it checks feasibility, then creates the deployment and "pending"
// allocations that start StartDelay later. A job that cannot be placed
// gets FailedTGAllocs and a blocked evaluation, as in Nomad.
func (n *Nomad) scheduleLocked(eval *napi.Evaluation, fj *fakeJob, job *napi.Job) {
	complete := func() {
		eval.Status = "complete"
		eval.ModifyIndex = n.writeLocked(tableEvals, tableJobs, tableAllocs, tableDeployments)
		eval.ModifyTime = time.Now().UnixNano()
	}
	if cur, ok := n.jobs[nsKey(*job.Namespace, *job.ID)]; !ok || cur != fj || fj.job != job {
		complete() // deregistered or replaced meanwhile
		return
	}
	failed := n.feasibleLocked(job)
	if len(failed) > 0 {
		blocked := &napi.Evaluation{
			ID: newID(), Priority: eval.Priority, Type: eval.Type, TriggeredBy: "queued-allocs",
			Namespace: eval.Namespace, JobID: eval.JobID, JobModifyIndex: eval.JobModifyIndex,
			Status: "blocked", StatusDescription: "created to place remaining allocations",
			PreviousEval: eval.ID, FailedTGAllocs: failed, CreateIndex: n.index + 1, ModifyIndex: n.index + 1,
		}
		n.evals[blocked.ID] = blocked
		eval.FailedTGAllocs = failed
		eval.BlockedEval = blocked.ID
		eval.QueuedAllocations = map[string]int{}
		for g := range failed {
			eval.QueuedAllocations[g] = groupCount(job, g)
		}
		complete()
		return
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
			CreateIndex: n.index + 1, ModifyIndex: n.index + 1,
		}
		n.deps[dep.ID] = dep
		for i := 0; i < *tg.Count; i++ {
			n.placeAllocLocked(job, fj, tg, i, dep, eval.ID)
		}
		if *tg.Count == 0 {
			dep.Status, dep.StatusDescription = "successful", "Deployment completed successfully"
		}
	}
	fj.status = "running"
	complete()
}

func groupCount(job *napi.Job, group string) int {
	for _, tg := range job.TaskGroups {
		if *tg.Name == group {
			return *tg.Count
		}
	}
	return 0
}

// feasibleLocked checks drivers and resources like the scheduler's
// feasibility checks and returns the failed task groups' metrics.
func (n *Nomad) feasibleLocked(job *napi.Job) map[string]*napi.AllocationMetric {
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
		if !terminal(fa.a.ClientStatus) && fa.a.DesiredStatus == "run" {
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
		// The drivers are checked first, then the group's constraints,
		// as in Nomad's feasibility stack. A node without Consul has no
		// consul.version attribute for the constraint to match.
		for _, c := range tg.Constraints {
			if c.LTarget == "${attr.consul.version}" && n.consul == nil && m.NodesFiltered == 0 {
				m.NodesFiltered = 1
				m.ConstraintFiltered = map[string]int{c.LTarget + " " + c.Operand + " " + c.RTarget: 1}
				m.ClassFiltered = map[string]int{}
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
	return failed
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

func event(typ, msg string) *napi.TaskEvent {
	return &napi.TaskEvent{Type: typ, DisplayMessage: msg, Time: time.Now().UnixNano()}
}

// placeAllocLocked creates one "pending" allocation on the node and starts
// it StartDelay later.
func (n *Nomad) placeAllocLocked(job *napi.Job, fj *fakeJob, tg *napi.TaskGroup, i int, dep *napi.Deployment, evalID string) {
	id := newID()
	tasks := map[string]*napi.AllocatedTaskResources{}
	states := map[string]*napi.TaskState{}
	for _, t := range tg.Tasks {
		tr := &napi.AllocatedTaskResources{}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(ptrInt(t.Resources.CPU))
			tr.Memory.MemoryMB = int64(ptrInt(t.Resources.MemoryMB))
		}
		tasks[t.Name] = tr
		states[t.Name] = &napi.TaskState{State: "pending", Events: []*napi.TaskEvent{event("Received", "Task received by client")}}
	}
	now := time.Now().UnixNano()
	fa := &fakeAlloc{jobCreate: fj.createIndex, logs: map[string]string{}, a: &napi.Allocation{
		ID: id, EvalID: evalID, Namespace: *job.Namespace, Name: fmt.Sprintf("%s.%s[%d]", *job.ID, *tg.Name, i),
		NodeID: nodeID, NodeName: nodeName,
		JobID: *job.ID, TaskGroup: *tg.Name,
		AllocatedResources: &napi.AllocatedResources{Tasks: tasks},
		DesiredStatus:      "run", ClientStatus: napi.AllocClientStatusPending,
		TaskStates: states, DeploymentID: dep.ID,
		CreateIndex: n.index + 1, ModifyIndex: n.index + 1, AllocModifyIndex: n.index + 1,
		CreateTime: now, ModifyTime: now,
	}}
	n.allocs[id] = fa
	n.afterLocked(n.startDelay(), func() { n.startAllocLocked(fa, tg, dep) })
}

// failAllocLocked ends an allocation whose task failed: events end with
// the restart policy's verdict and "Alloc Unhealthy", as Nomad 1.6.5's do
// for a job with an update block.
func (n *Nomad) failAllocLocked(fa *fakeAlloc, dep *napi.Deployment, events ...*napi.TaskEvent) {
	for _, st := range fa.a.TaskStates {
		st.State, st.Failed, st.FinishedAt = "dead", true, time.Now()
		st.Events = append(st.Events, events...)
		st.Events = append(st.Events, &napi.TaskEvent{Type: "Not Restarting", DisplayMessage: "Policy allows no restarts",
			RestartReason: "Policy allows no restarts", FailsTask: true, Time: time.Now().UnixNano()})
	}
	// The deployment watcher then marks the allocation unhealthy, which
	// Nomad also records as a task event.
	for _, st := range fa.a.TaskStates {
		st.Events = append(st.Events, event("Alloc Unhealthy", "Unhealthy because of failed task"))
	}
	fa.a.ClientStatus, fa.a.ClientDescription = napi.AllocClientStatusFailed, "Failed tasks"
	h := false
	fa.a.DeploymentStatus = &napi.AllocDeploymentStatus{Healthy: &h}
	if dep.Status == "running" {
		dep.Status, dep.StatusDescription = "failed", "Failed due to unhealthy allocations"
	}
	n.writeLocked(tableAllocs, tableDeployments)
}

// startAllocLocked "runs" an allocation: a real HTTP server on 127.0.0.1
// per port label of the group, registered in Consul with the group's
// services and their HTTP checks — or the configured failure.
func (n *Nomad) startAllocLocked(fa *fakeAlloc, tg *napi.TaskGroup, dep *napi.Deployment) {
	if fa.a.DesiredStatus != "run" || terminal(fa.a.ClientStatus) {
		return
	}
	id, name := fa.a.ID, fa.a.Name
	for _, st := range fa.a.TaskStates {
		st.Events = append(st.Events, event("Task Setup", "Building Task Directory"))
	}
	if n.TaskFailure != "" {
		ev := event("Driver Failure", n.TaskFailure)
		ev.DriverError = n.TaskFailure
		n.failAllocLocked(fa, dep, ev)
		return
	}
	if n.TaskExitCode != 0 {
		for _, t := range tg.Tasks {
			fa.logs[t.Name+".stderr"] = n.TaskStderr
		}
		ev := event("Terminated", fmt.Sprintf("Exit Code: %d", n.TaskExitCode))
		ev.ExitCode = n.TaskExitCode
		ev.Details = map[string]string{"exit_code": strconv.Itoa(n.TaskExitCode), "signal": "0", "oom_killed": "false"}
		n.failAllocLocked(fa, dep, event("Started", "Task started by client"), ev)
		return
	}
	status := n.TaskStatus
	if status == 0 {
		status = http.StatusOK
	}
	shared := napi.AllocatedSharedResources{}
	nw := &napi.NetworkResource{Mode: "host", IP: "127.0.0.1"}
	var labels []napi.Port
	for _, gn := range tg.Networks {
		labels = append(labels, gn.DynamicPorts...)
		labels = append(labels, gn.ReservedPorts...)
	}
	var out strings.Builder
	real := n.RunRawExec && len(tg.Tasks) > 0 && tg.Tasks[0].Driver == "raw_exec"
	for _, pl := range labels {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			continue
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if real {
			// The task itself will listen on the port Nomad picked.
			_ = ln.Close()
			shared.Ports = append(shared.Ports, napi.PortMapping{Label: pl.Label, Value: port, To: pl.To, HostIP: "127.0.0.1"})
			nw.DynamicPorts = append(nw.DynamicPorts, napi.Port{Label: pl.Label, Value: port, To: pl.To})
			continue
		}
		body := fmt.Sprintf("hello from %s (alloc %s)\n", name, id[:8])
		srv := &http.Server{Handler: taskHandler(body, status), ReadHeaderTimeout: 10 * time.Second}
		fa.servers = append(fa.servers, srv)
		n.wg.Add(1)
		go func() { defer n.wg.Done(); _ = srv.Serve(ln) }()
		shared.Ports = append(shared.Ports, napi.PortMapping{Label: pl.Label, Value: port, To: pl.To, HostIP: "127.0.0.1"})
		nw.DynamicPorts = append(nw.DynamicPorts, napi.Port{Label: pl.Label, Value: port, To: pl.To})
		fmt.Fprintf(&out, "listening on 127.0.0.1:%d (%s)\n", port, pl.Label)
	}
	shared.Networks = []*napi.NetworkResource{nw}
	fa.a.AllocatedResources.Shared = shared
	if real {
		for _, t := range tg.Tasks {
			p, err := n.startTaskLocked(fa, t, shared.Ports)
			if err != nil {
				ev := event("Driver Failure", err.Error())
				ev.DriverError = err.Error()
				n.failAllocLocked(fa, dep, ev)
				return
			}
			fa.procs = append(fa.procs, p)
			n.watchTaskLocked(fa, dep, p)
		}
	}
	for tn, st := range fa.a.TaskStates {
		st.State, st.StartedAt = "running", time.Now()
		st.Events = append(st.Events, event("Started", "Task started by client"))
		if !real {
			fa.logs[tn+".stdout"] = out.String()
		}
	}
	healthy := false
	fa.a.ClientStatus, fa.a.ClientDescription = napi.AllocClientStatusRunning, "Tasks are running"
	fa.a.DeploymentStatus = &napi.AllocDeploymentStatus{Healthy: &healthy}
	fa.a.ModifyIndex = n.writeLocked(tableAllocs)
	fa.a.ModifyTime = time.Now().UnixNano()

	services := append([]*napi.Service(nil), tg.Services...)
	for _, t := range tg.Tasks {
		services = append(services, t.Services...)
	}
	n.startNomadServicesLocked(fa, tg, shared.Ports)
	for _, s := range services {
		if (s.Provider != "" && s.Provider != "consul") || n.consul == nil {
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
		meta := map[string]string{"external-source": "nomad"}
		for k, v := range s.Meta {
			meta[k] = v
		}
		in := Instance{ID: sid, Name: s.Name, Address: "127.0.0.1", Port: port, Tags: s.Tags, Meta: meta}
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
	if len(fa.consul) == 0 && len(fa.checks) == 0 {
		healthy = true
		n.markHealthLocked(dep)
		return
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

// watchHealth follows the checks of a running allocation: those of its
// Consul instances (serviceIDs) and the nomad-provider checks its client
// runs (fakeAlloc.checks).
func (n *Nomad) watchHealth(allocID, depID string, serviceIDs []string, failFast bool) {
	defer n.wg.Done()
	for {
		all, critical := true, false
		if len(serviceIDs) > 0 {
			for _, in := range n.consul.Instances() {
				if slices.Contains(serviceIDs, in.ID) && in.Status != StatusPassing {
					all = false
					critical = critical || in.Status == StatusCritical
				}
			}
			// A just-registered check is critical until it first
			// runs; only a check that ran counts.
			critical = critical && checksRan(n.consul, serviceIDs)
		}
		n.mu.Lock()
		fa, ok := n.allocs[allocID]
		if !ok || fa.a.ClientStatus != napi.AllocClientStatusRunning || fa.a.DesiredStatus != "run" {
			n.mu.Unlock()
			return
		}
		// A nomad-provider check is "pending" until it first runs, then
		// "success" or "failure".
		for _, c := range fa.checks {
			if c.Mode == "healthiness" && c.Status != checkSuccess {
				all = false
				critical = critical || c.Status == checkFailure
			}
		}
		if failFast && critical {
			h := false
			fa.a.DeploymentStatus.Healthy = &h
			if d, ok := n.deps[depID]; ok && d.Status == "running" {
				d.Status, d.StatusDescription = "failed", "Failed due to unhealthy allocations"
				d.ModifyIndex = n.writeLocked(tableDeployments, tableAllocs)
			}
			n.mu.Unlock()
			return
		}
		if all {
			h := true
			fa.a.DeploymentStatus.Healthy = &h
			n.writeLocked(tableAllocs)
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
	if d.Status != "running" {
		return
	}
	d.Status, d.StatusDescription = "successful", "Deployment completed successfully"
	d.ModifyIndex = n.writeLocked(tableDeployments)
}

// stopAllocLocked is the client stopping an allocation whose desired
// status became "stop": its Consul services go first (its nomad-provider
// registrations ServiceSyncDelay later), the task is killed StopDelay
// later.
func (n *Nomad) stopAllocLocked(fa *fakeAlloc) {
	fa.a.DesiredStatus, fa.a.DesiredDescription = "stop", "alloc is being stopped"
	if n.consul != nil {
		for _, sid := range fa.consul {
			n.consul.Deregister(sid)
		}
	}
	fa.consul = nil
	n.stopNomadServicesLocked(fa)
	for _, st := range fa.a.TaskStates {
		if st.State != "dead" {
			st.Events = append(st.Events, event("Killing", "Sent interrupt. Waiting 5s before force killing"))
		}
	}
	n.writeLocked(tableAllocs)
	for _, p := range fa.procs {
		p.signal(syscall.SIGINT)
	}
	if terminal(fa.a.ClientStatus) {
		return
	}
	n.afterLocked(n.stopDelay(), func() {
		if terminal(fa.a.ClientStatus) {
			return
		}
		n.killAllocLocked(fa)
		for _, st := range fa.a.TaskStates {
			st.State, st.FinishedAt = "dead", time.Now()
			st.Events = append(st.Events, event("Killed", "Task successfully killed"))
		}
		fa.a.ModifyIndex = n.writeLocked(tableAllocs)
	})
}

// watchTaskLocked fails fa when p's process ends while the allocation
// should run, as Nomad 1.6.5 does for a service job's task (restart
// attempts 0, mode "fail"), whatever the exit code: "Terminated" with
// the exit code, then "Not Restarting", allocation failed. A task that
// ends because the allocation was told to stop is left to the stop.
func (n *Nomad) watchTaskLocked(fa *fakeAlloc, dep *napi.Deployment, p *taskProc) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		<-p.done // Close kills every task, so this ends
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.closed || fa.a.DesiredStatus != "run" || terminal(fa.a.ClientStatus) {
			return
		}
		code := -1
		if ps := p.cmd.ProcessState; ps != nil {
			code = ps.ExitCode()
		}
		fa.logs[p.task+".stdout"], fa.logs[p.task+".stderr"] = p.stdout.String(), p.stderr.String()
		n.stopNomadServicesLocked(fa)
		// Nomad 1.6.5's event carries the code in ExitCode and Details too.
		ev := event("Terminated", fmt.Sprintf("Exit Code: %d", code))
		ev.ExitCode = code
		ev.Details = map[string]string{"exit_code": strconv.Itoa(code), "signal": "0", "oom_killed": "false"}
		n.failAllocLocked(fa, dep, ev)
		fa.a.ModifyIndex = n.writeLocked(tableAllocs)
	}()
}

// killAllocLocked stops an allocation's servers and services at once.
func (n *Nomad) killAllocLocked(fa *fakeAlloc) {
	for _, s := range fa.servers {
		_ = s.Close()
	}
	fa.servers = nil
	for _, p := range fa.procs {
		p.kill()
		fa.logs[p.task+".stdout"], fa.logs[p.task+".stderr"] = p.stdout.String(), p.stderr.String()
	}
	fa.procs = nil
	if n.consul != nil {
		for _, sid := range fa.consul {
			n.consul.Deregister(sid)
		}
	}
	fa.consul = nil
	n.removeNomadServicesLocked(fa)
	fa.a.ClientStatus, fa.a.DesiredStatus = napi.AllocClientStatusComplete, "stop"
	fa.a.ClientDescription = "All tasks have completed"
}

// jobAllocsLocked lists a job's allocations like Nomad: while the job
// exists, only those of its current incarnation (same create index)
// unless all; once it is purged, every allocation left under its id.
func (n *Nomad) jobAllocsLocked(ns, id string, all bool) []*napi.AllocationListStub {
	fj := n.jobs[nsKey(ns, id)]
	out := []*napi.AllocationListStub{}
	for _, fa := range n.allocs {
		a := fa.a
		if a.JobID != id || nsKey(a.Namespace, "") != nsKey(ns, "") {
			continue
		}
		if !all && fj != nil && fa.jobCreate != fj.createIndex {
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

// deregister answers at once; the allocations stop asynchronously (see
// Nomad). A job that does not exist is not an error: Nomad answers 200
// with an empty EvalID.
func (n *Nomad) deregister(w http.ResponseWriter, r *http.Request, ns, id string) {
	purge := r.URL.Query().Get("purge") == "true"
	n.mu.Lock()
	defer n.mu.Unlock()
	key := nsKey(ns, id)
	fj, ok := n.jobs[key]
	if !ok {
		n.writeJSON(w, 0, napi.JobDeregisterResponse{}) // as Nomad: index 0 too
		return
	}
	index := n.writeLocked(tableJobs, tableEvals)
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
		Status: "pending", CreateIndex: index, ModifyIndex: index}
	n.evals[eval.ID] = eval
	n.afterLocked(n.scheduleDelay(), func() {
		for _, fa := range n.allocs {
			if fa.a.JobID == id && nsKey(fa.a.Namespace, "") == nsKey(ns, "") && fa.a.DesiredStatus == "run" {
				n.stopAllocLocked(fa)
			}
		}
		eval.Status = "complete"
		eval.ModifyIndex = n.writeLocked(tableEvals)
	})
	n.writeJSON(w, index, napi.JobDeregisterResponse{EvalID: eval.ID, EvalCreateIndex: index, JobModifyIndex: index})
}
