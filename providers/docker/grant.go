package docker

import (
	"strings"

	"github.com/benchflow/benchflow/engine/sandbox/grant"
)

// Grant is what a reproduction with docker services needs (reproduce
// --allow docker): the Docker socket, bound read-write — root on the
// machine — and the host's network, where a container's published ports
// live; the machine's pids, where its containers' processes are; the
// services' files under --out, since dockerd mounts them by their host
// path.
var Grant = &grant.Spec{
	Name:            "docker",
	Meaning:         "the Docker socket (root on this machine) and the host network",
	HostNetwork:     true,
	SharesPIDs:      true,
	ServicesOutside: true,
	Env:             func(k string) bool { return k == "DOCKER_HOST" },
	Binds: func(getenv func(string) string) []grant.Bind {
		var bs []grant.Bind
		for _, p := range dockerSockets(getenv) {
			bs = append(bs, grant.Bind{Path: p, Write: true})
		}
		return bs
	},
	Describe: func(getenv func(string) string) string {
		return "docker (granted): the Docker socket (" + dockerSockets(getenv)[0] + ") is reachable; it is root on this machine (a container may mount any folder and run privileged)"
	},
}

// dockerSockets are the Docker socket's paths the grant binds: the
// DOCKER_HOST of the sandbox's environment when it is a unix:// address,
// else /run/docker.sock (/var/run/docker.sock is a link to it on Debian).
func dockerSockets(getenv func(string) string) []string {
	if h := getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		return []string{strings.TrimPrefix(h, "unix://")}
	}
	return []string{"/run/docker.sock", "/var/run/docker.sock"}
}
