package providers

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type testConfig struct {
	Mode string `hcl:"mode,optional"`
}

func (c *testConfig) Validate() error {
	if c.Mode != "" && c.Mode != "fast" {
		return &ConfigError{Attr: "mode", Msg: "not fast"}
	}
	return nil
}

type testProvider struct {
	name string
	cfg  *testConfig
}

func (p *testProvider) Provision(context.Context, *ProvisionRequest) (Deployment, error) {
	return nil, errors.New("not here")
}

// TestTypeOf pins what TypeOf owns: the config's constructor, the one
// assertion (nil, *C and C accepted, anything else refused by name) and
// the Validator the engine finds on the config.
func TestTypeOf(t *testing.T) {
	typ := TypeOf(Spec[testConfig]{
		Name: "test",
		New: func(name string, c *testConfig) (Provider, error) {
			return &testProvider{name: name, cfg: c}, nil
		},
		Attrs: []string{"pid"},
	})
	cfg := typ.NewConfig()
	if _, ok := cfg.(*testConfig); !ok {
		t.Fatalf("NewConfig() = %T, want *testConfig", cfg)
	}
	v, ok := cfg.(Validator)
	if !ok {
		t.Fatal("the config is not a Validator")
	}
	cfg.(*testConfig).Mode = "slow"
	if attrs, _ := ConfigErrors(v.Validate()); len(attrs) != 1 || attrs[0].Attr != "mode" {
		t.Errorf("Validate() = %v, want an error for mode", attrs)
	}
	for _, c := range []struct {
		config any
		mode   string
	}{{nil, ""}, {(*testConfig)(nil), ""}, {&testConfig{Mode: "fast"}, "fast"}, {testConfig{Mode: "fast"}, "fast"}} {
		p, err := typ.New(&NewRequest{Name: "n", Config: c.config})
		if err != nil {
			t.Errorf("New(%#v): %v", c.config, err)
			continue
		}
		if tp := p.(*testProvider); tp.name != "n" || tp.cfg == nil || tp.cfg.Mode != c.mode {
			t.Errorf("New(%#v) built %+v", c.config, tp)
		}
	}
	_, err := typ.New(&NewRequest{Name: "n", Config: struct{}{}})
	if err == nil || !strings.Contains(err.Error(), `configuring test provider "n": config is struct {}, want *providers.testConfig`) {
		t.Errorf("a config of another type: %v", err)
	}
	if typ.Name != "test" || len(typ.Attrs) != 1 || typ.GC != nil || typ.Agents {
		t.Errorf("Type = %+v", typ)
	}
}

func TestConfigsOf(t *testing.T) {
	got := ConfigsOf[testConfig]([]any{&testConfig{Mode: "a"}, nil, (*testConfig)(nil), testConfig{Mode: "b"}, "other"})
	if len(got) != 2 || got[0].Mode != "a" || got[1].Mode != "b" {
		t.Errorf("ConfigsOf = %+v", got)
	}
}
