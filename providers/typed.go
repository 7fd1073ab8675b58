package providers

import (
	"context"
	"fmt"

	"github.com/benchflow/benchflow/engine/sandbox/grant"
)

// Spec declares a provider type whose block decodes into a C (a struct
// with gohcl tags, `hcl:"network,optional"`). TypeOf turns it into the
// registry's Type; the type's own code then receives a *C, never an any.
type Spec[C any] struct {
	// Name is the first label of the provider block: "docker".
	Name string
	// New builds a provider named name (the block's second label) from a
	// decoded config; c is never nil (an absent block is a zero C). It
	// contacts nothing and applies the checks of C's Validate again.
	New func(name string, c *C) (Provider, error)
	// Attrs, GC, Agents and Infra are the Type's fields of the same
	// names.
	Attrs  []string
	GC     func(ctx context.Context, req *GCRequest) ([]string, error)
	Agents bool
	Infra  []string
	// Preflight and Grant are the Type's fields of the same names.
	Preflight func(ctx context.Context, req *GCRequest) error
	Grant     *grant.Spec
	// Remote is the Type's Remote, given the decoded *C.
	Remote func(c *C) *Remote
}

// TypeOf builds the Type of s. It owns the three things every provider
// type used to write itself: the constructor of the config (NewConfig
// returns a fresh *C), the one assertion of NewRequest.Config to *C (nil
// means a zero C; another type is an error naming both), and the
// validation: *C must implement Validator, so the engine checks every
// provider block right after decoding it and reports each *ConfigError
// at its attribute.
func TypeOf[C any, P interface {
	*C
	Validator
}](s Spec[C]) *Type {
	var remote func(any) *Remote
	if s.Remote != nil {
		remote = func(cfg any) *Remote {
			c, err := ConfigOf[C](s.Name, &NewRequest{Config: cfg})
			if err != nil {
				return nil
			}
			return s.Remote(c)
		}
	}
	return &Type{
		Name:      s.Name,
		NewConfig: func() any { return P(new(C)) },
		New: func(req *NewRequest) (Provider, error) {
			c, err := ConfigOf[C](s.Name, req)
			if err != nil {
				return nil, err
			}
			return s.New(req.Name, c)
		},
		Attrs:     s.Attrs,
		GC:        s.GC,
		Agents:    s.Agents,
		Infra:     s.Infra,
		Preflight: s.Preflight,
		Grant:     s.Grant,
		Remote:    remote,
	}
}

// ConfigOf is the config of req as the type's *C: a zero C when req has
// none, the value itself for a *C or a C, and an error for anything else.
func ConfigOf[C any](typeName string, req *NewRequest) (*C, error) {
	switch c := req.Config.(type) {
	case nil:
		return new(C), nil
	case *C:
		if c == nil {
			return new(C), nil
		}
		return c, nil
	case C:
		return &c, nil
	default:
		return nil, fmt.Errorf("configuring %s provider %q: config is %T, want %T", typeName, req.Name, req.Config, (*C)(nil))
	}
}

// ConfigsOf picks the configs of one type out of GCRequest.Configs (a *C
// or a C each; nil pointers and other types are skipped).
func ConfigsOf[C any](configs []any) []*C {
	var out []*C
	for _, x := range configs {
		switch c := x.(type) {
		case *C:
			if c != nil {
				out = append(out, c)
			}
		case C:
			out = append(out, &c)
		}
	}
	return out
}
