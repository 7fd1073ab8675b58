package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchflow/benchflow/engine/hclconf"
	"github.com/benchflow/benchflow/engine/plan"
	"github.com/benchflow/benchflow/engine/sandbox"
	"github.com/benchflow/benchflow/engine/trust"
)

// TestReproduceSSHNeedsItsGrant: a bundle with an ssh service is refused
// without --allow ssh, by a message naming the grant, the service and the
// host; with it nothing is missing, and the sandbox keeps the ssh-agent's
// socket, the reader's HOME path and the files the provider reads.
func TestReproduceSSHNeedsItsGrant(t *testing.T) {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(kh, nil, 0o600)
	src := `pipeline "p" {}
provider "ssh" "server" {
  address     = "10.0.0.2"
  user        = "deploy"
  known_hosts = "` + kh + `"
}
service "web" {
  provider = "server"
  command  = ["/usr/sbin/nginx"]
  port "http" { host = 8080 }
}
`
	p, diags := hclconf.Parse(fstest.MapFS{"p.hcl": {Data: []byte(src)}}, "p.hcl", "p.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pl, diags := plan.Build(p, plan.Inputs{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tp := trust.Inspect(pl)
	msg := missingText(tp.Missing([]sandbox.Grant{sandbox.GrantHostNetwork}))
	for _, w := range []string{"ssh (logging in to the hosts listed", "service web runs on provider server (ssh), on deploy@10.0.0.2:22", "rerun with --allow ssh"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the refusal lacks %q: %s", w, msg)
		}
	}
	if m := tp.Missing([]sandbox.Grant{"ssh"}); len(m) != 0 {
		t.Errorf("--allow ssh leaves %+v missing", m)
	}

	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
	t.Setenv("HOME", "/home/reader")
	spec := sandboxSpec(t.TempDir(), t.TempDir(), []sandbox.Grant{"ssh"}, nil)
	for _, w := range []string{"SSH_AUTH_SOCK=/tmp/agent.sock", "HOME=/home/reader", "BENCHFLOW_SANDBOX=bubblewrap; grants: ssh; network: host"} {
		if !slices.Contains(spec.Env, w) {
			t.Errorf("the sandbox's environment lacks %s: %v", w, spec.Env)
		}
	}
	if slices.Contains(spec.Env, "HOME=/tmp") {
		t.Errorf("HOME twice: %v", spec.Env)
	}
	none := sandboxSpec(t.TempDir(), t.TempDir(), nil, nil)
	if slices.ContainsFunc(none.Env, func(kv string) bool { return strings.HasPrefix(kv, "SSH_AUTH_SOCK=") }) {
		t.Errorf("SSH_AUTH_SOCK went in without the grant: %v", none.Env)
	}
}
