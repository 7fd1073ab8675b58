package docker

import (
	"context"
	"errors"
	"path/filepath"
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
	if _, err := GC(context.Background(), ""); !errors.Is(err, providers.ErrUnavailable) {
		t.Errorf("GC with no engine: %v, want ErrUnavailable", err)
	}
}
