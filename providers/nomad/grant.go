package nomad

import (
	"path/filepath"
	"strings"

	"github.com/benchflow/benchflow/engine/sandbox/grant"
)

// Grant is what a reproduction with nomad services needs (reproduce
// --allow nomad): the host's network and the NOMAD_*, CONSUL_* and
// APISIX_* variables (the addresses and their tokens), APISIX's pid file
// readable (the provider finds the gateway's nginx by it where their
// sockets cannot be read, as in the sandbox), the machine's pids and the
// services' files under --out.
var Grant = &grant.Spec{
	Name:            "nomad",
	Meaning:         "the Nomad, Consul and APISIX addresses and the host network",
	HostNetwork:     true,
	SharesPIDs:      true,
	ServicesOutside: true,
	Env: func(k string) bool {
		return strings.HasPrefix(k, "NOMAD_") || strings.HasPrefix(k, "CONSUL_") || strings.HasPrefix(k, "APISIX_")
	},
	Binds: func(getenv func(string) string) []grant.Bind {
		if p := getenv("APISIX_PID_FILE"); filepath.IsAbs(p) {
			return []grant.Bind{{Path: p, AtGiven: true}}
		}
		return nil
	},
	Describe: func(getenv func(string) string) string {
		w := "nomad (granted): the Nomad, Consul and APISIX addresses in its environment are reachable with their tokens"
		if p := getenv("APISIX_PID_FILE"); filepath.IsAbs(p) {
			w += ", and APISIX's pid file " + p + " is readable"
		}
		return w
	},
}
