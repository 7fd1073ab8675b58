package ssh

import (
	"net"
	"strconv"

	"github.com/benchflow/benchflow/engine/sandbox/grant"
	"github.com/benchflow/benchflow/providers"
)

// Grant is what a reproduction with ssh services or agents needs
// (reproduce --allow ssh): the host's network, to reach the hosts; the
// reader's ssh-agent (SSH_AUTH_SOCK, its socket bound in) and home
// folder's path (HOME: the home folders stay hidden, but ~/ in a provider
// block names the reader's files), with the identity and known_hosts
// files the provider blocks name readable (Remote's Reads). The plan lists
// every host and every command run there. Off by default: a bundle with
// an ssh provider is refused without it.
var Grant = &grant.Spec{
	Name:        "ssh",
	Meaning:     "logging in to the hosts listed, with your ssh-agent, keys and known_hosts, and running the commands listed there; the host network",
	HostNetwork: true,
	Env:         func(k string) bool { return k == "SSH_AUTH_SOCK" },
	SetEnv: func(getenv func(string) string) []string {
		if h := getenv("HOME"); h != "" {
			return []string{"HOME=" + h}
		}
		return nil
	},
	Binds: func(getenv func(string) string) []grant.Bind {
		if s := getenv("SSH_AUTH_SOCK"); s != "" {
			return []grant.Bind{{Path: s, Write: true, AtGiven: true}}
		}
		return nil
	},
	Describe: func(getenv func(string) string) string {
		w := "ssh (granted): the hosts of the plan's remote hosts are reachable and logged in to"
		if s := getenv("SSH_AUTH_SOCK"); s != "" {
			w += " with your ssh-agent (" + s + ")"
		}
		return w + " and the keys and known_hosts the plan lists; the commands listed there run on them as the user logged in"
	},
}

// remote is Type's Remote: the host services run on, the hosts agents run
// on, what the provider runs on each itself (HelperCommand, from the copy
// of this benchflow it leaves in the login user's cache), and the local
// files it reads.
func remote(c *Config) *providers.Remote {
	t, err := c.target("")
	if err != nil {
		return nil
	}
	host := func(a string) string { return t.User + "@" + net.JoinHostPort(a, strconv.Itoa(t.Port)) }
	r := &providers.Remote{Services: host(t.Address)}
	agents := c.Addresses
	if len(agents) == 0 {
		agents = []string{t.Address}
	}
	for _, a := range agents {
		r.Agents = append(r.Agents, host(a))
	}
	helper := "~/.cache/benchflow/bin/<sha256>/benchflow " + HelperCommand + " --owner … --idle " + t.Idle.String()
	if t.Sudo {
		helper = "sudo -n " + helper
	}
	r.Commands = []string{"uname -sm", "(SFTP) copy this benchflow to ~/.cache/benchflow/bin/<sha256>/benchflow, once per version", helper}
	if t.IdentityFile != "" {
		r.Reads = append(r.Reads, t.IdentityFile)
	}
	r.Reads = append(r.Reads, t.KnownHosts)
	return r
}
