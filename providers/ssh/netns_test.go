package ssh

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestSameNetNS: gc on a host counts only the helpers of its own network
// namespace — test hosts are namespaces of one machine, and a live
// helper of another host must not keep this host's record. A child in
// this namespace is the same; one started in a fresh namespace is not.
func TestSameNetNS(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root (ip netns add)")
	}
	same := exec.Command("sleep", "30")
	if err := same.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { same.Process.Kill(); same.Wait() }()
	if !sameNetNS(same.Process.Pid) {
		t.Error("a child in this network namespace is reported in another")
	}
	ns := fmt.Sprintf("bfnstest-%d", os.Getpid())
	if b, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, b)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	other := exec.Command("ip", "netns", "exec", ns, "sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	// ip netns exec enters the namespace, then execs sleep: wait for it
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", other.Process.Pid))
		if err != nil {
			t.Fatalf("ip netns exec … sleep: %v", err)
		}
		if string(b) == "sleep\n" {
			break
		}
		exec.Command("true").Run()
	}
	if sameNetNS(other.Process.Pid) {
		t.Error("a process in another network namespace is reported in this one")
	}
}
