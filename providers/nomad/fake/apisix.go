package fake

import (
	"encoding/json"
	"fmt"
	"io"
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

// APISIX replays the Admin API v3 for upstreams and routes (following
// APISIX's own schema, apisix/schema_def.lua, and status codes), the
// control API's Consul discovery dump, and runs a gateway that proxies
// matching requests to the upstream's nodes.
//
// Like APISIX, its workers see the configuration through caches that lag
// behind the admin API: RouteCacheLag for routes (the gateway matches, and
// the upstream DELETE checks "still in use" against, the routes as they
// were that long ago; 0 by default), DiscoveryLag for Consul discovery
// (the gateway and the dump use the instances that were passing that long
// ago; DefaultDiscoveryLag by default).
type APISIX struct {
	// Key is the admin key expected in X-API-KEY.
	Key string
	// Version is the version in the Server header of the admin API and
	// the gateway ("APISIX/3.9.1"; default DefaultAPISIXVersion);
	// ServerTokensOff leaves it out ("APISIX"), as enable_server_tokens:
	// false does.
	Version         string
	ServerTokensOff bool
	// RouteCacheLag and DiscoveryLag: see above.
	RouteCacheLag, DiscoveryLag time.Duration

	consul  *Consul
	admin   *httptest.Server
	gateway *httptest.Server
	control *httptest.Server
	proxy   *httputil.ReverseProxy
	tr      *http.Transport
	rr      atomic.Uint64
	down    atomic.Bool // SetDiscoveryDown
	noStore atomic.Bool // SetStoreDown
	proxied atomic.Uint64

	mu        sync.Mutex
	index     uint64
	upstreams map[string]*adminItem
	routes    map[string]*adminItem
	gone      []goneRoute
}

type adminItem struct {
	value    map[string]any
	created  uint64
	modified uint64
	at       time.Time // when it was created
}

// DefaultDiscoveryLag is how long after Consul lists an instance as
// passing (or drops it) the fake's Consul discovery follows. APISIX 3.9.1
// (discovery.consul with keepalive, fetch_interval 3) took 0.1 to 2 s on
// a loopback stack: a registration seen in the control API's dump after
// 0.26 and 0.42 s, a deregistration after 0.11 and 0.92 s, the first
// fetch after `apisix reload` 1.8 s.
const DefaultDiscoveryLag = 500 * time.Millisecond

// NewAPISIX starts an APISIX fake with the given admin key; consul (may be
// nil) resolves upstreams with discovery_type "consul".
func NewAPISIX(key string, consul *Consul) *APISIX {
	a := &APISIX{Key: key, consul: consul, index: 1, DiscoveryLag: DefaultDiscoveryLag,
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
			a.writeNginxPage(w, http.StatusBadGateway, "502 Bad Gateway")
		},
	}
	a.admin = httptest.NewServer(http.HandlerFunc(a.serveAdmin))
	a.gateway = httptest.NewServer(http.HandlerFunc(a.serveGateway))
	a.control = httptest.NewServer(http.HandlerFunc(a.serveControl))
	return a
}

// ControlURL is the control API base (APISIX listens on 127.0.0.1:9090
// by default).
func (a *APISIX) ControlURL() string { return a.control.URL }

// serveControl answers GET /v1/discovery/consul/dump with what the
// discovery cache holds: {"config": {…}, "services": {name: [{host,
// port, weight}]}}.
func (a *APISIX) serveControl(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/discovery/consul/dump" || r.Method != http.MethodGet {
		// The control API sets no Server header of its own: nginx's,
		// with server_tokens off.
		nginxPage(w, "nginx", http.StatusNotFound, "404 Not Found")
		return
	}
	services := map[string][]map[string]any{}
	if a.consul != nil && !a.down.Load() {
		// Names of deregistered services too: the discovery drops
		// them DiscoveryLag late.
		for _, name := range a.consul.ServiceNames() {
			if name == "consul" {
				continue // skipped by APISIX
			}
			for _, in := range a.consul.PassingAt(name, time.Now().Add(-a.DiscoveryLag)) {
				services[name] = append(services[name], map[string]any{"host": in.Address, "port": in.Port, "weight": 1})
			}
		}
	}
	servers := []string{}
	if a.consul != nil {
		servers = append(servers, a.consul.URL())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Server", "nginx") // the control API's, in APISIX 3.9.1
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"config": map[string]any{"servers": servers, "keepalive": true, "weight": 1, "fetch_interval": 3,
			"token": "", "sort_type": "origin", "timeout": map[string]any{"connect": 2000, "read": 2000, "wait": 60}},
		"services": services,
	})
}

type targetKey struct{}

// AdminURL is the admin API base (APISIX listens on :9180 by default).
func (a *APISIX) AdminURL() string { return a.admin.URL }

// GatewayURL is the proxy base (APISIX listens on :9080 by default).
func (a *APISIX) GatewayURL() string { return a.gateway.URL }

// Close stops the servers.
func (a *APISIX) Close() {
	a.control.Close()
	a.gateway.Close()
	a.admin.Close()
	a.tr.CloseIdleConnections()
}

// SetDiscoveryDown makes the Consul discovery hold nothing (down) or
// follow Consul again, as APISIX 3.9.1 does when Consul was unreachable at
// its start: it then retries after 1, 4, 16, 64 and 256 s (then 1 s
// again), and until a retry succeeds its control API's dump lists no
// service and a route to a Consul upstream answers 503.
func (a *APISIX) SetDiscoveryDown(down bool) { a.down.Store(down) }

// SetStoreDown makes the admin API answer as APISIX 3.9.1 does while its
// etcd is down: after the key check, every call is 503 {"error_msg":"has
// no healthy etcd endpoint available"}; the gateway keeps routing with
// what its workers hold.
func (a *APISIX) SetStoreDown(down bool) { a.noStore.Store(down) }

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

func (a *APISIX) writeAdminJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Server", a.server())
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// writeNginxPage answers as nginx does where APISIX has no answer of its
// own (no node to proxy to, a path the admin or control API does not
// serve): an HTML page titled with the status.
func (a *APISIX) writeNginxPage(w http.ResponseWriter, code int, title string) {
	nginxPage(w, a.server(), code, title)
}

// nginxPage is nginx's page for a status, with the given Server header.
func nginxPage(w http.ResponseWriter, server string, code int, title string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Server", server)
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, "<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n<center><h1>%s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", title, title)
}

var adminIDRE = regexp.MustCompile(`^[a-zA-Z0-9-_.]{1,64}$`)

// adminMethods are the methods APISIX's admin resources implement; any
// other gets 404 {"error_msg":"not found"}.
var adminMethods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch}

func (a *APISIX) serveAdmin(w http.ResponseWriter, r *http.Request) {
	// APISIX 3.9.1 answers a missing and a wrong key alike, without the
	// reason (which only its error.log names).
	if k := r.Header.Get("X-API-KEY"); k != a.Key {
		a.writeAdminJSON(w, http.StatusUnauthorized, map[string]any{"error_msg": "failed to check token"})
		return
	}
	if a.noStore.Load() {
		a.writeAdminJSON(w, http.StatusServiceUnavailable, map[string]any{"error_msg": "has no healthy etcd endpoint available"})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/apisix/admin/")
	if !ok {
		a.writeAdminJSON(w, http.StatusNotFound, map[string]any{"error_msg": "404 Route Not Found"})
		return
	}
	kind, id, _ := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if kind != "routes" && kind != "upstreams" {
		a.writeAdminJSON(w, http.StatusNotFound, map[string]any{"error_msg": "Unsupported resource type: " + kind})
		return
	}
	switch {
	case r.Method == http.MethodOptions:
		// The admin API's CORS answer (APISIX 3.9.1).
		w.Header().Set("Server", a.server())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		return
	case r.Method == http.MethodHead:
		a.writeNginxPage(w, http.StatusNotFound, "404 Not Found")
		return
	case !slices.Contains(adminMethods, r.Method):
		a.writeAdminJSON(w, http.StatusNotFound, map[string]any{"error_msg": "not found"})
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
			a.writeAdminJSON(w, http.StatusOK, map[string]any{"total": len(list), "list": list})
			return
		}
		it, ok := store[id]
		if !ok {
			a.writeAdminJSON(w, http.StatusNotFound, map[string]any{"message": "Key not found"})
			return
		}
		a.writeAdminJSON(w, http.StatusOK, map[string]any{"key": key, "value": it.value,
			"createdIndex": it.created, "modifiedIndex": it.modified})
	case http.MethodPut:
		if id == "" {
			a.writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": "missing " + strings.TrimSuffix(kind, "s") + " id"})
			return
		}
		if !adminIDRE.MatchString(id) {
			a.writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": `invalid configuration: property "id" validation failed: object matches none of the required`})
			return
		}
		var v map[string]any
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := json.Unmarshal(body, &v); err != nil || v == nil {
			msg := "invalid request body"
			if err != nil {
				msg += ": " + err.Error()
			}
			a.writeAdminJSON(w, http.StatusBadRequest, map[string]any{"req_body": string(body), "error_msg": msg})
			return
		}
		if bid, ok := v["id"]; ok && fmt.Sprint(bid) != id {
			a.writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": fmt.Sprintf("wrong %s id", strings.TrimSuffix(kind, "s"))})
			return
		}
		var msg string
		if kind == "upstreams" {
			msg = checkUpstream(v)
		} else {
			msg = a.checkRouteLocked(v)
		}
		if msg != "" {
			a.writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": msg})
			return
		}
		if kind == "upstreams" {
			upstreamDefaults(v)
		} else {
			routeDefaults(v)
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
			store[id] = &adminItem{value: v, created: a.index, modified: a.index, at: time.Now()}
			code = http.StatusCreated
		}
		a.writeAdminJSON(w, code, map[string]any{"key": key, "value": v})
	case http.MethodDelete:
		if id == "" {
			a.writeAdminJSON(w, http.StatusBadRequest, map[string]any{"error_msg": "missing " + strings.TrimSuffix(kind, "s") + " id"})
			return
		}
		if kind == "upstreams" && r.URL.Query().Get("force") != "true" {
			// APISIX checks references against its worker's route
			// cache, which lags behind the admin API by RouteCacheLag.
			for _, rid := range a.cachedRoutesLocked() {
				if fmt.Sprint(a.routeValueLocked(rid)["upstream_id"]) == id {
					a.writeAdminJSON(w, http.StatusBadRequest, map[string]any{
						"error_msg": fmt.Sprintf("can not delete this upstream, route [%s] is still using it now", rid)})
					return
				}
			}
		}
		it, ok := store[id]
		if !ok {
			a.writeAdminJSON(w, http.StatusNotFound, map[string]any{"message": "Key not found"})
			return
		}
		delete(store, id)
		if kind == "routes" {
			a.gone = append(a.gone, goneRoute{id: id, value: it.value, at: time.Now()})
		}
		a.index++
		a.writeAdminJSON(w, http.StatusOK, map[string]any{"deleted": "1", "key": key})
	default:
		a.writeAdminJSON(w, http.StatusMethodNotAllowed, map[string]any{"error_msg": "not supported `" + r.Method + "` method for " + strings.TrimSuffix(kind, "s")})
	}
}

// goneRoute is a deleted route the worker cache may still hold.
type goneRoute struct {
	id    string
	value map[string]any
	at    time.Time
}

// cachedRoutesLocked lists, sorted, the ids of the routes a worker's
// cache holds: those created at least RouteCacheLag ago, and those deleted
// less than RouteCacheLag ago.
func (a *APISIX) cachedRoutesLocked() []string {
	now := time.Now()
	var ids []string
	for id, it := range a.routes {
		if now.Sub(it.at) >= a.RouteCacheLag {
			ids = append(ids, id)
		}
	}
	keep := a.gone[:0]
	for _, g := range a.gone {
		if now.Sub(g.at) < a.RouteCacheLag {
			keep = append(keep, g)
			if _, live := a.routes[g.id]; !live {
				ids = append(ids, g.id)
			}
		}
	}
	a.gone = keep
	sort.Strings(ids)
	return ids
}

func (a *APISIX) routeValueLocked(id string) map[string]any {
	if it, ok := a.routes[id]; ok && time.Since(it.at) >= a.RouteCacheLag {
		return it.value
	}
	for _, g := range a.gone {
		if g.id == id {
			return g.value
		}
	}
	if it, ok := a.routes[id]; ok {
		return it.value
	}
	return nil
}

// upstreamDefaults fills in what APISIX 3.9.1 stores for an upstream
// that leaves them out (the schema's defaults, as its PUT answer shows).
func upstreamDefaults(v map[string]any) {
	for k, d := range map[string]any{"type": "roundrobin", "scheme": "http", "pass_host": "pass", "hash_on": "vars"} {
		if _, ok := v[k]; !ok {
			v[k] = d
		}
	}
}

// routeDefaults fills in a route's defaults (status 1, priority 0), and
// an inline upstream's.
func routeDefaults(v map[string]any) {
	for k, d := range map[string]any{"status": 1, "priority": 0} {
		if _, ok := v[k]; !ok {
			v[k] = d
		}
	}
	if up, ok := v["upstream"].(map[string]any); ok {
		upstreamDefaults(up)
	}
}

// Properties of APISIX's upstream, node and route schemas
// (apisix/schema_def.lua); the schemas set additionalProperties = false.
var (
	upstreamProps = []string{"id", "name", "desc", "labels", "create_time", "update_time", "nodes", "retries",
		"retry_timeout", "timeout", "tls", "keepalive_pool", "type", "checks", "hash_on", "key", "scheme",
		"discovery_type", "discovery_args", "pass_host", "upstream_host", "service_name"}
	routeProps = []string{"id", "name", "desc", "labels", "create_time", "update_time", "uri", "uris", "priority",
		"methods", "host", "hosts", "remote_addr", "remote_addrs", "timeout", "vars", "filter_func", "script",
		"script_id", "plugins", "plugin_config_id", "upstream", "service_id", "upstream_id", "service_protocol",
		"enable_websocket", "status"}
	hostRE       = regexp.MustCompile(`^\*?[0-9a-zA-Z-._\[\]:]+$`)
	labelValueRE = regexp.MustCompile(`^\S+$`)
)

func unknownProp(v map[string]any, allowed []string) string {
	var keys []string
	for k := range v {
		if !slices.Contains(allowed, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return fmt.Sprintf("invalid configuration: additional properties forbidden, found %s", keys[0])
}

func isInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != float64(int64(f)) {
		return 0, false
	}
	return int(f), true
}

// checkLabels follows labels_def: at most 16, values matching ^\S+$ of
// 1 to 64 characters.
func checkLabels(v map[string]any) string {
	raw, ok := v["labels"]
	if !ok {
		return ""
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return `invalid configuration: property "labels" validation failed: wrong type: expected object`
	}
	if len(m) > 16 {
		return `invalid configuration: property "labels" validation failed: expect object to have at most 16 properties`
	}
	for k, lv := range m {
		s, ok := lv.(string)
		if !ok || !labelValueRE.MatchString(s) || len(s) > 64 {
			return fmt.Sprintf(`invalid configuration: property "labels" validation failed: failed to validate %s (matching ".*"): failed to match pattern "^\\S+$" with %q`, k, fmt.Sprint(lv))
		}
	}
	return ""
}

// checkUpstream applies APISIX's upstream schema as far as the provider
// can run into it; "" means valid. type is any string (the schema gives a
// default, "roundrobin", and no enum).
func checkUpstream(v map[string]any) string {
	if msg := unknownProp(v, upstreamProps); msg != "" {
		return msg
	}
	if t, ok := v["type"]; ok {
		if _, isStr := t.(string); !isStr {
			return `invalid configuration: property "type" validation failed: wrong type: expected string`
		}
	}
	if msg := checkLabels(v); msg != "" {
		return msg
	}
	_, hasNodes := v["nodes"]
	_, hasService := v["service_name"]
	_, hasDiscovery := v["discovery_type"]
	if hasNodes == (hasService && hasDiscovery) {
		return "invalid configuration: value should match only one schema, but matches " + map[bool]string{true: "both", false: "none"}[hasNodes]
	}
	if !hasNodes {
		return ""
	}
	switch nodes := v["nodes"].(type) {
	case map[string]any:
		for hp, wt := range nodes {
			if _, ok := isInt(wt); !ok {
				return `invalid configuration: property "nodes" validation failed: object matches none of the required`
			}
			if _, p, err := net.SplitHostPort(hp); err == nil {
				if n, _ := strconv.Atoi(p); n < 1 || n > 65535 {
					return "invalid port " + p
				}
			}
		}
	case []any:
		for i, n := range nodes {
			m, ok := n.(map[string]any)
			if !ok {
				return `invalid configuration: property "nodes" validation failed: object matches none of the required`
			}
			for _, req := range []string{"host", "port", "weight"} {
				if _, ok := m[req]; !ok {
					return fmt.Sprintf(`invalid configuration: property "nodes" validation failed: object matches none of the required: ["host","port","weight"] (node %d has no %s)`, i+1, req)
				}
			}
			host, _ := m["host"].(string)
			port, pok := isInt(m["port"])
			weight, wok := isInt(m["weight"])
			if !hostRE.MatchString(host) || !pok || port < 1 || !wok || weight < 0 {
				return `invalid configuration: property "nodes" validation failed: object matches none of the required`
			}
		}
	default:
		return `invalid configuration: property "nodes" validation failed: object matches none of the required`
	}
	return ""
}

var httpMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PURGE"}

func (a *APISIX) checkRouteLocked(v map[string]any) string {
	if msg := unknownProp(v, routeProps); msg != "" {
		return msg
	}
	uri, hasURI := v["uri"]
	_, hasURIs := v["uris"]
	if hasURI == hasURIs {
		return "invalid configuration: allOf 1 failed: value should match only one schema, but matches " + map[bool]string{true: "both", false: "none"}[hasURI]
	}
	if s, ok := uri.(string); hasURI && (!ok || s == "") {
		return `invalid configuration: property "uri" validation failed: string too short, expected at least 1, got 0`
	}
	if msg := checkLabels(v); msg != "" {
		return msg
	}
	if raw, ok := v["methods"]; ok {
		ms, ok := raw.([]any)
		if !ok {
			return `invalid configuration: property "methods" validation failed: wrong type: expected array`
		}
		seen := map[string]int{} // method → its item number, from 1
		for i, m := range ms {
			s, _ := m.(string)
			if !slices.Contains(httpMethods, s) {
				return fmt.Sprintf(`invalid configuration: property "methods" validation failed: failed to validate item %d: matches none of the enum values`, i+1)
			}
			if j, dup := seen[s]; dup {
				return fmt.Sprintf(`invalid configuration: property "methods" validation failed: expected unique items but items %d and %d are equal`, j, i+1)
			}
			seen[s] = i + 1
		}
	}
	if up, ok := v["upstream"].(map[string]any); ok {
		return checkUpstream(up)
	}
	uid, ok := v["upstream_id"]
	if !ok {
		if v["service_id"] == nil && v["plugin_config_id"] == nil && v["plugins"] == nil {
			return "invalid configuration: value should match only one schema, but matches none"
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
		// APISIX 3.9.1: JSON, labelled text/plain.
		w.Header().Set("Server", a.server())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error_msg":"404 Route Not Found"}`+"\n")
		return
	}
	if len(nodes) == 0 {
		// No node (the discovery holds none yet): nginx's own page.
		a.writeNginxPage(w, http.StatusServiceUnavailable, "503 Service Temporarily Unavailable")
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
	ids := a.cachedRoutesLocked()
	down := a.down.Load()
	var up map[string]any
	found := false
	for _, id := range ids {
		rt := a.routeValueLocked(id)
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
		if up["discovery_type"] == "consul" && a.consul != nil && !down {
			for _, in := range a.consul.PassingAt(svc, time.Now().Add(-a.DiscoveryLag)) {
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
