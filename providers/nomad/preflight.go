package nomad

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/benchflow/benchflow/providers"
)

// preflightTimeout bounds each address's check.
const preflightTimeout = 3 * time.Second

// Preflight checks, before a run's first trial, that the Nomad agent (and,
// as each provider block is set, Consul and the APISIX admin API) accept
// connections at their addresses: a stack that is not up fails here, once,
// naming what is missing and where the docs say how to start it, instead
// of in every trial.
func Preflight(ctx context.Context, req *providers.GCRequest) error {
	configs := providers.ConfigsOf[Config](req.Configs)
	if len(configs) == 0 {
		configs = []*Config{{}}
	}
	seen := map[string]bool{}
	for _, c := range configs {
		s, err := resolve(c)
		if err != nil {
			return fmt.Errorf("nomad provider: %w", err)
		}
		checks := []struct{ what, addr, doc string }{
			{"the Nomad agent (address, NOMAD_ADDR)", s.Address, "docs/gateway.md#nomad"},
		}
		if s.useConsul() {
			addr := s.ConsulAddress
			if addr == "" {
				addr = "127.0.0.1:8500" // the Consul client's default
			}
			checks = append(checks, struct{ what, addr, doc string }{"Consul (consul_address, CONSUL_HTTP_ADDR)", addr, "docs/gateway.md#consul"})
		}
		if s.Gateway && s.APISIXAdmin != "" {
			checks = append(checks, struct{ what, addr, doc string }{"the APISIX admin API (apisix_admin, APISIX_ADMIN)", s.APISIXAdmin, "docs/gateway.md#apisix"})
		}
		for _, ch := range checks {
			if seen[ch.addr] {
				continue
			}
			seen[ch.addr] = true
			if err := reachable(ctx, ch.addr); err != nil {
				return fmt.Errorf("nomad provider: %s does not answer at %s: %v; start the stack first (%s; \"Bringing it up\" in docs/gateway.md)", ch.what, ch.addr, err, ch.doc)
			}
		}
	}
	return nil
}

// reachable dials addr (a URL or host:port) once, within preflightTimeout.
func reachable(ctx context.Context, addr string) error {
	hostport := addr
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil {
			return err
		}
		hostport = u.Host
		if u.Port() == "" {
			port := "80"
			if u.Scheme == "https" {
				port = "443"
			}
			hostport = net.JoinHostPort(u.Hostname(), port)
		}
	}
	d := net.Dialer{Timeout: preflightTimeout}
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			return oe.Err
		}
		return err
	}
	return conn.Close()
}
