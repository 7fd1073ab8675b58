package local

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/engine/procfs"
	"github.com/benchflow/benchflow/engine/sandbox"
	"github.com/benchflow/benchflow/providers"
)

// TestGCLeavesOtherPIDNamespaces: a service of a run confined by
// reproduce (its own pid namespace; its owner's pid is that namespace's,
// so from here it looks dead) is not a leftover: gc run on the machine
// does not signal it.
func TestGCLeavesOtherPIDNamespaces(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	cmd, err := sandbox.Spec{Env: []string{"PATH=/usr/bin:/bin", EnvRun + "=20991231T000000Z-gcns", EnvService + "=web", EnvOwner + "=2:1"}}.Command(context.Background(),
		[]string{"sh", "-c", "echo started; exec sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "started\n" {
		t.Fatalf("the confined service did not start: %q", l)
	}
	found, err := GC(context.Background(), &providers.GCRequest{RunID: "20991231T000000Z-gcns"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if strings.Contains(f, "20991231T000000Z-gcns") {
			t.Errorf("gc took the confined service for a leftover: %s", f)
		}
	}
	// The sleep still runs: bwrap's grandchild.
	alive := false
	for _, k := range procfs.Children(cmd.Process.Pid) {
		for _, g := range procfs.Children(k) {
			if c, _ := procfs.Comm(g); c == "sleep" {
				alive = true
			}
		}
	}
	if !alive {
		t.Errorf("the confined service (under bwrap %s) is gone after gc", strconv.Itoa(cmd.Process.Pid))
	}
}
