package fake

import "context"

// Stack is a Consul, a Nomad and an APISIX fake wired together, as in
// study S3: Nomad registers allocations in Consul and APISIX discovers them
// there. A stack from NewStackWithoutConsul has no Consul (Consul is nil):
// services use Nomad's own service discovery, and APISIX upstreams list
// their nodes.
type Stack struct {
	Consul *Consul
	Nomad  *Nomad
	APISIX *APISIX
	// Etcd is APISIX's store, as far as its version (GET /version).
	Etcd *Etcd
}

// NewStack starts the four fakes; adminKey is APISIX's admin key.
func NewStack(adminKey string) *Stack {
	c := NewConsul()
	return &Stack{Consul: c, Nomad: NewNomad(c), APISIX: NewAPISIX(adminKey, c), Etcd: NewEtcd()}
}

// NewStackWithoutConsul starts a Nomad fake without Consul, an APISIX
// fake without Consul discovery and its etcd; adminKey is APISIX's admin
// key.
func NewStackWithoutConsul(adminKey string) *Stack {
	return &Stack{Nomad: NewNomad(nil), APISIX: NewAPISIX(adminKey, nil), Etcd: NewEtcd()}
}

// Close stops everything, gateway first.
func (s *Stack) Close() {
	s.APISIX.Close()
	if s.Etcd != nil {
		s.Etcd.Close()
	}
	s.Nomad.Close()
	if s.Consul != nil {
		s.Consul.Close()
	}
}

// Empty reports what is still registered anywhere: jobs, allocations
// that are not terminal, Nomad service registrations, Consul instances,
// APISIX routes and upstreams. An empty result means nothing was left
// behind.
func (s *Stack) Empty() []string {
	var out []string
	for _, j := range s.Nomad.Jobs() {
		out = append(out, "nomad job "+j)
	}
	for _, a := range s.Nomad.LiveAllocs() {
		out = append(out, "nomad allocation "+a)
	}
	for _, id := range s.Nomad.ServiceRegistrations() {
		out = append(out, "nomad service registration "+id)
	}
	if s.Consul != nil {
		for _, in := range s.Consul.Instances() {
			if in.Name == "nomad" || in.Name == "nomad-client" {
				continue // the Nomad agent's own services
			}
			out = append(out, "consul instance "+in.ID)
		}
	}
	for _, r := range s.APISIX.Routes() {
		out = append(out, "apisix route "+r)
	}
	for _, u := range s.APISIX.Upstreams() {
		out = append(out, "apisix upstream "+u)
	}
	return out
}

func contextWith(ctx context.Context, v any) context.Context {
	return context.WithValue(ctx, targetKey{}, v)
}
