package fake

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
)

// The versions the fakes report by default: the stack docs/gateway.md's
// figures were measured on.
const (
	DefaultNomadVersion  = "1.6.5"
	DefaultConsulVersion = "1.16.4"
	DefaultAPISIXVersion = "3.9.1"
	DefaultEtcdVersion   = "3.4.23"
)

// nomadVersion is the version the agent and its client node report.
func (n *Nomad) nomadVersion() string {
	if n.Version != "" {
		return n.Version
	}
	return DefaultNomadVersion
}

// serverMember is the agent's serf member as a Nomad server reports it
// (nomad/server.go setupSerf: role, region, dc, build, …).
func (n *Nomad) serverMember() map[string]any {
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(n.srv.URL, "http://"))
	p, _ := strconv.Atoi(port)
	return map[string]any{
		"Name": nodeName + ".global", "Addr": host, "Port": 4648, "Status": "alive",
		"Tags": map[string]string{
			"role": "nomad", "region": "global", "dc": "dc1", "build": n.nomadVersion(),
			"revision": "fake", "vsn": "1", "raft_vsn": "3", "id": nodeID, "rpc_addr": host,
			"port": strconv.Itoa(p), "bootstrap": "1", "expect": "1",
		},
		"ProtocolMin": 1, "ProtocolMax": 5, "ProtocolCur": 2, "DelegateMin": 2, "DelegateMax": 5, "DelegateCur": 4,
	}
}

// agentSelf serves GET /v1/agent/self as a Nomad 1.6.5 agent that is both
// server and client: its config (Version, Server.Enabled,
// Client.Enabled), its serf member (a server's, whose Tags["build"] is the
// version) and stats.
func (n *Nomad) agentSelf(w http.ResponseWriter) {
	v := n.nomadVersion()
	num, pre, _ := strings.Cut(v, "-")
	n.writeJSON(w, 0, map[string]any{
		"config": map[string]any{
			"Region": "global", "Datacenter": "dc1", "NodeName": nodeName,
			"Version": map[string]any{"Version": num, "VersionPrerelease": pre, "VersionMetadata": "",
				"Revision": "fake", "BuildDate": "2023-12-05T00:00:00Z"},
			"Server": map[string]any{"Enabled": true, "BootstrapExpect": 1},
			"Client": map[string]any{"Enabled": true},
		},
		"member": n.serverMember(),
		"stats":  map[string]any{"nomad": map[string]string{"server": "true", "leader": "true"}},
	})
}

// agentMembers serves GET /v1/agent/members: the servers of the region.
func (n *Nomad) agentMembers(w http.ResponseWriter) {
	n.writeJSON(w, 0, map[string]any{
		"ServerName": nodeName, "ServerRegion": "global", "ServerDC": "dc1",
		"Members": []any{n.serverMember()},
	})
}

// agentSelf serves GET /v1/agent/self as a Consul 1.16 agent does, as far
// as the version: Config (Datacenter, NodeName, Revision, Server, Version,
// BuildDate) and Member.
func (c *Consul) agentSelf(w http.ResponseWriter) {
	v := c.Version
	if v == "" {
		v = DefaultConsulVersion
	}
	host, _, _ := net.SplitHostPort(strings.TrimPrefix(c.srv.URL, "http://"))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"Config": map[string]any{"Datacenter": "dc1", "PrimaryDatacenter": "dc1", "NodeName": "fake-consul",
			"NodeID": "5b1c8d0e-0000-4000-8000-000000000001", "Revision": "fake", "Server": true,
			"Version": v, "BuildDate": "2023-11-30T00:00:00Z"},
		"Member": map[string]any{"Name": "fake-consul", "Addr": host, "Port": 8301, "Status": 1,
			"Tags": map[string]string{"build": v + ":fake", "dc": "dc1", "role": "consul", "vsn": "2"}},
	})
}

// server is the Server header of APISIX's admin API and gateway:
// "APISIX/<version>" (apisix/init.lua; "APISIX" alone with
// enable_server_tokens: false, which ServerTokensOff replays).
func (a *APISIX) server() string {
	if a.ServerTokensOff {
		return "APISIX"
	}
	v := a.Version
	if v == "" {
		v = DefaultAPISIXVersion
	}
	return "APISIX/" + v
}

// Etcd replays etcd's GET /version, the only endpoint of APISIX's store
// the provider reads. NewStack starts one.
type Etcd struct {
	// Version is etcdserver's version (default DefaultEtcdVersion);
	// etcdcluster is its major.minor.0, as etcd reports it.
	Version string
	srv     *httptest.Server
}

// NewEtcd starts an etcd fake. Close it when done.
func NewEtcd() *Etcd {
	e := &Etcd{}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	return e
}

// URL is the client URL (what APISIX's deployment.etcd.host lists).
func (e *Etcd) URL() string { return e.srv.URL }

// Close stops the server.
func (e *Etcd) Close() { e.srv.Close() }

func (e *Etcd) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/version" {
		// etcd's grpc-gateway answers unknown paths with 404 text.
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	v := e.Version
	if v == "" {
		v = DefaultEtcdVersion
	}
	cluster := v
	if parts := strings.SplitN(v, ".", 3); len(parts) == 3 {
		cluster = parts[0] + "." + parts[1] + ".0"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"etcdserver": v, "etcdcluster": cluster})
}
