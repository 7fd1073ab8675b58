package fake_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers/nomad/fake"
)

type answer struct {
	code   int
	header http.Header
	body   string
}

func do(t *testing.T, method, url, body string, header map[string]string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// eventually polls cond until it holds, for at most 10s (a bound, not a
// speed assertion: the fakes are asynchronous like Nomad).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not true after 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
}

func TestConsulBlockingQuery(t *testing.T) {
	c := fake.NewConsul()
	defer c.Close()
	url := c.URL() + "/v1/health/service/web?passing=true"

	a := do(t, "GET", url, "", nil)
	if a.code != 200 || strings.TrimSpace(a.body) != "[]" {
		t.Fatalf("empty service: %d %q", a.code, a.body)
	}
	idx, err := strconv.ParseUint(a.header.Get("X-Consul-Index"), 10, 64)
	if err != nil || idx == 0 {
		t.Fatalf("X-Consul-Index = %q", a.header.Get("X-Consul-Index"))
	}

	// A blocking query at the current index returns only after a change.
	done := make(chan answer)
	go func() {
		done <- do(t, "GET", url+"&index="+strconv.FormatUint(idx, 10)+"&wait=30s", "", nil)
	}()
	c.Register(fake.Instance{ID: "web-1", Name: "web", Address: "127.0.0.1", Port: 8080, Status: fake.StatusPassing})
	a = <-done
	var entries []struct {
		Service struct {
			ID, Service, Address string
			Port                 int
		}
		Checks []struct{ Status string }
	}
	decode(t, a.body, &entries)
	if len(entries) != 1 || entries[0].Service.ID != "web-1" || entries[0].Service.Port != 8080 {
		t.Fatalf("after register: %s", a.body)
	}
	next, _ := strconv.ParseUint(a.header.Get("X-Consul-Index"), 10, 64)
	if next <= idx {
		t.Errorf("index did not grow: %d → %d", idx, next)
	}

	// A blocking query whose wait elapses answers with the same index.
	a = do(t, "GET", url+"&index="+strconv.FormatUint(next, 10)+"&wait=20ms", "", nil)
	if a.header.Get("X-Consul-Index") != strconv.FormatUint(next, 10) {
		t.Errorf("timed-out query index %s, want %d", a.header.Get("X-Consul-Index"), next)
	}

	// ?passing filters out critical instances; without it they show.
	c.Register(fake.Instance{ID: "web-2", Name: "web", Address: "127.0.0.1", Port: 8081, Status: fake.StatusCritical})
	decode(t, do(t, "GET", url, "", nil).body, &entries)
	if len(entries) != 1 {
		t.Errorf("passing=true returned %d entries, want 1", len(entries))
	}
	decode(t, do(t, "GET", c.URL()+"/v1/health/service/web", "", nil).body, &entries)
	if len(entries) != 2 {
		t.Errorf("all returned %d entries, want 2", len(entries))
	}

	if a := do(t, "GET", c.URL()+"/v1/health/service/web?index=abc", "", nil); a.code != 400 {
		t.Errorf("bad index: %d", a.code)
	}
}

func TestConsulACL(t *testing.T) {
	c := fake.NewConsul()
	defer c.Close()
	c.Token = "secret"
	if a := do(t, "GET", c.URL()+"/v1/health/service/web", "", nil); a.code != 403 || !strings.Contains(a.body, "ACL not found") {
		t.Errorf("no token: %d %q", a.code, a.body)
	}
	if a := do(t, "GET", c.URL()+"/v1/health/service/web", "", map[string]string{"X-Consul-Token": "secret"}); a.code != 200 {
		t.Errorf("with token: %d %q", a.code, a.body)
	}
}

const jobJSON = `{"Job": {"ID": "hello-world", "Name": "hello-world", "Type": "service",
 "Datacenters": ["dc1"], "Meta": {"dev.benchflow.managed": "true"},
 "TaskGroups": [{"Name": "servers", "Count": 2,
   "Networks": [{"DynamicPorts": [{"Label": "www"}]}],
   "Services": [{"Name": "hello-world", "PortLabel": "www", "Provider": "consul",
     "Checks": [{"Type": "http", "Path": "/", "Interval": 1000000000, "Timeout": 2000000000}]}],
   "Tasks": [{"Name": "web", "Driver": "%s", "Config": {"command": "x"},
     "Resources": {"CPU": %d, "MemoryMB": 64}}]}]}}`

func TestNomadRegisterRunDeregister(t *testing.T) {
	c := fake.NewConsul()
	defer c.Close()
	n := fake.NewNomad(c)
	defer n.Close()

	a := do(t, "PUT", n.URL()+"/v1/jobs", strings.Replace(strings.Replace(jobJSON, "%s", "raw_exec", 1), "%d", "100", 1), nil)
	if a.code != 200 || a.header.Get("X-Nomad-Index") == "" {
		t.Fatalf("register: %d %q", a.code, a.body)
	}
	var reg struct {
		EvalID         string
		JobModifyIndex uint64
	}
	decode(t, a.body, &reg)
	if reg.EvalID == "" || reg.JobModifyIndex == 0 {
		t.Fatalf("register answer %s", a.body)
	}
	var ev struct {
		Status         string
		JobID          string
		FailedTGAllocs map[string]any
	}
	// The evaluation completes asynchronously, as in Nomad.
	eventually(t, "evaluation complete", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/evaluation/"+reg.EvalID, "", nil).body, &ev)
		return ev.Status == "complete"
	})
	if ev.JobID != "hello-world" || len(ev.FailedTGAllocs) != 0 {
		t.Errorf("evaluation %+v", ev)
	}
	// The stored job carries what the agent fills in.
	var job struct {
		Region, NodePool string
		TaskGroups       []struct {
			Constraints []struct{ LTarget, Operand, RTarget string }
		}
	}
	decode(t, do(t, "GET", n.URL()+"/v1/job/hello-world", "", nil).body, &job)
	if job.Region != "global" || job.NodePool != "default" || len(job.TaskGroups[0].Constraints) != 1 ||
		job.TaskGroups[0].Constraints[0].LTarget != "${attr.consul.version}" {
		t.Errorf("stored job %+v", job)
	}
	var allocs []struct {
		ID, Name, ClientStatus, DesiredStatus, TaskGroup string
	}
	eventually(t, "2 running allocations", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/hello-world/allocations", "", nil).body, &allocs)
		return len(allocs) == 2 && allocs[0].ClientStatus == "running" && allocs[1].ClientStatus == "running"
	})
	if allocs[0].TaskGroup != "servers" {
		t.Fatalf("allocations %+v", allocs)
	}
	// Consul entries carry what Nomad puts there.
	eventually(t, "instances registered", func() bool { return len(c.Instances()) == 4 })
	var entries []struct {
		Service struct{ Meta map[string]string }
		Checks  []struct{ CheckID string }
	}
	decode(t, do(t, "GET", c.URL()+"/v1/health/service/hello-world", "", nil).body, &entries)
	if len(entries) != 2 || entries[0].Service.Meta["external-source"] != "nomad" ||
		!regexp.MustCompile(`^_nomad-check-[0-9a-f]{40}$`).MatchString(entries[0].Checks[1].CheckID) {
		t.Errorf("consul entries %+v", entries)
	}
	for _, own := range []string{"nomad", "nomad-client"} {
		if a := do(t, "GET", c.URL()+"/v1/health/service/"+own, "", nil); !strings.Contains(a.body, `"external-source":"nomad"`) {
			t.Errorf("Nomad's own service %s: %s", own, a.body)
		}
	}
	// The client serves the task's logs.
	if a := do(t, "GET", n.URL()+"/v1/client/fs/logs/"+allocs[0].ID+"?task=web&type=stdout&plain=true", "", nil); a.code != 200 || !strings.Contains(a.body, "listening on 127.0.0.1:") {
		t.Errorf("logs: %d %q", a.code, a.body)
	}
	var alloc struct {
		AllocatedResources struct {
			Shared struct {
				Ports []struct {
					Label  string
					Value  int
					HostIP string
				}
			}
		}
	}
	decode(t, do(t, "GET", n.URL()+"/v1/allocation/"+allocs[0].ID, "", nil).body, &alloc)
	ports := alloc.AllocatedResources.Shared.Ports
	if len(ports) != 1 || ports[0].Label != "www" || ports[0].HostIP != "127.0.0.1" {
		t.Fatalf("ports %+v", ports)
	}
	// The allocation is a real server.
	url := "http://127.0.0.1:" + strconv.Itoa(ports[0].Value) + "/"
	if a := do(t, "GET", url, "", nil); a.code != 200 || !strings.Contains(a.body, "hello-world.servers[") {
		t.Errorf("task answered %d %q", a.code, a.body)
	}

	// Deleting a job that does not exist is not an error in Nomad.
	if a := do(t, "DELETE", n.URL()+"/v1/job/nope?purge=true", "", nil); a.code != 200 || !strings.Contains(a.body, `"EvalID":""`) {
		t.Errorf("deregister unknown: %d %q", a.code, a.body)
	}
	a = do(t, "DELETE", n.URL()+"/v1/job/hello-world?purge=true", "", nil)
	if a.code != 200 || !strings.Contains(a.body, `"EvalID":"`) || strings.Contains(a.body, `"EvalID":""`) {
		t.Fatalf("deregister: %d %q", a.code, a.body)
	}
	if len(n.Jobs()) != 0 {
		t.Errorf("after purge: jobs %v", n.Jobs())
	}
	// The allocations stop asynchronously; after the purge they are
	// still listed under the job's id until they are terminal.
	eventually(t, "allocations stopped", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/hello-world/allocations", "", nil).body, &allocs)
		return len(allocs) == 2 && allocs[0].ClientStatus == "complete" && allocs[1].ClientStatus == "complete"
	})
	if allocs[0].DesiredStatus != "stop" || len(n.LiveAllocs()) != 0 || len(c.Instances()) != 2 {
		t.Errorf("after stop: allocs %+v live %v consul %v", allocs, n.LiveAllocs(), c.Instances())
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(ports[0].Value)); err == nil {
		c.Close()
		t.Error("task still accepts connections after purge")
	}
}

func TestNomadUnplaceable(t *testing.T) {
	c := fake.NewConsul()
	defer c.Close()
	n := fake.NewNomad(c)
	defer n.Close()
	a := do(t, "PUT", n.URL()+"/v1/jobs", strings.Replace(strings.Replace(jobJSON, "%s", "docker", 1), "%d", "5000", 1), nil)
	var reg struct{ EvalID string }
	decode(t, a.body, &reg)
	var ev struct {
		Status         string
		BlockedEval    string
		TriggeredBy    string
		FailedTGAllocs map[string]struct {
			NodesEvaluated     int
			NodesExhausted     int
			DimensionExhausted map[string]int
		}
	}
	eventually(t, "evaluation complete", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/evaluation/"+reg.EvalID, "", nil).body, &ev)
		return ev.Status == "complete"
	})
	m, ok := ev.FailedTGAllocs["servers"]
	if !ok || m.NodesExhausted != 1 || m.DimensionExhausted["cpu"] != 1 || ev.BlockedEval == "" {
		t.Errorf("evaluation %+v", ev)
	}
	decode(t, do(t, "GET", n.URL()+"/v1/evaluation/"+ev.BlockedEval, "", nil).body, &ev)
	if ev.Status != "blocked" || ev.TriggeredBy != "queued-allocs" {
		t.Errorf("blocked evaluation %+v", ev)
	}
	if len(n.RunningAllocs()) != 0 {
		t.Errorf("unplaceable job runs %v", n.RunningAllocs())
	}
	// Invalid jobs get Nomad's plain-text multierror.
	a = do(t, "PUT", n.URL()+"/v1/jobs", `{"Job": {"ID": "x", "Type": "service", "TaskGroups": []}}`, nil)
	if a.code != 500 || !strings.Contains(a.body, "Missing job task groups") {
		t.Errorf("invalid job: %d %q", a.code, a.body)
	}
}

func TestNomadACL(t *testing.T) {
	n := fake.NewNomad(nil)
	defer n.Close()
	n.Token = "secret"
	if a := do(t, "GET", n.URL()+"/v1/jobs", "", nil); a.code != 403 || a.body != "Permission denied" {
		t.Errorf("no token: %d %q", a.code, a.body)
	}
	if a := do(t, "GET", n.URL()+"/v1/jobs", "", map[string]string{"X-Nomad-Token": "secret"}); a.code != 200 {
		t.Errorf("with token: %d", a.code)
	}
}

func TestAPISIXAdmin(t *testing.T) {
	a := fake.NewAPISIX("key", nil)
	defer a.Close()
	hdr := map[string]string{"X-API-KEY": "key"}
	admin := a.AdminURL() + "/apisix/admin/"

	r := do(t, "GET", admin+"routes", "", map[string]string{"X-API-KEY": "wrong"})
	if r.code != 401 || strings.TrimSpace(r.body) != `{"error_msg":"failed to check token"}` {
		t.Errorf("wrong key: %d %q", r.code, r.body)
	}
	// A method the admin resources do not implement is "not found".
	if r = do(t, "TRACE", admin+"routes/1", "", hdr); r.code != 404 || strings.TrimSpace(r.body) != `{"error_msg":"not found"}` {
		t.Errorf("TRACE: %d %q", r.code, r.body)
	}
	// APISIX's schema: what it rejects and what it accepts.
	for _, c := range []struct{ path, body, want string }{
		{"upstreams/s1", `{"type":"roundrobin","nodes":[{"host":"127.0.0.1","port":1,"weight":1}],"retry":1}`, "additional properties forbidden, found retry"},
		{"upstreams/s1", `{"type":"roundrobin","nodes":[{"host":"127.0.0.1","port":1}]}`, `"nodes" validation failed`},
		{"upstreams/s1", `{"type":"roundrobin","nodes":[{"host":"127.0.0.1","port":1,"weight":1}],"labels":{"run":"a b"}}`, `"labels" validation failed`},
		{"upstreams/s1", `{"type":"roundrobin","nodes":[{"host":"127.0.0.1","port":1,"weight":1}],"labels":{"run":""}}`, `"labels" validation failed`},
		{"upstreams/s1", `{"service_name":"web","discovery_type":"consul","nodes":[{"host":"127.0.0.1","port":1,"weight":1}]}`, "matches both"},
		{"routes/r1", `{"uri":"/*","methods":["GET","GET"],"upstream":{"nodes":{"127.0.0.1:1":1}}}`, "expected unique items but items 1 and 2 are equal"},
		{"routes/r1", `{"uri":"/*","upstream":{"nodes":{"127.0.0.1:1":1}},"upstream_ids":"x"}`, "additional properties forbidden"},
	} {
		r = do(t, "PUT", admin+c.path, c.body, hdr)
		var e struct {
			ErrorMsg string `json:"error_msg"`
		}
		decode(t, r.body, &e)
		if r.code != 400 || !strings.Contains(e.ErrorMsg, c.want) {
			t.Errorf("PUT %s %s: %d %q, want 400 %q", c.path, c.body, r.code, r.body, c.want)
		}
	}
	// type is a free string with a default: an unknown balancer and a
	// missing type are accepted.
	for _, body := range []string{`{"type":"my_balancer","nodes":{"127.0.0.1:1":1}}`, `{"service_name":"web","discovery_type":"consul"}`} {
		if r = do(t, "PUT", admin+"upstreams/s2", body, hdr); r.code != 201 && r.code != 200 {
			t.Errorf("PUT upstream %s: %d %q", body, r.code, r.body)
		}
	}
	do(t, "DELETE", admin+"upstreams/s2", "", hdr)
	r = do(t, "GET", admin+"routes/1", "", hdr)
	if r.code != 404 || strings.TrimSpace(r.body) != `{"message":"Key not found"}` {
		t.Errorf("missing route: %d %q", r.code, r.body)
	}
	r = do(t, "PUT", admin+"routes/1", `{"uri":"/*","upstream_id":"u1"}`, hdr)
	if r.code != 400 || !strings.Contains(r.body, "failed to fetch upstream info by upstream id [u1]") {
		t.Errorf("route without upstream: %d %q", r.code, r.body)
	}
	r = do(t, "PUT", admin+"upstreams/u1", `{"type":"roundrobin"}`, hdr)
	if r.code != 400 || !strings.Contains(r.body, "invalid configuration") {
		t.Errorf("upstream without nodes: %d %q", r.code, r.body)
	}
	r = do(t, "PUT", admin+"upstreams/u1", `{"type":"roundrobin","nodes":[{"host":"127.0.0.1","port":1,"weight":1}]}`, hdr)
	if r.code != 201 {
		t.Fatalf("create upstream: %d %q", r.code, r.body)
	}
	var env struct {
		Key   string
		Value map[string]any
	}
	decode(t, r.body, &env)
	if env.Key != "/apisix/upstreams/u1" || env.Value["id"] != "u1" {
		t.Errorf("envelope %s", r.body)
	}
	if r = do(t, "PUT", admin+"upstreams/u1", `{"nodes":[{"host":"127.0.0.1","port":2,"weight":1}]}`, hdr); r.code != 200 {
		t.Errorf("update upstream: %d", r.code)
	}
	if r = do(t, "PUT", admin+"routes/1", `{"uri":"/exact","methods":["GET"],"upstream_id":"u1"}`, hdr); r.code != 201 {
		t.Fatalf("create route: %d %q", r.code, r.body)
	}
	r = do(t, "DELETE", admin+"upstreams/u1", "", hdr)
	if r.code != 400 || !strings.Contains(r.body, "route [1] is still using it") {
		t.Errorf("delete used upstream: %d %q", r.code, r.body)
	}
	var list struct {
		Total int
		List  []struct{ Key string }
	}
	decode(t, do(t, "GET", admin+"routes", "", hdr).body, &list)
	if list.Total != 1 || list.List[0].Key != "/apisix/routes/1" {
		t.Errorf("list %+v", list)
	}
	// The gateway: unmatched paths and methods get APISIX's 404; a
	// matched route to a dead node a 502.
	gw := a.GatewayURL()
	if r = do(t, "GET", gw+"/other", "", nil); r.code != 404 || !strings.Contains(r.body, "404 Route Not Found") {
		t.Errorf("unmatched: %d %q", r.code, r.body)
	}
	if r = do(t, "POST", gw+"/exact", "x", nil); r.code != 404 {
		t.Errorf("unmatched method: %d", r.code)
	}
	if r = do(t, "GET", gw+"/exact", "", nil); r.code != 502 {
		t.Errorf("dead node: %d %q", r.code, r.body)
	}
	r = do(t, "DELETE", admin+"routes/1", "", hdr)
	if r.code != 200 || !strings.Contains(r.body, `"deleted":"1"`) {
		t.Errorf("delete route: %d %q", r.code, r.body)
	}
	if r = do(t, "DELETE", admin+"upstreams/u1", "", hdr); r.code != 200 {
		t.Errorf("delete upstream: %d", r.code)
	}
	if r = do(t, "DELETE", admin+"upstreams/u1", "", hdr); r.code != 404 {
		t.Errorf("delete twice: %d", r.code)
	}
	if len(a.Routes())+len(a.Upstreams()) != 0 {
		t.Errorf("left: %v %v", a.Routes(), a.Upstreams())
	}
}

// nomadJobJSON is jobJSON with its service in Nomad's own service
// discovery.
var nomadJobJSON = strings.Replace(strings.Replace(strings.Replace(jobJSON, `"Provider": "consul"`, `"Provider": "nomad", "Tags": ["t1"]`, 1),
	"%s", "raw_exec", 1), "%d", "100", 1)

// TestNomadServiceDiscovery: without Consul, a job whose service has
// provider "nomad" is placed with Nomad's implied constraints; its client
// registers one registration per allocation (GET /v1/service/:name, GET
// /v1/services, blocking queries) and runs its checks (GET
// /v1/client/allocation/:id/checks); the purge removes the registrations.
func TestNomadServiceDiscovery(t *testing.T) {
	n := fake.NewNomad(nil)
	defer n.Close()
	if a := do(t, "GET", n.URL()+"/v1/service/hello-world", "", nil); a.code != 200 || strings.TrimSpace(a.body) != "[]" {
		t.Errorf("unknown service: %d %q, want 200 []", a.code, a.body)
	}
	a := do(t, "PUT", n.URL()+"/v1/jobs", nomadJobJSON, nil)
	if a.code != 200 {
		t.Fatalf("register: %d %q", a.code, a.body)
	}
	var job struct {
		TaskGroups []struct {
			Constraints []struct{ LTarget, Operand, RTarget string }
		}
	}
	decode(t, do(t, "GET", n.URL()+"/v1/job/hello-world", "", nil).body, &job)
	var cons []string
	for _, c := range job.TaskGroups[0].Constraints {
		cons = append(cons, c.LTarget+" "+c.Operand+" "+c.RTarget)
	}
	if strings.Join(cons, "|") != "${attr.nomad.service_discovery} = true|${attr.nomad.version} semver >= 1.4.0" {
		t.Errorf("constraints %q", cons)
	}

	type reg struct {
		ID, ServiceName, Namespace, NodeID, Datacenter, JobID, AllocID, Address string
		Tags                                                                    []string
		Port                                                                    int
		CreateIndex, ModifyIndex                                                uint64
	}
	var regs []reg
	var index string
	eventually(t, "2 registrations", func() bool {
		a := do(t, "GET", n.URL()+"/v1/service/hello-world", "", nil)
		decode(t, a.body, &regs)
		index = a.header.Get("X-Nomad-Index")
		return len(regs) == 2
	})
	allocs := map[string]bool{}
	for _, r := range regs {
		allocs[r.AllocID] = true
		if !regexp.MustCompile(`^_nomad-task-[0-9a-f-]{36}-group-servers-hello-world-www$`).MatchString(r.ID) || r.ServiceName != "hello-world" ||
			r.Namespace != "default" || r.NodeID == "" || r.Datacenter != "dc1" || r.JobID != "hello-world" ||
			r.Address != "127.0.0.1" || r.Port == 0 || len(r.Tags) != 1 || r.Tags[0] != "t1" || r.CreateIndex == 0 || r.ModifyIndex != r.CreateIndex {
			t.Errorf("registration %+v", r)
		}
		if a := do(t, "GET", "http://127.0.0.1:"+strconv.Itoa(r.Port)+"/", "", nil); a.code != 200 {
			t.Errorf("registered address answers %d", a.code)
		}
	}
	if len(allocs) != 2 {
		t.Errorf("registrations of %d allocations, want 2", len(allocs))
	}
	if a := do(t, "GET", n.URL()+"/v1/services", "", nil); !strings.Contains(a.body, `[{"Namespace":"default","Services":[{"ServiceName":"hello-world","Tags":["t1"]}]}]`) {
		t.Errorf("services: %q", a.body)
	}
	// The client's checks pass, as Nomad reports them.
	for id := range allocs {
		var checks map[string]struct{ Check, Service, Status, Output, Mode string }
		eventually(t, "check ran", func() bool {
			decode(t, do(t, "GET", n.URL()+"/v1/client/allocation/"+id+"/checks", "", nil).body, &checks)
			for _, c := range checks {
				return c.Status == "success"
			}
			return false
		})
		for _, c := range checks {
			if c.Service != "hello-world" || c.Output != "nomad: http ok" || c.Mode != "healthiness" {
				t.Errorf("check %+v", c)
			}
		}
	}
	var dep struct{ Status string }
	eventually(t, "deployment successful", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/hello-world/deployment", "", nil).body, &dep)
		return dep.Status == "successful"
	})

	// A blocking query on the registrations returns once the purge's
	// stop removed them.
	done := make(chan string, 1)
	go func() {
		resp, err := http.Get(n.URL() + "/v1/service/hello-world?index=" + index + "&wait=10s")
		if err != nil {
			done <- err.Error()
			return
		}
		resp.Body.Close()
		done <- resp.Header.Get("X-Nomad-Index")
	}()
	do(t, "DELETE", n.URL()+"/v1/job/hello-world?purge=true", "", nil)
	eventually(t, "registrations removed", func() bool { return len(n.ServiceRegistrations()) == 0 })
	before, _ := strconv.Atoi(index)
	if after, err := strconv.Atoi(<-done); err != nil || after <= before {
		t.Errorf("blocking query at index %d answered index %d (%v), want a later one", before, after, err)
	}
	if a := do(t, "GET", n.URL()+"/v1/service/hello-world", "", nil); strings.TrimSpace(a.body) != "[]" {
		t.Errorf("after purge: %q", a.body)
	}
	eventually(t, "allocations stopped", func() bool { return len(n.LiveAllocs()) == 0 })
}

// TestNomadFailingNomadCheck: a failing nomad-provider check is reported
// with the status code and the answer's body, and keeps the deployment
// running.
func TestNomadFailingNomadCheck(t *testing.T) {
	n := fake.NewNomad(nil)
	defer n.Close()
	n.TaskStatus = http.StatusServiceUnavailable
	do(t, "PUT", n.URL()+"/v1/jobs", nomadJobJSON, nil)
	var allocs []struct{ ID, ClientStatus string }
	eventually(t, "2 running allocations", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/hello-world/allocations", "", nil).body, &allocs)
		return len(allocs) == 2 && allocs[0].ClientStatus == "running" && allocs[1].ClientStatus == "running"
	})
	var checks map[string]struct {
		Status, Output string
		StatusCode     int
	}
	eventually(t, "check ran", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/client/allocation/"+allocs[0].ID+"/checks", "", nil).body, &checks)
		for _, c := range checks {
			return c.Status != "pending"
		}
		return false
	})
	for _, c := range checks {
		if c.Status != "failure" || c.StatusCode != 503 || c.Output != "task is unhealthy\n" {
			t.Errorf("check %+v", c)
		}
	}
	var dep struct {
		Status     string
		TaskGroups map[string]struct{ HealthyAllocs int }
	}
	decode(t, do(t, "GET", n.URL()+"/v1/job/hello-world/deployment", "", nil).body, &dep)
	if dep.Status != "running" || dep.TaskGroups["servers"].HealthyAllocs != 0 {
		t.Errorf("deployment %+v, want running with no healthy allocation", dep)
	}
	if a := do(t, "GET", n.URL()+"/v1/client/allocation/nope/checks", "", nil); a.code != 404 {
		t.Errorf("checks of an unknown allocation: %d", a.code)
	}
}

// TestNomadWithoutConsulRefusesConsulServices: a Nomad whose client has
// no Consul cannot place a job with a Consul service.
func TestNomadWithoutConsulRefusesConsulServices(t *testing.T) {
	n := fake.NewNomad(nil)
	defer n.Close()
	a := do(t, "PUT", n.URL()+"/v1/jobs", strings.Replace(strings.Replace(jobJSON, "%s", "raw_exec", 1), "%d", "100", 1), nil)
	var reg struct{ EvalID string }
	decode(t, a.body, &reg)
	var ev struct {
		Status         string
		FailedTGAllocs map[string]struct {
			NodesFiltered      int
			ConstraintFiltered map[string]int
		}
	}
	eventually(t, "evaluation complete", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/evaluation/"+reg.EvalID, "", nil).body, &ev)
		return ev.Status == "complete"
	})
	if m := ev.FailedTGAllocs["servers"]; m.NodesFiltered != 1 || m.ConstraintFiltered["${attr.consul.version} semver >= 1.7.0"] != 1 {
		t.Errorf("evaluation %+v", ev)
	}
}

// TestNomadTaskExitFailsAllocation: a raw_exec task of a service job that
// ends on its own, even with exit code 0, fails its allocation with
// "Terminated" and "Not Restarting", as Nomad 1.6.5 does.
func TestNomadTaskExitFailsAllocation(t *testing.T) {
	n := fake.NewNomad(nil)
	defer n.Close()
	n.RunRawExec = true
	job := `{"Job": {"ID": "quits", "Name": "quits", "Type": "service", "Datacenters": ["dc1"],
	 "TaskGroups": [{"Name": "g", "Count": 1,
	   "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sh", "args": ["-c", "echo bye; exit 0"]},
	     "Resources": {"CPU": 100, "MemoryMB": 64}}]}]}}`
	if a := do(t, "PUT", n.URL()+"/v1/jobs", job, nil); a.code != 200 {
		t.Fatalf("register: %d %q", a.code, a.body)
	}
	var allocs []struct {
		ClientStatus, DesiredStatus string
		TaskStates                  map[string]struct {
			Failed bool
			Events []struct{ Type, DisplayMessage string }
		}
	}
	eventually(t, "a failed allocation", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/quits/allocations", "", nil).body, &allocs)
		return len(allocs) == 1 && allocs[0].ClientStatus == "failed"
	})
	st := allocs[0].TaskStates["t"]
	var types []string
	for _, e := range st.Events {
		types = append(types, e.Type+": "+e.DisplayMessage)
	}
	joined := strings.Join(types, "; ")
	if !st.Failed || allocs[0].DesiredStatus != "run" || !strings.Contains(joined, "Terminated: Exit Code: 0") || !strings.Contains(joined, "Not Restarting") {
		t.Errorf("task state failed=%v desired=%s events %s", st.Failed, allocs[0].DesiredStatus, joined)
	}
}

// TestNomadAllocStats: the client's allocation stats list, per running
// task, the pids of the raw_exec task's processes (its shell and the
// child it forked), in Nomad's AllocResourceUsage shape; the allocation's
// node is this machine; an unknown allocation is a 404.
func TestNomadAllocStats(t *testing.T) {
	n := fake.NewNomad(nil)
	defer n.Close()
	n.RunRawExec = true
	job := `{"Job": {"ID": "sleeper", "Name": "sleeper", "Type": "service", "Datacenters": ["dc1"],
	 "TaskGroups": [{"Name": "g", "Count": 1,
	   "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sh", "args": ["-c", "sleep 30 & wait"]},
	     "Resources": {"CPU": 100, "MemoryMB": 64}}]}]}}`
	if a := do(t, "PUT", n.URL()+"/v1/jobs", job, nil); a.code != 200 {
		t.Fatalf("register: %d %q", a.code, a.body)
	}
	var allocs []struct{ ID, NodeID, ClientStatus string }
	eventually(t, "a running allocation", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/sleeper/allocations", "", nil).body, &allocs)
		return len(allocs) == 1 && allocs[0].ClientStatus == "running"
	})
	var usage napi.AllocResourceUsage
	eventually(t, "the task's shell and its sleep in the stats", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/client/allocation/"+allocs[0].ID+"/stats", "", nil).body, &usage)
		tu := usage.Tasks["t"]
		if tu == nil || len(tu.Pids) != 2 {
			return false
		}
		comms := map[string]bool{}
		for pid := range tu.Pids {
			b, _ := os.ReadFile("/proc/" + pid + "/comm")
			comms[strings.TrimSpace(string(b))] = true
		}
		return comms["sh"] && comms["sleep"]
	})
	if usage.ResourceUsage == nil || usage.Tasks["t"].ResourceUsage.MemoryStats.RSS == 0 {
		t.Errorf("usage %+v: want the tasks' memory", usage.ResourceUsage)
	}
	var node napi.Node
	decode(t, do(t, "GET", n.URL()+"/v1/node/"+allocs[0].NodeID, "", nil).body, &node)
	if host, _ := os.Hostname(); node.ID != allocs[0].NodeID || node.Attributes["unique.hostname"] != host {
		t.Errorf("node %s: unique.hostname %q, want this host's %q", node.ID, node.Attributes["unique.hostname"], host)
	}
	if a := do(t, "GET", n.URL()+"/v1/client/allocation/nope/stats", "", nil); a.code != 404 {
		t.Errorf("stats of an unknown allocation: %d %q", a.code, a.body)
	}
}

// TestAPISIXAsRecorded replays what APISIX 3.9.1 answered on this
// project's loopback stack (Debian nginx 1.22.1, etcd 3.4.23): the status
// codes, bodies and content types of the admin API, the gateway and the
// control API, byte for byte where the provider reads them.
func TestAPISIXAsRecorded(t *testing.T) {
	c := fake.NewConsul()
	defer c.Close()
	a := fake.NewAPISIX("key", c)
	defer a.Close()
	hdr := map[string]string{"X-API-KEY": "key"}
	admin := a.AdminURL() + "/apisix/admin/"
	body := func(r answer) string { return strings.TrimSpace(r.body) }

	// A missing and a wrong key get the same 401, without a reason.
	for _, h := range []map[string]string{nil, {"X-API-KEY": "wrong"}} {
		if r := do(t, "GET", admin+"routes", "", h); r.code != 401 || body(r) != `{"error_msg":"failed to check token"}` {
			t.Errorf("key %v: %d %q", h, r.code, r.body)
		}
	}
	// The schema's defaults are stored and answered.
	r := do(t, "PUT", admin+"upstreams/gwfix-up", `{"service_name":"gwfix-svc","discovery_type":"consul","type":"roundrobin","labels":{"dev.benchflow.managed":"true"}}`, hdr)
	var up struct {
		Key   string
		Value map[string]any
	}
	decode(t, r.body, &up)
	if r.code != 201 || up.Key != "/apisix/upstreams/gwfix-up" || up.Value["scheme"] != "http" || up.Value["pass_host"] != "pass" ||
		up.Value["hash_on"] != "vars" || up.Value["type"] != "roundrobin" || up.Value["create_time"] == nil {
		t.Errorf("PUT upstream: %d %s", r.code, r.body)
	}
	r = do(t, "PUT", admin+"routes/gwfix-rt", `{"uri":"/gwfix/*","upstream_id":"gwfix-up","methods":["GET","HEAD"]}`, hdr)
	var rt struct{ Value map[string]any }
	decode(t, r.body, &rt)
	if r.code != 201 || rt.Value["status"] != float64(1) || rt.Value["priority"] != float64(0) {
		t.Errorf("PUT route: %d %s", r.code, r.body)
	}
	for _, c := range []struct{ method, path, body, want string }{
		{"PUT", "upstreams/gwfix-up2", `{"nodes":{"127.0.0.1:1":"x"}}`,
			`{"error_msg":"invalid configuration: property \"nodes\" validation failed: object matches none of the required"}`},
		{"PUT", "routes/gwfix-rt4", `{"uri":"/x","upstream_id":"gwfix-up","methods":["GET","GET"]}`,
			`{"error_msg":"invalid configuration: property \"methods\" validation failed: expected unique items but items 1 and 2 are equal"}`},
		{"PUT", "routes/gwfix-rt6", `{"id":"other","uri":"/x","upstream_id":"gwfix-up"}`, `{"error_msg":"wrong route id"}`},
		{"PUT", "routes", `{"uri":"/x","upstream_id":"gwfix-up"}`, `{"error_msg":"missing route id"}`},
		{"DELETE", "upstreams/gwfix-up", "", `{"error_msg":"can not delete this upstream, route [gwfix-rt] is still using it now"}`},
	} {
		if r := do(t, c.method, admin+c.path, c.body, hdr); r.code != 400 || body(r) != c.want {
			t.Errorf("%s %s %s: %d %q, want 400 %q", c.method, c.path, c.body, r.code, r.body, c.want)
		}
	}
	if r := do(t, "PUT", admin+"routes/gwfix-rt5", "not json", hdr); r.code != 400 ||
		!strings.HasPrefix(body(r), `{"error_msg":"invalid request body`) || !strings.Contains(r.body, `"req_body":"not json"`) {
		t.Errorf("PUT a body that is not JSON: %d %q", r.code, r.body)
	}
	// OPTIONS is the CORS answer; HEAD is nginx's 404.
	if r := do(t, "OPTIONS", admin+"routes/gwfix-rt", "", hdr); r.code != 200 || r.body != "" {
		t.Errorf("OPTIONS: %d %q", r.code, r.body)
	}
	if r := do(t, "HEAD", admin+"routes/gwfix-rt", "", hdr); r.code != 404 || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("HEAD: %d %v", r.code, r.header)
	}
	// The gateway: a route whose upstream has no node yet answers nginx's
	// 503 page; a path or method without a route APISIX's 404 JSON,
	// labelled text/plain.
	eventually(t, "the route in the gateway", func() bool { return do(t, "GET", a.GatewayURL()+"/gwfix/a", "", nil).code != 404 })
	r = do(t, "GET", a.GatewayURL()+"/gwfix/a", "", nil)
	if r.code != 503 || r.header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.Contains(r.body, "<head><title>503 Service Temporarily Unavailable</title></head>") {
		t.Errorf("a route without nodes: %d %v %q", r.code, r.header, r.body)
	}
	for _, m := range []string{"POST", "GET"} {
		path := map[string]string{"POST": "/gwfix/a", "GET": "/gwfix-nothing-here"}[m]
		r = do(t, m, a.GatewayURL()+path, "", nil)
		if r.code != 404 || body(r) != `{"error_msg":"404 Route Not Found"}` || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s %s: %d %v %q", m, path, r.code, r.header, r.body)
		}
	}
	for _, c := range []struct{ method, path, want string }{
		{"DELETE", "routes/gwfix-rt", `{"deleted":"1","key":"/apisix/routes/gwfix-rt"}`},
		{"DELETE", "upstreams/gwfix-up", `{"deleted":"1","key":"/apisix/upstreams/gwfix-up"}`},
	} {
		if r := do(t, c.method, admin+c.path, "", hdr); r.code != 200 || body(r) != c.want {
			t.Errorf("%s %s: %d %q", c.method, c.path, r.code, r.body)
		}
		if r := do(t, c.method, admin+c.path, "", hdr); r.code != 404 || body(r) != `{"message":"Key not found"}` {
			t.Errorf("%s %s again: %d %q", c.method, c.path, r.code, r.body)
		}
	}
	// etcd down: the key is still checked, then every call is 503.
	a.SetStoreDown(true)
	if r := do(t, "GET", admin+"routes", "", nil); r.code != 401 {
		t.Errorf("etcd down, no key: %d %q", r.code, r.body)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		if r := do(t, m, admin+"upstreams/gwfix-x", `{"nodes":{"127.0.0.1:1":1}}`, hdr); r.code != 503 || body(r) != `{"error_msg":"has no healthy etcd endpoint available"}` {
			t.Errorf("etcd down, %s: %d %q", m, r.code, r.body)
		}
	}
	a.SetStoreDown(false)
	// The control API: the dump's config as APISIX shows it, and nginx's
	// 404 page elsewhere.
	var dump struct {
		Config   map[string]any
		Services map[string]any
	}
	r = do(t, "GET", a.ControlURL()+"/v1/discovery/consul/dump", "", nil)
	decode(t, r.body, &dump)
	servers, _ := dump.Config["servers"].([]any)
	if r.code != 200 || len(servers) != 1 || servers[0] != c.URL() || dump.Config["fetch_interval"] != float64(3) ||
		dump.Config["keepalive"] != true || dump.Config["sort_type"] != "origin" || dump.Config["timeout"] == nil || dump.Services == nil {
		t.Errorf("dump: %d %s", r.code, r.body)
	}
	if r = do(t, "GET", a.ControlURL()+"/v1/nothing", "", nil); r.code != 404 || !strings.Contains(r.body, "<title>404 Not Found</title>") {
		t.Errorf("control API, unknown path: %d %q", r.code, r.body)
	}
}

// TestAPISIXDiscoveryFollowsConsulLate: by default the fake's Consul
// discovery lags behind Consul as APISIX 3.9.1's did on a real stack
// (0.1 to 2 s): an instance that just passed is in neither the control
// API's dump nor the gateway's nodes at once, and is in both a while
// later; a deregistered one stays that long too. With the discovery down
// (Consul unreachable at APISIX's start) it holds nothing.
func TestAPISIXDiscoveryFollowsConsulLate(t *testing.T) {
	c := fake.NewConsul()
	defer c.Close()
	a := fake.NewAPISIX("key", c)
	defer a.Close()
	if a.DiscoveryLag != fake.DefaultDiscoveryLag || a.DiscoveryLag < 100*time.Millisecond || a.DiscoveryLag > 2*time.Second {
		t.Fatalf("DiscoveryLag %v, want DefaultDiscoveryLag, between 0.1 and 2 s", a.DiscoveryLag)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer backend.Close()
	host, port := splitHostPort(t, backend.URL)
	hdr := map[string]string{"X-API-KEY": "key"}
	do(t, "PUT", a.AdminURL()+"/apisix/admin/upstreams/u", `{"service_name":"web","discovery_type":"consul"}`, hdr)
	do(t, "PUT", a.AdminURL()+"/apisix/admin/routes/r", `{"uri":"/*","upstream_id":"u"}`, hdr)
	held := func() bool {
		var dump struct{ Services map[string][]map[string]any }
		decode(t, do(t, "GET", a.ControlURL()+"/v1/discovery/consul/dump", "", nil).body, &dump)
		return len(dump.Services["web"]) == 1
	}
	start := time.Now()
	c.Register(fake.Instance{ID: "web-1", Name: "web", Address: host, Port: port, Status: "passing"})
	dumped, code := held(), do(t, "GET", a.GatewayURL()+"/", "", nil).code
	if time.Since(start) < a.DiscoveryLag && (dumped || code != 503) {
		t.Errorf("right after the registration: held in the dump %v, gateway %d; want not held, 503", dumped, code)
	}
	eventually(t, "the instance in the dump", held)
	if r := do(t, "GET", a.GatewayURL()+"/", "", nil); r.code != 200 || r.body != "ok" {
		t.Errorf("through the gateway once discovered: %d %q", r.code, r.body)
	}
	start = time.Now()
	c.Deregister("web-1")
	if still := held(); time.Since(start) < a.DiscoveryLag && !still {
		t.Error("the dump dropped the instance at once; APISIX follows a deregistration late too")
	}
	eventually(t, "the instance gone from the dump", func() bool { return !held() })
	c.Register(fake.Instance{ID: "web-2", Name: "web", Address: host, Port: port, Status: "passing"})
	a.SetDiscoveryDown(true)
	time.Sleep(a.DiscoveryLag + 100*time.Millisecond)
	if held() || do(t, "GET", a.GatewayURL()+"/", "", nil).code != 503 {
		t.Error("with the discovery down, the dump holds the instance or the gateway reaches it")
	}
	a.SetDiscoveryDown(false)
	eventually(t, "the instance in the dump once the discovery is back", held)
}

func splitHostPort(t *testing.T, u string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}
