package nomad

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	capi "github.com/hashicorp/consul/api"
	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers"
)

var _ providers.VersionReporter = (*Deployment)(nil)

// versionTimeout bounds PlatformVersions as the interface promises, also
// when the caller's context has no deadline.
const versionTimeout = 5 * time.Second

// PlatformVersions reports the versions of the stack the deployment ran
// on, each asked of the piece itself, all at once:
//
//   - "nomad_server": the build of each live server (GET
//     /v1/agent/members, its serf tag "build"), else the agent's own
//     (/v1/agent/self) when it is a server;
//   - "nomad_client": the nomad.version attribute of each client node
//     that runs an allocation of the job (GET /v1/node/:id), else the
//     agent's own version when it is a client;
//   - "consul": Config.Version of the Consul agent (GET /v1/agent/self),
//     with service_provider "consul";
//   - "apisix": the version in the admin API's Server header
//     ("APISIX/3.9.1"), with gateway = true;
//   - "etcd" and "etcd_cluster": etcdserver and etcdcluster of GET
//     /version at etcd_address (APISIX_ETCD), with gateway = true when
//     it is set.
//
// Several servers or clients of different versions are listed sorted,
// joined with ", ". A piece that does not answer within the 5 s (or
// answers without a version) is left out: a version never fails a trial.
func (d *Deployment) PlatformVersions(ctx context.Context) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var (
		mu  sync.Mutex
		out = map[string]string{}
		wg  sync.WaitGroup
	)
	set := func(k, v string) {
		if v = strings.TrimSpace(v); v != "" {
			mu.Lock()
			out[k] = v
			mu.Unlock()
		}
	}
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	if d.nomad != nil {
		run(func() {
			server, client := d.nomadVersions(ctx)
			set("nomad_server", server)
			set("nomad_client", client)
		})
	}
	if d.consul != nil {
		run(func() { set("consul", consulVersion(ctx, d.consul)) })
	}
	if d.admin != nil {
		run(func() {
			v, err := d.admin.Version(ctx)
			if err == nil {
				set("apisix", v)
			}
		})
		if addr := d.p.s.EtcdAddress; addr != "" {
			run(func() {
				server, cluster := etcdVersion(ctx, nil, addr)
				set("etcd", server)
				set("etcd_cluster", cluster)
			})
		}
	}
	wg.Wait()
	if len(out) == 0 {
		return nil
	}
	return out
}

// nomadVersions asks the agent at the provider's address for the servers'
// versions and the allocations' client nodes for theirs.
func (d *Deployment) nomadVersions(ctx context.Context) (server, client string) {
	q := func() *napi.QueryOptions { return (&napi.QueryOptions{}).WithContext(ctx) }
	var self struct {
		Config map[string]any   `json:"config"`
		Member napi.AgentMember `json:"member"`
	}
	_, selfErr := d.nomad.Raw().Query("/v1/agent/self", &self, q())
	agentVersion, isServer, isClient := "", false, false
	if selfErr == nil {
		agentVersion = nomadConfigVersion(self.Config["Version"])
		isServer = enabled(self.Config["Server"])
		isClient = enabled(self.Config["Client"])
	}

	var servers []string
	if m, err := d.nomad.Agent().MembersOpts(q()); err == nil && m != nil {
		for _, mb := range m.Members {
			if mb != nil && mb.Status == "alive" && mb.Tags["role"] == "nomad" {
				servers = append(servers, mb.Tags["build"])
			}
		}
	}
	if len(distinct(servers)) == 0 && selfErr == nil {
		servers = []string{self.Member.Tags["build"]}
		if len(distinct(servers)) == 0 && isServer {
			servers = []string{agentVersion}
		}
	}

	var clients []string
	seen := map[string]bool{}
	for _, a := range d.allocs {
		if a.node == "" || seen[a.node] {
			continue
		}
		seen[a.node] = true
		if n, _, err := d.nomad.Nodes().Info(a.node, q()); err == nil && n != nil {
			clients = append(clients, n.Attributes["nomad.version"])
		}
	}
	if len(distinct(clients)) == 0 && isClient {
		clients = []string{agentVersion}
	}
	return strings.Join(distinct(servers), ", "), strings.Join(distinct(clients), ", ")
}

// nomadConfigVersion is the agent config's Version ({"Version": "1.6.5",
// "VersionPrerelease": "", "VersionMetadata": ""}) as Nomad prints it:
// "1.6.5", "1.7.0-beta.1", "1.6.5+ent".
func nomadConfigVersion(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	out := str("Version")
	if out == "" {
		return ""
	}
	if pre := str("VersionPrerelease"); pre != "" {
		out += "-" + pre
	}
	if md := str("VersionMetadata"); md != "" {
		out += "+" + md
	}
	return out
}

// enabled reads {"Enabled": true} of the agent config's Server or Client.
func enabled(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	b, _ := m["Enabled"].(bool)
	return b
}

// distinct drops empty and repeated values and sorts the rest.
func distinct(vs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// consulVersion is Config.Version of the Consul agent (with its
// prerelease, as Consul prints it), or "".
func consulVersion(ctx context.Context, c *capi.Client) string {
	var self struct {
		Config struct {
			Version           string
			VersionPrerelease string
			VersionMetadata   string
		}
	}
	if _, err := c.Raw().Query("/v1/agent/self", &self, (&capi.QueryOptions{}).WithContext(ctx)); err != nil {
		return ""
	}
	v := self.Config.Version
	if v == "" {
		return ""
	}
	if self.Config.VersionPrerelease != "" {
		v += "-" + self.Config.VersionPrerelease
	}
	if self.Config.VersionMetadata != "" {
		v += "+" + self.Config.VersionMetadata
	}
	return v
}

// etcdVersion reads etcd's GET /version: {"etcdserver": "3.4.23",
// "etcdcluster": "3.4.0"}; "" for what it does not say.
func etcdVersion(ctx context.Context, hc *http.Client, base string) (server, cluster string) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/version", nil)
	if err != nil {
		return "", ""
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", ""
	}
	var v struct {
		Server  string `json:"etcdserver"`
		Cluster string `json:"etcdcluster"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&v); err != nil {
		return "", ""
	}
	return v.Server, v.Cluster
}
