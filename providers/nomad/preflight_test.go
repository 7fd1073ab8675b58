package nomad

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/providers"
)

// TestPreflight: a Nomad agent (and a Consul, an APISIX admin API) that
// accepts connections passes; one that refuses them fails once, naming
// what does not answer, at which address, and where the docs say how to
// start the stack.
func TestPreflight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	up := "http://" + ln.Addr().String()
	ok := &Config{Address: up, ServiceProvider: ServiceProviderConsul, ConsulAddress: ln.Addr().String()}
	if err := Preflight(context.Background(), &providers.GCRequest{Configs: []any{ok}}); err != nil {
		t.Errorf("a stack that answers: %v", err)
	}
	// Port 1 (tcpmux) is not served on loopback here: refused.
	for _, c := range []struct {
		cfg  *Config
		want string
	}{
		{&Config{Address: "http://127.0.0.1:1"}, "the Nomad agent (address, NOMAD_ADDR) does not answer at http://127.0.0.1:1"},
		{&Config{Address: up, ServiceProvider: ServiceProviderConsul, ConsulAddress: "127.0.0.1:1"}, "Consul (consul_address, CONSUL_HTTP_ADDR) does not answer at 127.0.0.1:1"},
	} {
		err := Preflight(context.Background(), &providers.GCRequest{Configs: []any{c.cfg}})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "docs/gateway.md") || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%+v: %v, want %q, the reason and the docs", c.cfg, err, c.want)
		}
	}
}
