package k8s_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLocalClusterRefusesWithoutRoot: make cluster-up on a machine (or as a
// user) that cannot host the cluster says why and exits 3 before it
// changes anything; cluster-down with no state has nothing to do.
func TestLocalClusterRefusesWithoutRoot(t *testing.T) {
	if os.Getuid() != 0 {
		b, err := exec.Command("bash", "localcluster/up.sh").CombinedOutput()
		checkCannotHost(t, b, err)
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is needed to run up.sh as another user")
	}
	state := t.TempDir()
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "localcluster/up.sh")
	cmd.Env = append(os.Environ(), "BENCHFLOW_CLUSTER_STATE="+state+"/state", "BENCHFLOW_CLUSTER_CACHE="+state+"/cache")
	b, err := cmd.CombinedOutput()
	checkCannotHost(t, b, err)
	if _, err := os.Stat(state + "/state"); err == nil {
		t.Errorf("up.sh created its state folder before refusing")
	}

	down := exec.Command("bash", "localcluster/down.sh")
	down.Env = append(os.Environ(), "BENCHFLOW_CLUSTER_STATE="+state+"/none")
	if b, err := down.CombinedOutput(); err != nil || !strings.Contains(string(b), "nothing to stop") {
		t.Errorf("down.sh without state: %v\n%s", err, b)
	}
}

func checkCannotHost(t *testing.T, out []byte, err error) {
	t.Helper()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 {
		t.Fatalf("up.sh as a user: %v, want exit 3\n%s", err, out)
	}
	if !strings.Contains(string(out), "cannot host the local cluster: it must run as root") {
		t.Errorf("up.sh does not say why:\n%s", out)
	}
}
