// Package grant declares what a reproduction may be given beyond its
// sandbox (benchflow reproduce --allow NAME): each grant's name, what it
// opens, and what the sandbox does for it.
//
// The sandbox's own grants (tune, host-network) are declared by
// engine/sandbox; a provider type declares the grant its providers need in
// its providers.Spec (Grant), and providers.Register registers it here, so
// a new provider type is one package: engine/sandbox, engine/trust and
// reproduce ask this registry and name no provider. The package imports
// nothing of benchflow: a provider's declaration links no sandbox, and the
// sandbox's tests may link the providers.
package grant

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Name is a grant's name, as --allow takes it: "docker".
type Name string

// Bind is a path a grant binds into the sandbox: resolved through
// symlinks and bound at its real path when it exists (a missing one is
// skipped), and also at the path given when AtGiven and the two differ.
type Bind struct {
	Path    string
	Write   bool
	AtGiven bool
}

// Spec declares one grant.
type Spec struct {
	// Name is what --allow takes.
	Name Name
	// Meaning says in a few words what it opens, for the plan's needs
	// and the refusal: "your kubeconfig and the host network".
	Meaning string
	// HostNetwork: the sandbox shares the host's network.
	HostNetwork bool
	// SharesPIDs: the sandbox shares the machine's pid namespace (the
	// provider finds its containers' processes in the machine's /proc).
	SharesPIDs bool
	// ServicesOutside: a daemon outside the sandbox reads the services'
	// files by their host path, so they are rendered under the run's
	// --out instead of the private /tmp.
	ServicesOutside bool
	// Env, when set, says whether a variable of the reader's environment
	// goes into the sandbox with the grant (DOCKER_HOST, NOMAD_*).
	Env func(name string) bool
	// SetEnv, when set, returns variables ("K=V") the grant sets in the
	// sandbox's environment, given the reader's (getenv): a default the
	// child could not find itself once the home folders are hidden.
	SetEnv func(getenv func(string) string) []string
	// Binds, when set, returns what the grant binds in, given the
	// sandbox's environment (getenv): a socket, a credentials file.
	Binds func(getenv func(string) string) []Bind
	// Describe, when set, is the grant's line in the plan's confinement,
	// given the sandbox's environment: "docker (granted): …".
	Describe func(getenv func(string) string) string
	// Sandbox marks the sandbox's own grants (tune, host-network): they
	// are listed after the providers'.
	Sandbox bool
}

var (
	mu    sync.RWMutex
	specs = map[Name]*Spec{}
	seq   = map[Name]int{}
)

// Register adds a grant. It panics on an empty or duplicate name.
func Register(s Spec) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || strings.ContainsAny(string(s.Name), ", ") {
		panic(fmt.Sprintf("grant: Register with the name %q", s.Name))
	}
	if _, dup := specs[s.Name]; dup {
		panic("grant: duplicate grant " + string(s.Name))
	}
	specs[s.Name] = &s
	seq[s.Name] = len(seq)
}

// Lookup returns the registered grant named n.
func Lookup(n Name) (Spec, bool) {
	mu.RLock()
	defer mu.RUnlock()
	s, ok := specs[n]
	if !ok {
		return Spec{}, false
	}
	return *s, true
}

// Names lists the registered grants in the order the plan names them:
// the providers' by name, then the sandbox's own in the order it
// registered them.
func Names() []Name {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Name, 0, len(specs))
	for n := range specs {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := specs[out[i]], specs[out[j]]
		if a.Sandbox != b.Sandbox {
			return !a.Sandbox
		}
		if a.Sandbox {
			return seq[a.Name] < seq[b.Name]
		}
		return a.Name < b.Name
	})
	return out
}
