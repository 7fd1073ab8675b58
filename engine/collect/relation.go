package collect

import (
	"strconv"
	"strings"

	"github.com/benchflow/benchflow/providers"
)

// A process is the run's only by relation, never by its name alone
// (docs/collect.md, "Whose process is it"):
//
//   - reported by a provider (service, infra, loader), or in a container
//     or PID namespace of a process that was;
//   - benchflow itself, or a descendant of benchflow, of a service or of
//     an agent (lineage): the loader's, the service's, the agent's;
//   - a docker-proxy whose -host-port/-container-port (and -container-ip)
//     are those of one of the run's containers, a containerd-shim whose
//     -id is one (or whose child is a process of the run), a
//     fuse-overlayfs that mounts a root filesystem directory of one;
//   - a container engine (ContainerEngines) in a trial that deploys
//     containers; a name the trial's provider types declare as theirs
//     (providers.Type.Infra, Config.InfraNames).
//
// Everything else is another's: role other, listed by pid and command
// line.

// relation is what the run's deployments said of themselves.
type relation struct {
	infra   *infraMatcher // the trial's provider types' Infra
	engines *infraMatcher // ContainerEngines
	ids     map[string]bool
	ports   []proxyPorts
	mounts  []string
}

type proxyPorts struct {
	host, container int
	ip              string
}

func newRelation(cfg Config) *relation {
	r := &relation{infra: newInfraMatcher(cfg.InfraNames), engines: newInfraMatcher(ContainerEngines), ids: map[string]bool{}}
	for _, c := range cfg.Containers {
		if len(c.ID) >= 12 {
			r.ids[c.ID[:12]] = true
		}
		for _, p := range c.Ports {
			r.ports = append(r.ports, proxyPorts{p.Host, p.Container, c.IP})
		}
		for _, m := range c.Mounts {
			if len(m) > 1 {
				r.mounts = append(r.mounts, m)
			}
		}
	}
	return r
}

// proxyOf reports a docker-proxy command line ("-proto tcp -host-ip
// 127.0.0.1 -host-port 18080 -container-ip 172.17.0.2 -container-port 80")
// that forwards a port of one of the run's containers.
func (r *relation) proxyOf(argv []string) bool {
	hp, _ := strconv.Atoi(argValue(argv, "-host-port"))
	cp, _ := strconv.Atoi(argValue(argv, "-container-port"))
	ip := argValue(argv, "-container-ip")
	if hp == 0 {
		return false
	}
	for _, p := range r.ports {
		if p.host == hp && (cp == 0 || p.container == cp) && (ip == "" || p.ip == "" || p.ip == ip) {
			return true
		}
	}
	return false
}

// shimOf reports a containerd-shim command line that names one of ids
// (12-digit prefixes): its -id, or a path holding the id (shim v1's
// -workdir …/moby/<id>).
func shimOf(argv []string, ids map[string]bool) bool {
	if len(ids) == 0 {
		return false
	}
	if id := argValue(argv, "-id"); len(id) >= 12 && ids[id[:12]] {
		return true
	}
	for _, a := range argv[min(1, len(argv)):] {
		for _, seg := range strings.Split(a, "/") {
			if isHexID(seg) && ids[seg[:12]] {
				return true
			}
		}
	}
	return false
}

// fuseOf reports a fuse-overlayfs command line ("-o
// lowerdir=…,upperdir=…/diff,workdir=…/work …/merged") that mounts a root
// filesystem directory of one of the run's containers.
func (r *relation) fuseOf(argv []string) bool {
	for _, a := range argv[min(1, len(argv)):] {
		for _, m := range r.mounts {
			if strings.Contains(a, m) {
				return true
			}
		}
	}
	return false
}

// argValue is the value after flag in argv ("-flag value" or
// "-flag=value"), or "".
func argValue(argv []string, flag string) string {
	for i, a := range argv {
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// procLabel names a process in a listing: by its program name (comm)
// alone, whoever's it is. Another's command line, arguments and pid are
// never written (they may hold someone's token or paths); processes of
// one name are added up.
func procLabel(name string, _ int, _ string) string {
	return name
}

// RelationOf gathers what the deployments report of their containers
// (providers.ContainerReporter) for Config.Containers.
func RelationOf(deps []providers.Deployment) []providers.Container {
	var out []providers.Container
	for _, d := range deps {
		if cr, ok := d.(providers.ContainerReporter); ok {
			out = append(out, cr.Containers()...)
		}
	}
	return out
}
