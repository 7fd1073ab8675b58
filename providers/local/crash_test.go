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
		RunID:   runPrefix + "crash",
		Service: providers.ServiceSpec{Name: "orphan", Command: []string{"sleep", "300"}},
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
	fmt.Printf("pid %d\n", dep.(*Deployment).PID())
	time.Sleep(time.Hour)
}

// TestCrashKillsService: when benchflow dies without tearing down (SIGKILL),
// Pdeathsig kills the service leader it started.
func TestCrashKillsService(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProvisionAndHang$")
	cmd.Env = append(os.Environ(), "BENCHFLOW_LOCAL_HELPER=1", "BENCHFLOW_LOCAL_LOGDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper printed %q, %v", line, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if p, err := readProc(pid); err != nil || p.comm != "sleep" || p.state == 'Z' {
		t.Fatalf("service %d not running after the helper's thread churn: %+v %v", pid, p, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, err := readProc(pid)
		if err != nil || p.state == 'Z' || p.comm != "sleep" {
			return // gone (or a zombie waiting for init)
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("service %d still running 10s after benchflow was killed", pid)
		}
	}
}
