// Package consul waits, with Consul blocking queries, until a service has
// the expected number of passing instances, and reports their addresses.
//
// Entry points: NewClient (address and token from arguments or the usual
// CONSUL_HTTP_ADDR / CONSUL_HTTP_TOKEN variables) and WaitPassing.
//
// Sibling packages: providers/nomad (the provider), providers/nomad/apisix
// (the gateway's admin API), providers/nomad/fake (httptest fakes).
package consul

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	capi "github.com/hashicorp/consul/api"
)

// Instance is one passing service instance.
type Instance struct {
	ID   string
	Node string
	Host string
	Port int
}

// Addr is host:port.
func (i Instance) Addr() string { return net.JoinHostPort(i.Host, strconv.Itoa(i.Port)) }

// NewClient returns a Consul client. Empty address and token fall back to
// the environment (CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN) as the Consul CLI
// does.
func NewClient(address, token string) (*capi.Client, error) {
	cfg := capi.DefaultConfig()
	if address != "" {
		cfg.Address = address
	}
	if token != "" {
		cfg.Token = token
	}
	c, err := capi.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating Consul client: %w", err)
	}
	return c, nil
}

// WaitPassing blocks until service has at least want passing instances
// (carrying tag, when not empty) and returns them sorted by address. It
// uses blocking queries: each request carries the X-Consul-Index of the
// previous answer and returns when the service changes or after wait
// (default 5s).
func WaitPassing(ctx context.Context, c *capi.Client, service, tag string, want int, wait time.Duration) ([]Instance, error) {
	if wait <= 0 {
		wait = 5 * time.Second
	}
	var index uint64
	seen := -1
	for {
		q := (&capi.QueryOptions{WaitIndex: index, WaitTime: wait}).WithContext(ctx)
		entries, meta, err := c.Health().Service(service, tag, true, q)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("waiting for %d passing instances of %q in Consul (%d seen): %w", want, service, max(seen, 0), ctx.Err())
			}
			return nil, fmt.Errorf("querying Consul health of %q: %w", service, err)
		}
		seen = len(entries)
		if len(entries) >= want {
			return instances(entries), nil
		}
		// Reset on a going-backwards index, as the Consul docs advise.
		if meta.LastIndex < index {
			index = 0
		} else {
			index = meta.LastIndex
		}
		if index == 0 {
			// No index: avoid a busy loop.
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for %d passing instances of %q in Consul (%d seen): %w", want, service, seen, ctx.Err())
		}
	}
}

// WaitGone blocks until service has no instance left in Consul, passing
// or not, and returns how many remain when ctx ends first.
func WaitGone(ctx context.Context, c *capi.Client, service string, wait time.Duration) (int, error) {
	if wait <= 0 {
		wait = 5 * time.Second
	}
	var index uint64
	left := -1 // unknown until the first answer
	for {
		q := (&capi.QueryOptions{WaitIndex: index, WaitTime: wait}).WithContext(ctx)
		entries, meta, err := c.Health().Service(service, "", false, q)
		if err != nil {
			if ctx.Err() != nil {
				return left, fmt.Errorf("waiting for %q to leave Consul (%d instances left): %w", service, left, ctx.Err())
			}
			return left, fmt.Errorf("waiting for %q to leave Consul: %w", service, err)
		}
		left = len(entries)
		if len(entries) == 0 {
			return 0, nil
		}
		if meta.LastIndex < index {
			index = 0
		} else {
			index = meta.LastIndex
		}
		if ctx.Err() != nil {
			return len(entries), fmt.Errorf("waiting for %q to leave Consul (%d instances left): %w", service, len(entries), ctx.Err())
		}
	}
}

func instances(entries []*capi.ServiceEntry) []Instance {
	out := make([]Instance, 0, len(entries))
	for _, e := range entries {
		if e.Service == nil {
			continue
		}
		host := e.Service.Address
		node := ""
		if e.Node != nil {
			node = e.Node.Node
			if host == "" {
				host = e.Node.Address
			}
		}
		out = append(out, Instance{ID: e.Service.ID, Node: node, Host: host, Port: e.Service.Port})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr() < out[j].Addr() })
	return out
}
