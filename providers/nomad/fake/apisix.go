package fake

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// APISIX replays the Admin API v3 for upstreams and routes and runs a
// gateway that proxies matching requests to the upstream's nodes.
type APISIX struct {
	// Key is the admin key expected in X-API-KEY.
	Key string

	consul  *Consul
	admin   *httptest.Server
	gateway *httptest.Server
	proxy   *httputil.ReverseProxy
	tr      *http.Transport
	rr      atomic.Uint64
	proxied atomic.Uint64

	mu        sync.Mutex
	index     uint64
	upstreams map[string]*adminItem
	routes    map[string]*adminItem
}

type adminItem struct {
	value    map[string]any
	created  uint64
	modified uint64
}

// NewAPISIX starts an APISIX fake with the given admin key; consul (may be
// nil) resolves upstreams with discovery_type "consul".
func NewAPISIX(key string, consul *Consul) *APISIX {
	a := &APISIX{Key: key, consul: consul, index: 1,
		upstreams: map[string]*adminItem{}, routes: map[string]*adminItem{}}
	a.tr = &http.Transport{MaxIdleConnsPerHost: 1024, IdleConnTimeout: 30 * time.Second}
	a.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			target := pr.In.Context().Value(targetKey{}).(*url.URL)
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport: a.tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeAdminJSON(w, http.StatusBadGateway, map[string]any{"error_msg": "502 Bad Gateway"})
		},
	}
	a.admin = httptest.NewServer(http.HandlerFunc(a.serveAdmin))
	a.gateway = httptest.NewServer(http.HandlerFunc(a.serveGateway))
	return a
}

type targetKey struct{}

// AdminURL is the admin API base (APISIX listens on :9180 by default).
func (a *APISIX) AdminURL() string { return a.admin.URL }

// GatewayURL is the proxy base (APISIX listens on :9080 by default).
func (a *APISIX) GatewayURL() string { return a.gateway.URL }

// Close stops both servers.
func (a *APISIX) Close() {
	a.gateway.Close()
	a.admin.Close()
	a.tr.CloseIdleConnections()
}

// Proxied counts the requests the gateway forwarded to a node.
func (a *APISIX) Proxied() uint64 { return a.proxied.Load() }

// Routes lists the route ids, sorted.
func (a *APISIX) Routes() []string { return a.ids(a.routes) }

// Upstreams lists the upstream ids, sorted.
func (a *APISIX) Upstreams() []string { return a.ids(a.upstreams) }

// Object returns the stored value of a route or upstream.
func (a *APISIX) Object(kind, id string) (map[string]any, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.routes
	if kind == "upstreams" {
		m = a.upstreams
	}
	it, ok := m[id]
	if !ok {
		return nil, false
	}
	return it.value, true
}

func (a *APISIX) ids(m map[string]*adminItem) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func writeAdminJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Server", "APISIX/3.x-fake")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

var adminIDRE = regexp.MustCompile(`^[a-zA-Z0-9-_.]{1,64}$`)

func (a *APISIX) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-API-KEY") != a.Key {
		writeAdminJSON(w, http.StatusUnauthorized, map[string]any{"error_msg": "failed to check token"})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/apisix/admin/")
	if !ok {
		writeAdminJSON(w, http.StatusNotFound, map[string]any{"error_msg": "404 Route Not Found"})
		return
	}
	kind, id, _ := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if kind != "routes" && kind != "upstreams" {
		writeAdminJSON(w, http.StatusNotFound, map[string]any{"error_msg": "not found"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	store := a.routes
	if kind == "upstreams" {
		store = a.upstreams
	}
	key := "/apisix/" + kind + "/" + id
	switch r.Method {
	case http.MethodGet:
		if id == "" {
			ids := make([]string, 0, len(store))
			for k := range store {
				ids = append(ids, k)
			}
			sort.Strings(ids)
			list := []map[string]any{}
			for _, k := range ids {
				it := store[k]
				list = append(list, map[string]any{"key": "/apisix/" + kind + "/" + k, "value": it.value,
					"createdIndex": it.created, "modifiedIndex": it.modified})
			}
			writeAdminJSON(w, http.StatusOK, map[string]any{"total": len(list), "list": list})
			return
		}
		it, ok := store[id]
		if !ok {
			writeAdminJSON(w, http.StatusNotFound, map[string]any{"message": "Key not found"})
			return
		}
		writeAdminJSON(w, http.StatusOK, map[string]any{"key": key, "value": it.value,
			"createdIndex": it.created, "modifiedIndex": it.modified})
	case http.MethodPut:
		if id == "" {
			writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": "missing " + strings.TrimSuffix(kind, "s") + " id"})
			return
		}
		if !adminIDRE.MatchString(id) {
			writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": `invalid configuration: property "id" validation failed: object matches none of the required`})
			return
		}
		var v map[string]any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": "invalid request body: " + err.Error()})
			return
		}
		if bid, ok := v["id"]; ok && fmt.Sprint(bid) != id {
			writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": fmt.Sprintf("wrong %s id", strings.TrimSuffix(kind, "s"))})
			return
		}
		var msg string
		if kind == "upstreams" {
			msg = checkUpstream(v)
		} else {
			msg = a.checkRouteLocked(v)
		}
		if msg != "" {
			writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": msg})
			return
		}
		now := time.Now().Unix()
		v["id"] = id
		v["update_time"] = now
		a.index++
		code := http.StatusOK
		if old, ok := store[id]; ok {
			v["create_time"] = old.value["create_time"]
			old.value, old.modified = v, a.index
		} else {
			v["create_time"] = now
			store[id] = &adminItem{value: v, created: a.index, modified: a.index}
			code = http.StatusCreated
		}
		writeAdminJSON(w, code, map[string]any{"key": key, "value": v})
	case http.MethodDelete:
		if _, ok := store[id]; !ok || id == "" {
			writeAdminJSON(w, http.StatusNotFound, map[string]any{"message": "Key not found"})
			return
		}
		if kind == "upstreams" {
			for rid, rt := range a.routes {
				if fmt.Sprint(rt.value["upstream_id"]) == id {
					writeAdminJSON(w, http.StatusBadRequest, map[string]any{
						"error_msg": fmt.Sprintf("can not delete this upstream, route [%s] is still using it now", rid)})
					return
				}
			}
		}
		delete(store, id)
		a.index++
		writeAdminJSON(w, http.StatusOK, map[string]any{"deleted": "1", "key": key})
	default:
		writeAdminJSON(w, http.StatusMethodNotAllowed, map[string]any{"error_msg": "not supported method " + r.Method})
	}
}

// checkUpstream applies the parts of APISIX's upstream schema the
// provider can run into; "" means valid.
func checkUpstream(v map[string]any) string {
	switch t := v["type"]; t {
	case nil, "roundrobin", "chash", "ewma", "least_conn":
	default:
		return fmt.Sprintf(`invalid configuration: property "type" validation failed: matches none of the enum values (%v)`, t)
	}
	_, hasNodes := v["nodes"]
	_, hasService := v["service_name"]
	if hasNodes == hasService {
		return "invalid configuration: value should match only one schema, but matches none"
	}
	if hasService {
		if d, _ := v["discovery_type"].(string); d == "" {
			return `invalid configuration: property "discovery_type" is required`
		}
		return ""
	}
	nodes, ok := v["nodes"].([]any)
	if !ok {
		if m, isMap := v["nodes"].(map[string]any); isMap {
			for hp := range m {
				if _, _, err := net.SplitHostPort(hp); err != nil {
					return fmt.Sprintf("invalid configuration: invalid node %q", hp)
				}
			}
			return ""
		}
		return `invalid configuration: property "nodes" validation failed: wrong type`
	}
	for _, n := range nodes {
		m, _ := n.(map[string]any)
		host, _ := m["host"].(string)
		port, _ := m["port"].(float64)
		if host == "" || port < 1 || port > 65535 {
			return `invalid configuration: property "nodes" validation failed: node needs host and a port in 1..65535`
		}
	}
	return ""
}

var httpMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PURGE"}

func (a *APISIX) checkRouteLocked(v map[string]any) string {
	uri, _ := v["uri"].(string)
	if uri == "" && v["uris"] == nil {
		return "invalid configuration: value should match only one schema, but matches none"
	}
	if ms, ok := v["methods"].([]any); ok {
		for _, m := range ms {
			if s, _ := m.(string); !slices.Contains(httpMethods, s) {
				return fmt.Sprintf(`invalid configuration: property "methods" validation failed: matches none of the enum values (%v)`, m)
			}
		}
	}
	if up, ok := v["upstream"].(map[string]any); ok {
		return checkUpstream(up)
	}
	uid, ok := v["upstream_id"]
	if !ok {
		if v["service_id"] == nil && v["plugin_config_id"] == nil {
			return "missing upstream configuration in Route or Service"
		}
		return ""
	}
	if _, ok := a.upstreams[fmt.Sprint(uid)]; !ok {
		return fmt.Sprintf("failed to fetch upstream info by upstream id [%v], response code: 404", uid)
	}
	return ""
}

// routeMatches implements uri matching: an exact path, or a prefix when
// the uri ends with "*".
func routeMatches(uri, path string) bool {
	if p, ok := strings.CutSuffix(uri, "*"); ok {
		return strings.HasPrefix(path, p)
	}
	return uri == path
}

func (a *APISIX) serveGateway(w http.ResponseWriter, r *http.Request) {
	nodes, found := a.resolve(r)
	if !found {
		writeAdminJSON(w, http.StatusNotFound, map[string]any{"error_msg": "404 Route Not Found"})
		return
	}
	if len(nodes) == 0 {
		writeAdminJSON(w, http.StatusServiceUnavailable, map[string]any{"error_msg": "503 Service Temporarily Unavailable"})
		return
	}
	n := nodes[int(a.rr.Add(1)-1)%len(nodes)]
	a.proxied.Add(1)
	ctx := r.Context()
	target := &url.URL{Scheme: "http", Host: n}
	a.proxy.ServeHTTP(w, r.WithContext(contextWith(ctx, target)))
}

// resolve finds the first matching route (by id order) and its nodes.
func (a *APISIX) resolve(r *http.Request) ([]string, bool) {
	a.mu.Lock()
	ids := make([]string, 0, len(a.routes))
	for id := range a.routes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var up map[string]any
	found := false
	for _, id := range ids {
		rt := a.routes[id].value
		var uris []string
		if u, _ := rt["uri"].(string); u != "" {
			uris = append(uris, u)
		}
		if us, ok := rt["uris"].([]any); ok {
			for _, u := range us {
				uris = append(uris, fmt.Sprint(u))
			}
		}
		match := false
		for _, u := range uris {
			match = match || routeMatches(u, r.URL.Path)
		}
		if ms, ok := rt["methods"].([]any); ok && match {
			match = false
			for _, m := range ms {
				match = match || m == r.Method
			}
		}
		if !match {
			continue
		}
		found = true
		if inline, ok := rt["upstream"].(map[string]any); ok {
			up = inline
		} else if it, ok := a.upstreams[fmt.Sprint(rt["upstream_id"])]; ok {
			up = it.value
		}
		break
	}
	a.mu.Unlock()
	if !found || up == nil {
		return nil, found
	}
	var nodes []string
	if svc, _ := up["service_name"].(string); svc != "" {
		if up["discovery_type"] == "consul" && a.consul != nil {
			for _, in := range a.consul.Passing(svc) {
				nodes = append(nodes, net.JoinHostPort(in.Address, strconv.Itoa(in.Port)))
			}
		}
		return nodes, true
	}
	switch ns := up["nodes"].(type) {
	case []any:
		for _, n := range ns {
			m, _ := n.(map[string]any)
			port, _ := m["port"].(float64)
			nodes = append(nodes, net.JoinHostPort(fmt.Sprint(m["host"]), strconv.Itoa(int(port))))
		}
	case map[string]any:
		for hp := range ns {
			nodes = append(nodes, hp)
		}
		sort.Strings(nodes)
	}
	return nodes, true
}
