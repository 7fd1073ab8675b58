package docker

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/providers"
)

// No engine at the address: Provision and GC say so with ErrUnavailable,
// which tests skip on and gc ignores.
func TestUnreachableEngine(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "no-docker.sock")
	p, err := New(&providers.NewRequest{Name: "x", Config: &Config{Host: sock}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Provision(context.Background(), &providers.ProvisionRequest{RunID: "r", TrialID: "t", Service: providers.ServiceSpec{Name: "s", Image: "benchflow/nginx:local"}})
	if !errors.Is(err, providers.ErrUnavailable) {
		t.Errorf("Provision with no engine: %v, want ErrUnavailable", err)
	}
	t.Setenv("DOCKER_HOST", sock)
	if _, err := GC(context.Background(), &providers.GCRequest{}); !errors.Is(err, providers.ErrUnavailable) {
		t.Errorf("GC with no engine: %v, want ErrUnavailable", err)
	}
}

// Requests the provider refuses before contacting the engine.
func TestRefusedSpecs(t *testing.T) {
	p, err := New(&providers.NewRequest{Name: "x", Config: &Config{Host: "unix:///nonexistent/docker.sock"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec providers.ServiceSpec
		want string
	}{
		{providers.ServiceSpec{Name: "s"}, "needs an image"},
		{providers.ServiceSpec{Name: "s", Image: "i", Replicas: 3}, "replicas = 3"},
	} {
		_, err := p.Provision(context.Background(), &providers.ProvisionRequest{RunID: "r", TrialID: "t", Service: tc.spec})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.spec, err, tc.want)
		}
	}
}
