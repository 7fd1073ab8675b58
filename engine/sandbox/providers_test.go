package sandbox

import (
	"github.com/benchflow/benchflow/providers/docker"
	"github.com/benchflow/benchflow/providers/k8s"
	"github.com/benchflow/benchflow/providers/nomad"
	_ "github.com/benchflow/benchflow/providers/ssh"
)

// The providers' grants, as their packages declare them (the sandbox
// names none of them): the tests confine with them.
var (
	GrantDocker = docker.Grant.Name
	GrantK8s    = k8s.Grant.Name
	GrantNomad  = nomad.Grant.Name
)
