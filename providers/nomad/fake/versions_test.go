package fake_test

import (
	"net/http"
	"testing"

	capi "github.com/hashicorp/consul/api"
	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers/nomad/fake"
)

// TestVersionEndpoints reads each fake's version the way Nomad's and
// Consul's own API clients do, and from APISIX's Server header and etcd's
// /version.
func TestVersionEndpoints(t *testing.T) {
	st := fake.NewStack("k")
	defer st.Close()

	cfg := napi.DefaultConfig()
	cfg.Address = st.Nomad.URL()
	nc, err := napi.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	self, err := nc.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	ver, _ := self.Config["Version"].(map[string]any)
	if ver["Version"] != "1.6.5" || self.Member.Tags["build"] != "1.6.5" || self.Member.Tags["role"] != "nomad" {
		t.Errorf("agent/self: config Version %v, member tags %v", ver, self.Member.Tags)
	}
	members, err := nc.Agent().Members()
	if err != nil || len(members.Members) != 1 || members.Members[0].Tags["build"] != "1.6.5" || members.Members[0].Status != "alive" {
		t.Errorf("agent/members = %+v, %v", members, err)
	}

	ccfg := capi.DefaultConfig()
	ccfg.Address = st.Consul.URL()
	cc, err := capi.NewClient(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	cself, err := cc.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	if v := cself["Config"]["Version"]; v != "1.16.4" {
		t.Errorf("consul agent/self Config.Version = %v", v)
	}

	for _, u := range []string{st.APISIX.AdminURL() + "/apisix/admin/routes", st.APISIX.GatewayURL() + "/none"} {
		a := do(t, http.MethodGet, u, "", nil)
		if s := a.header.Get("Server"); s != "APISIX/3.9.1" {
			t.Errorf("GET %s: Server %q, want APISIX/3.9.1", u, s)
		}
	}
	st.APISIX.ServerTokensOff = true
	if s := do(t, http.MethodGet, st.APISIX.AdminURL()+"/apisix/admin/routes", "", nil).header.Get("Server"); s != "APISIX" {
		t.Errorf("enable_server_tokens false: Server %q, want APISIX", s)
	}
	if s := do(t, http.MethodGet, st.APISIX.ControlURL()+"/v1/none", "", nil).header.Get("Server"); s != "nginx" {
		t.Errorf("control API 404: Server %q, want nginx", s)
	}

	a := do(t, http.MethodGet, st.Etcd.URL()+"/version", "", nil)
	if a.code != 200 || a.body != `{"etcdcluster":"3.4.0","etcdserver":"3.4.23"}`+"\n" {
		t.Errorf("etcd /version: %d %q", a.code, a.body)
	}
	st.Etcd.Version = "3.5.12"
	var v map[string]string
	decode(t, do(t, http.MethodGet, st.Etcd.URL()+"/version", "", nil).body, &v)
	if v["etcdserver"] != "3.5.12" || v["etcdcluster"] != "3.5.0" {
		t.Errorf("etcd /version = %v", v)
	}
}
