package run

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/providers"
)

func TestGCNotesSkippedOnlyWhenAsked(t *testing.T) {
	cases := []struct {
		o    GCOptions
		want bool
	}{
		{GCOptions{}, false},
		{GCOptions{Configs: map[string][]any{"k8s": nil}}, false},
		{GCOptions{Configs: map[string][]any{"docker": {struct{}{}}}}, false},
		{GCOptions{Verbose: true}, true},
		{GCOptions{Only: []string{"k8s"}}, true},
		{GCOptions{Configs: map[string][]any{"k8s": {struct{}{}}}}, true},
	}
	for i, c := range cases {
		if got := c.o.notesSkipped("k8s"); got != c.want {
			t.Errorf("case %d %+v: notesSkipped(k8s) = %v, want %v", i, c.o, got, c.want)
		}
	}
}

func TestGCSkippedBackendNamedWhenSelected(t *testing.T) {
	const name = "gc-unreachable-test"
	providers.Register(&providers.Type{
		Name: name,
		New:  func(*providers.NewRequest) (providers.Provider, error) { return nil, fmt.Errorf("not used") },
		GC: func(context.Context, *providers.GCRequest) ([]string, error) {
			return nil, fmt.Errorf("no backend here: %w", providers.ErrUnavailable)
		},
	})
	var b bytes.Buffer
	if err := GC(context.Background(), &b, GCOptions{Only: []string{name}}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if !strings.Contains(b.String(), "skipped "+name+": no backend here") {
		t.Errorf("gc --provider %s did not name the skipped backend:\n%s", name, b.String())
	}
}
