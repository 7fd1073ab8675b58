// Package sandbox runs a command confined by bubblewrap (bwrap, Debian's
// package bubblewrap): the file system read-only but for the folders the
// caller names and a private /tmp, every home folder hidden, a network of
// its own (a loopback nothing outside reaches), no Docker socket, and only
// the capabilities a benchmarked service needs. Whatever leaves the sandbox
// — the Docker socket, a cluster, sysctls, the host network — is a Grant,
// named one by one and described by Spec.Describe for the reader's plan.
//
// The sandbox does not unshare the pid namespace: the verdict's
// whole-machine CPU accounting reads the machine's other processes from
// /proc, and the pids benchflow records must be the machine's.
package sandbox

import (
	"context"
	"errors"
	"os/exec"
)

// Grant opens one thing beyond the sandbox.
type Grant string

// The grants a reproduction may ask for (reproduce --allow NAME).
const (
	// GrantDocker binds the Docker socket and shares the host's network
	// (a container's published ports live in the host's namespace). The
	// socket is root-equivalent on the machine.
	GrantDocker Grant = "docker"
	// GrantK8s shares the host's network and keeps the kubeconfig
	// ($KUBECONFIG, else ~/.kube/config) readable.
	GrantK8s Grant = "k8s"
	// GrantNomad shares the host's network (the NOMAD_/CONSUL_/APISIX_
	// addresses are in the caller's Env).
	GrantNomad Grant = "nomad"
	// GrantTune lets sysctls be written (/proc/sys read-write) and adds
	// the capabilities tune steps need (CAP_SYS_ADMIN, CAP_NET_ADMIN,
	// CAP_SYS_NICE).
	GrantTune Grant = "tune"
	// GrantHostNetwork shares the host's network.
	GrantHostNetwork Grant = "host-network"
)

// Grants lists every known grant, in the order the plan names them.
var Grants = []Grant{GrantDocker, GrantK8s, GrantNomad, GrantTune, GrantHostNetwork}

// Spec is one confinement.
type Spec struct {
	// ReadWrite are bound read-write at the same path (the run's output
	// folder); each must exist.
	ReadWrite []string
	// ReadOnly are bound read-only at the same path, on top of the hidden
	// places (the staged bundle, the benchflow executable); each must
	// exist.
	ReadOnly []string
	// Grants open what the reproduction needs beyond the sandbox.
	Grants []Grant
	// Env is the child's whole environment; the caller filters it.
	Env []string
	// Dir is the working folder inside (default: /).
	Dir string
}

// Available returns nil when bwrap runs here (it runs `bwrap --ro-bind / /
// true`); else an error saying how to install it and that --no-sandbox
// runs unconfined.
func Available() error {
	return errors.New("sandbox: not implemented yet")
}

// Command returns an exec.Cmd running argv confined by s. Its Env is the
// sandbox's (s.Env); the caller sets Stdin, Stdout and Stderr.
func (s Spec) Command(ctx context.Context, argv []string) (*exec.Cmd, error) {
	return nil, errors.New("sandbox: not implemented yet")
}

// Describe returns one line per confinement fact, for the plan, reflecting
// the grants ("file system: read-only except OUT and a private /tmp",
// "network: its own loopback only", …).
func (s Spec) Describe() []string {
	return nil
}
