package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers"
)

// TestHelperProvisionAndHang is not a test: TestCrashKillsService runs the
// test binary with it to stand in for a benchflow that crashes while a
// service runs.
func TestHelperProvisionAndHang(t *testing.T) {
	if os.Getenv("BENCHFLOW_LOCAL_HELPER") != "1" {
		t.Skip("helper process for TestCrashKillsService")
	}
	l, _ := New("host", Config{})
	dep, err := l.Provision(context.Background(), &providers.ProvisionRequest{
		RunID:   os.Getenv("BENCHFLOW_LOCAL_RUN"),
		Service: providers.ServiceSpec{Name: "orphan", Command: []string{"sh", "-c", os.Getenv("BENCHFLOW_LOCAL_SCRIPT")}},
		LogDir:  os.Getenv("BENCHFLOW_LOCAL_LOGDIR"),
	})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	// Run a goroutine that locks and leaves OS threads, as netns code does:
	// Pdeathsig must still only fire when the whole process dies.
	for i := 0; i < 20; i++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			lockAndExit()
		}()
		<-done
	}
	// Wait for the service's own children (BENCHFLOW_LOCAL_PROCS in all).
	want, _ := strconv.Atoi(os.Getenv("BENCHFLOW_LOCAL_PROCS"))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if procs, _ := dep.(*Deployment).Processes(context.Background()); len(procs) >= want {
			break
		}
	}
	fmt.Printf("pid %d\n", dep.(*Deployment).PID())
	time.Sleep(time.Hour)
}

// crash runs the helper, which provisions `sh -c script` for run runID,
// kills the helper with SIGKILL once the service runs, and returns the
// service leader's pid (its process group).
func crash(t *testing.T, runID, script string, procs int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProvisionAndHang$")
	cmd.Env = append(os.Environ(), "BENCHFLOW_LOCAL_HELPER=1", "BENCHFLOW_LOCAL_LOGDIR="+t.TempDir(),
		"BENCHFLOW_LOCAL_RUN="+runID, "BENCHFLOW_LOCAL_SCRIPT="+script, "BENCHFLOW_LOCAL_PROCS="+strconv.Itoa(procs))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid ") {
		t.Fatalf("helper printed %q, %v", line, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if p, err := readProc(pid); err != nil || p.ppid != cmd.Process.Pid || p.state == 'Z' {
		t.Fatalf("service %d not running after the helper's thread churn: %+v %v", pid, p, err)
	}
	return pid
}

// waitDead waits until pid is gone (or a zombie waiting for init).
func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, err := readProc(pid)
		if err != nil || p.state == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d, %s) still running after 10s", what, pid, p.comm)
		}
	}
}

// TestCrashKillsService: when benchflow dies without tearing down (SIGKILL),
// Pdeathsig kills the service leader it started.
func TestCrashKillsService(t *testing.T) {
	pid := crash(t, runPrefix+"crash", "exec sleep 300", 1)
	waitDead(t, pid, "the service of a killed benchflow")
}

// TestGCAfterCrash: what outlives the leader of a crashed run (here a
// background sleep) is stopped by GC; the services of a live run are not.
func TestGCAfterCrash(t *testing.T) {
	runID := runPrefix + "gc-" + strconv.Itoa(os.Getpid())
	live, _ := provision(t, Config{}, providers.ServiceSpec{Name: "live", Command: []string{"sleep", "300"}})

	leader := crash(t, runID, "sleep 300 & wait", 2)
	waitDead(t, leader, "the leader of a killed benchflow")
	var orphan int
	for deadline := time.Now().Add(10 * time.Second); orphan == 0; time.Sleep(10 * time.Millisecond) {
		table, _ := processTable()
		for _, p := range group(table, leader) {
			if p.comm == "sleep" { // not the forked shell before its exec
				orphan = p.pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the background sleep of the crashed service is not running")
		}
	}

	if found, err := GC(context.Background(), &providers.GCRequest{RunID: runID + "-other"}); err != nil || len(found) != 0 {
		t.Fatalf("GC of another run = %v, %v; want nothing", found, err)
	}
	found, err := GC(context.Background(), &providers.GCRequest{})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(found, "\n")
	if !strings.Contains(all, fmt.Sprintf("process %d (sleep) of service \"orphan\", run %s", orphan, runID)) {
		t.Errorf("GC found %q, want the orphaned sleep %d", found, orphan)
	}
	if strings.Contains(all, fmt.Sprintf("process %d ", live.PID())) {
		t.Errorf("GC picked the service of a live run: %q", found)
	}
	waitDead(t, orphan, "the leftover after GC")
	if err := live.Alive(context.Background()); err != nil {
		t.Errorf("GC stopped the service of a live run: %v", err)
	}
}
