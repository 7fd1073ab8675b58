package fake

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	napi "github.com/hashicorp/nomad/api"
)

// Nomad's native service discovery, as a Nomad 1.6 agent serves it for
// services with provider "nomad":
//
//   - registration adds the constraints Nomad's job admission adds:
//     "${attr.nomad.service_discovery} = true", and
//     "${attr.nomad.version} semver >= 1.4.0" when such a service has
//     checks (the fake's node satisfies both);
//   - once an allocation's task runs, its client registers each service
//     (one ServiceRegistration per allocation and service, id
//     "_nomad-task-<alloc>-group-<group>-<service>-<port>", the format
//     Consul registrations use) ServiceSyncDelay later, and removes it
//     ServiceSyncDelay after the allocation is told to stop (before the
//     task is killed); the servers drop what is left when the allocation
//     is terminal;
//   - GET /v1/services lists the names and tags per namespace, GET
//     /v1/service/:name the registrations (200 and [] for a name nobody
//     registered), both as blocking queries on the registrations table;
//   - the client runs the services' http and tcp checks itself, at their
//     interval (capped by MaxCheckInterval): http is "success" on 200 with
//     the output "nomad: http ok", "success" below 400 and "failure" from
//     400 with the response body as output; tcp is "success" ("nomad: tcp
//     ok") when it connects. Until a check first ran it is "pending". GET
//     /v1/client/allocation/:id/checks reports them, by check id. With
//     health_check = "checks" the allocation turns healthy once every
//     check succeeds; a failing check keeps the deployment running (or
//     fails it with UnhealthyFails).

// Check statuses of nomad-provider checks, as Nomad reports them.
const (
	checkSuccess = "success"
	checkFailure = "failure"
	checkPending = "pending"
)

// outputLimit is how much of an http check's answer Nomad keeps (3 KiB).
const outputLimit = 3 * 1024

// consulConstraint is the constraint Nomad adds to groups with Consul
// services.
func consulConstraint() *napi.Constraint {
	return napi.NewConstraint("${attr.consul.version}", "semver", ">= 1.7.0")
}

// addNomadServiceConstraints adds the constraints of nomad-provider
// services to the groups that declare them.
func addNomadServiceConstraints(job *napi.Job) {
	for _, tg := range job.TaskGroups {
		uses, checks := false, false
		services := append([]*napi.Service(nil), tg.Services...)
		for _, t := range tg.Tasks {
			services = append(services, t.Services...)
		}
		for _, s := range services {
			if s.Provider == "nomad" {
				uses, checks = true, checks || len(s.Checks) > 0
			}
		}
		if uses {
			tg.Constraints = append(tg.Constraints, napi.NewConstraint("${attr.nomad.service_discovery}", "=", "true"))
		}
		if checks {
			tg.Constraints = append(tg.Constraints, napi.NewConstraint("${attr.nomad.version}", "semver", ">= 1.4.0"))
		}
	}
}

// ServiceRegistrations lists the ids of the nomad-provider service
// registrations Nomad holds, sorted.
func (n *Nomad) ServiceRegistrations() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for id := range n.services {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// startNomadServicesLocked registers a just-started allocation's
// nomad-provider services and starts their checks.
func (n *Nomad) startNomadServicesLocked(fa *fakeAlloc, tg *napi.TaskGroup, ports []napi.PortMapping) {
	type owned struct {
		s     *napi.Service
		owner string // "group-<group>" or the task's name
	}
	var services []owned
	for _, s := range tg.Services {
		services = append(services, owned{s, "group-" + *tg.Name})
	}
	for _, t := range tg.Tasks {
		for _, s := range t.Services {
			services = append(services, owned{s, t.Name})
		}
	}
	for _, o := range services {
		s := o.s
		if s.Provider != "nomad" {
			continue
		}
		reg := &napi.ServiceRegistration{
			ID:          fmt.Sprintf("_nomad-task-%s-%s-%s-%s", fa.a.ID, o.owner, s.Name, s.PortLabel),
			ServiceName: s.Name, Namespace: nsKeyNamespace(fa.a.Namespace), NodeID: fa.a.NodeID,
			Datacenter: "dc1", JobID: fa.a.JobID, AllocID: fa.a.ID, Tags: slices.Clone(s.Tags),
			Address: "127.0.0.1", Port: portValue(ports, s.PortLabel),
		}
		fa.nomadServices = append(fa.nomadServices, reg.ID)
		n.afterLocked(n.serviceSyncDelay(), func() {
			if fa.a.DesiredStatus != "run" || fa.a.ClientStatus != napi.AllocClientStatusRunning {
				return
			}
			n.services[reg.ID] = reg
			reg.CreateIndex = n.writeLocked(tableServices)
			reg.ModifyIndex = reg.CreateIndex
		})
		for i := range s.Checks {
			n.startNomadCheckLocked(fa, s, s.Checks[i], ports)
		}
	}
}

// startNomadCheckLocked starts one nomad-provider check of an allocation.
func (n *Nomad) startNomadCheckLocked(fa *fakeAlloc, s *napi.Service, c napi.ServiceCheck, ports []napi.PortMapping) {
	if fa.checks == nil {
		fa.checks = map[string]*napi.AllocCheckStatus{}
	}
	sum := sha1.Sum([]byte(fa.a.ID + "/" + s.Name + "/" + c.Name))
	mode := "healthiness"
	if c.OnUpdate == "ignore" {
		mode = "readiness" // does not gate the deployment
	}
	st := &napi.AllocCheckStatus{ID: hex.EncodeToString(sum[:]), Check: c.Name, Group: fa.a.Name, Mode: mode,
		Service: s.Name, Task: s.TaskName, Status: checkPending, Timestamp: time.Now().Unix()}
	fa.checks[st.ID] = st
	label := c.PortLabel
	if label == "" {
		label = s.PortLabel
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(portValue(ports, label)))
	interval, timeout := c.Interval, c.Timeout
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
	stop := make(chan struct{})
	fa.checkStops = append(fa.checkStops, stop)
	n.wg.Add(1)
	go n.runNomadCheck(st, c, addr, interval, timeout, stop)
}

// runNomadCheck runs a check every interval until stop is closed (with
// n.mu held, so no result is written after that).
func (n *Nomad) runNomadCheck(st *napi.AllocCheckStatus, c napi.ServiceCheck, addr string, interval, timeout time.Duration, stop chan struct{}) {
	defer n.wg.Done()
	hc := &http.Client{Timeout: timeout}
	defer hc.CloseIdleConnections()
	for {
		status, code, output := probe(hc, c, addr, timeout)
		n.mu.Lock()
		select {
		case <-stop:
			n.mu.Unlock()
			return
		default:
		}
		st.Status, st.StatusCode, st.Output, st.Timestamp = status, code, output, time.Now().Unix()
		n.mu.Unlock()
		select {
		case <-stop:
			return
		case <-time.After(interval):
		}
	}
}

// probe runs one http or tcp check as Nomad's client does and returns its
// status, HTTP status code and output.
func probe(hc *http.Client, c napi.ServiceCheck, addr string, timeout time.Duration) (string, int, string) {
	if c.Type == "tcp" {
		conn, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return checkFailure, 0, err.Error()
		}
		conn.Close()
		return checkSuccess, 0, "nomad: tcp ok"
	}
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		return checkFailure, 0, "nomad: " + err.Error()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return checkFailure, 0, "nomad: " + err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return checkSuccess, resp.StatusCode, "nomad: http ok"
	}
	var body bytes.Buffer
	_, _ = io.Copy(&body, io.LimitReader(resp.Body, outputLimit))
	status := checkSuccess
	if resp.StatusCode >= 400 {
		status = checkFailure
	}
	return status, resp.StatusCode, body.String()
}

// stopNomadServicesLocked is the client stopping an allocation: its checks
// end at once, its registrations go ServiceSyncDelay later.
func (n *Nomad) stopNomadServicesLocked(fa *fakeAlloc) {
	n.stopChecksLocked(fa)
	if len(fa.nomadServices) > 0 {
		n.afterLocked(n.serviceSyncDelay(), func() { n.removeNomadServicesLocked(fa) })
	}
}

func (n *Nomad) stopChecksLocked(fa *fakeAlloc) {
	for _, ch := range fa.checkStops {
		close(ch)
	}
	fa.checkStops = nil
}

// removeNomadServicesLocked removes an allocation's registrations at once
// (and stops its checks).
func (n *Nomad) removeNomadServicesLocked(fa *fakeAlloc) {
	n.stopChecksLocked(fa)
	removed := false
	for _, id := range fa.nomadServices {
		if _, ok := n.services[id]; ok {
			delete(n.services, id)
			removed = true
		}
	}
	fa.nomadServices = nil
	if removed {
		n.writeLocked(tableServices)
	}
}

// listServicesLocked is GET /v1/services: per namespace (or every one for
// "*"), the service names with their tags, deduplicated and sorted.
func (n *Nomad) listServicesLocked(ns string) []*napi.ServiceRegistrationListStub {
	byNS := map[string]map[string][]string{}
	for _, r := range n.services {
		if ns != "*" && r.Namespace != nsKeyNamespace(ns) {
			continue
		}
		if byNS[r.Namespace] == nil {
			byNS[r.Namespace] = map[string][]string{}
		}
		tags := byNS[r.Namespace][r.ServiceName]
		for _, t := range r.Tags {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		if tags == nil {
			tags = []string{}
		}
		byNS[r.Namespace][r.ServiceName] = tags
	}
	out := []*napi.ServiceRegistrationListStub{}
	for nsName, svcs := range byNS {
		stub := &napi.ServiceRegistrationListStub{Namespace: nsName}
		for name, tags := range svcs {
			sort.Strings(tags)
			stub.Services = append(stub.Services, &napi.ServiceRegistrationStub{ServiceName: name, Tags: tags})
		}
		sort.Slice(stub.Services, func(i, j int) bool { return stub.Services[i].ServiceName < stub.Services[j].ServiceName })
		out = append(out, stub)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// serviceLocked is GET /v1/service/:name: the registrations of a name in
// a namespace, sorted by id.
func (n *Nomad) serviceLocked(ns, name string) []*napi.ServiceRegistration {
	out := []*napi.ServiceRegistration{}
	for _, r := range n.services {
		if r.ServiceName == name && r.Namespace == nsKeyNamespace(ns) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// allocChecks serves GET /v1/client/allocation/:id/checks: the latest
// result of each nomad-provider check of the allocation, by check id.
func (n *Nomad) allocChecks(w http.ResponseWriter, allocID string) {
	n.mu.Lock()
	fa, ok := n.allocs[allocID]
	out := napi.AllocCheckStatuses{}
	if ok {
		for id, st := range fa.checks {
			out[id] = *st
		}
	}
	n.mu.Unlock()
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Sprintf("Unknown allocation %q", allocID))
		return
	}
	n.writeJSON(w, 0, out)
}

// nsKeyNamespace is a namespace as Nomad stores it ("" is "default").
func nsKeyNamespace(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func portValue(ports []napi.PortMapping, label string) int {
	for _, p := range ports {
		if p.Label == label {
			return p.Value
		}
	}
	return 0
}
