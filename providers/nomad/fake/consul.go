package fake

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Check statuses, as Consul reports them.
const (
	StatusPassing  = "passing"
	StatusWarning  = "warning"
	StatusCritical = "critical"
)

// Instance is one service instance registered in the Consul fake.
type Instance struct {
	ID      string
	Name    string
	Address string
	Port    int
	Tags    []string
	Meta    map[string]string
	// Status is the status of the instance's own check.
	Status string
}

// Consul replays GET /v1/health/service/:name with blocking queries, and
// GET /v1/agent/self (the agent's version).
type Consul struct {
	// Token, when set, must be sent as X-Consul-Token (or a bearer
	// token); otherwise requests get 403 "ACL not found".
	Token string
	// Version is what GET /v1/agent/self reports as Config.Version
	// (default DefaultConsulVersion).
	Version string

	srv *httptest.Server
	notifier
	instances map[string]*Instance // by id
	ran       map[string]bool      // ids whose HTTP check ran at least once
	// since is when each passing instance last turned passing; past
	// holds the passing intervals that ended, so PassingAt can answer as
	// of an earlier time (a lagging discovery cache).
	since map[string]time.Time
	past  []passedInterval
	stops map[string]chan struct{}
	wg    sync.WaitGroup
}

type passedInterval struct {
	in         Instance
	from, till time.Time
}

// NewConsul starts a Consul fake. Close it when done.
func NewConsul() *Consul {
	c := &Consul{instances: map[string]*Instance{}, ran: map[string]bool{}, stops: map[string]chan struct{}{},
		since: map[string]time.Time{}}
	c.init()
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	return c
}

// URL is the agent's HTTP address (what CONSUL_HTTP_ADDR would hold).
func (c *Consul) URL() string { return c.srv.URL }

// Close stops the HTTP server and every check runner.
func (c *Consul) Close() {
	c.mu.Lock()
	for id, ch := range c.stops {
		close(ch)
		delete(c.stops, id)
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.srv.Close()
}

// Register adds or replaces an instance.
func (c *Consul) Register(in Instance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in.Status == "" {
		in.Status = StatusCritical // Consul's initial check status
	}
	cp := in
	c.endPassingLocked(in.ID)
	c.instances[in.ID] = &cp
	if cp.Status == StatusPassing {
		c.since[in.ID] = time.Now()
	}
	c.bumpLocked()
}

// endPassingLocked records the end of an instance's passing interval.
func (c *Consul) endPassingLocked(id string) {
	from, ok := c.since[id]
	if !ok {
		return
	}
	delete(c.since, id)
	now := time.Now()
	c.past = append(c.past, passedInterval{in: *c.instances[id], from: from, till: now})
	// Keep a minute of history.
	for len(c.past) > 0 && now.Sub(c.past[0].till) > time.Minute {
		c.past = c.past[1:]
	}
}

// RegisterHTTPCheck adds an instance whose status is driven by a real HTTP
// check against url every interval, as a Consul agent does: 2xx is
// passing, 429 warning, anything else or no answer critical.
func (c *Consul) RegisterHTTPCheck(in Instance, url string, interval, timeout time.Duration) {
	c.Register(in)
	stop := make(chan struct{})
	c.mu.Lock()
	if old, ok := c.stops[in.ID]; ok {
		close(old)
	}
	c.stops[in.ID] = stop
	c.mu.Unlock()
	hc := &http.Client{Timeout: timeout}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer hc.CloseIdleConnections()
		for {
			status := StatusCritical
			if resp, err := hc.Get(url); err == nil {
				resp.Body.Close()
				switch {
				case resp.StatusCode >= 200 && resp.StatusCode < 300:
					status = StatusPassing
				case resp.StatusCode == http.StatusTooManyRequests:
					status = StatusWarning
				}
			}
			c.SetStatus(in.ID, status)
			c.mu.Lock()
			if _, ok := c.instances[in.ID]; ok {
				c.ran[in.ID] = true
			}
			c.mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
		}
	}()
}

// SetStatus changes an instance's check status (a no-op for unknown ids).
func (c *Consul) SetStatus(id, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.instances[id]
	if !ok || in.Status == status {
		return
	}
	if in.Status == StatusPassing {
		c.endPassingLocked(id)
	}
	in.Status = status
	if status == StatusPassing {
		c.since[id] = time.Now()
	}
	c.bumpLocked()
}

// Deregister removes an instance and stops its check.
func (c *Consul) Deregister(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.stops[id]; ok {
		close(ch)
		delete(c.stops, id)
	}
	delete(c.ran, id)
	if _, ok := c.instances[id]; ok {
		c.endPassingLocked(id)
		delete(c.instances, id)
		c.bumpLocked()
	}
}

// Passing returns the passing instances of a service, sorted by id.
func (c *Consul) Passing(name string) []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Instance
	for _, in := range c.instances {
		if in.Name == name && in.Status == StatusPassing {
			out = append(out, *in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// PassingAt returns the instances of a service that were passing at t
// (at most a minute ago), sorted by id: what a discovery cache refreshed
// at t holds.
func (c *Consul) PassingAt(name string, t time.Time) []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Instance
	for id, from := range c.since {
		if in := c.instances[id]; in.Name == name && !from.After(t) {
			out = append(out, *in)
		}
	}
	for _, p := range c.past {
		if p.in.Name == name && !p.from.After(t) && p.till.After(t) {
			out = append(out, p.in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ServiceNames lists, sorted, the services with an instance registered
// now or passing in the past (which PassingAt may still return).
func (c *Consul) ServiceNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, in := range c.instances {
		seen[in.Name] = true
	}
	for _, p := range c.past {
		seen[p.in.Name] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// Instances returns every registered instance, sorted by id.
func (c *Consul) Instances() []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Instance
	for _, in := range c.instances {
		out = append(out, *in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Index is the current raft index (what X-Consul-Index reports).
func (c *Consul) Index() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.index
}

func (c *Consul) serve(w http.ResponseWriter, r *http.Request) {
	if c.Token != "" && requestToken(r, "X-Consul-Token") != c.Token {
		http.Error(w, "ACL not found", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/v1/agent/self" && r.Method == http.MethodGet {
		c.agentSelf(w)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/v1/health/service/")
	if !ok || name == "" || strings.Contains(name, "/") {
		http.Error(w, fmt.Sprintf("Invalid URL path: not a recognized HTTP API endpoint: %q", r.URL.Path), http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, fmt.Sprintf("method %s not allowed", r.Method), http.StatusMethodNotAllowed)
		return
	}
	if v := r.URL.Query().Get("index"); v != "" {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			http.Error(w, "Invalid wait index", http.StatusBadRequest)
			return
		}
	}
	c.block(r.Context(), parseIndex(r), parseWait(r))
	passing := boolParam(r, "passing")
	tags := r.URL.Query()["tag"]

	c.mu.Lock()
	index := c.index
	entries := []map[string]any{}
	ids := make([]string, 0, len(c.instances))
	for id := range c.instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		in := c.instances[id]
		if in.Name != name || (passing && in.Status != StatusPassing) || !hasTags(in.Tags, tags) {
			continue
		}
		entries = append(entries, serviceEntry(in))
	}
	c.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Consul-Index", strconv.FormatUint(index, 10))
	w.Header().Set("X-Consul-KnownLeader", "true")
	w.Header().Set("X-Consul-LastContact", "0")
	json.NewEncoder(w).Encode(entries)
}

func hasTags(have, want []string) bool {
	for _, t := range want {
		found := false
		for _, h := range have {
			if h == t {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// serviceEntry is one element of the /v1/health/service answer.
func serviceEntry(in *Instance) map[string]any {
	tags := in.Tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{
		"Node": map[string]any{
			"ID": "3d7f3ab5-0000-4000-8000-000000000001", "Node": "fake-node-1",
			"Address": "127.0.0.1", "Datacenter": "dc1",
			"TaggedAddresses": map[string]string{"lan": "127.0.0.1", "wan": "127.0.0.1"},
			"Meta":            map[string]string{"consul-network-segment": ""},
		},
		"Service": map[string]any{
			"ID": in.ID, "Service": in.Name, "Tags": tags, "Address": in.Address,
			"Port": in.Port, "Meta": in.Meta, "EnableTagOverride": false,
			"Weights": map[string]int{"Passing": 1, "Warning": 1},
		},
		"Checks": []map[string]any{
			{"Node": "fake-node-1", "CheckID": "serfHealth", "Name": "Serf Health Status",
				"Status": StatusPassing, "ServiceID": "", "ServiceName": ""},
			{"Node": "fake-node-1", "CheckID": checkID(in.ID), "Name": "service: \"" + in.Name + "\" check",
				"Status": in.Status, "ServiceID": in.ID, "ServiceName": in.Name, "Type": "http"},
		},
	}
}

// checkID is how Nomad names the Consul check of a service instance:
// "_nomad-check-" and a SHA-1 in hex (Nomad hashes the check definition
// with the service id).
func checkID(serviceID string) string {
	sum := sha1.Sum([]byte(serviceID + "/check"))
	return "_nomad-check-" + hex.EncodeToString(sum[:])
}

// requestToken reads an ACL token the way Consul and Nomad accept it: the
// product's header or "Authorization: Bearer".
func requestToken(r *http.Request, header string) string {
	if t := r.Header.Get(header); t != "" {
		return t
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return t
	}
	return r.URL.Query().Get("token")
}
