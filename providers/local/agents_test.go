package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchflow/benchflow/providers"
)

// fakeAgent is an executable that behaves like `benchflow agent` as far as
// the launcher sees: it prints its address and waits.
func fakeAgent(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "benchflow")
	script := "#!/bin/sh\necho \"agent listening on 127.0.0.1:$((19300 + $5))\"\nexec sleep 60\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLaunchAgentsLocal: each agent is a process of its own group marked
// like a service (so gc finds it), its address read from its output; its
// logs stay in the log folder, and teardown leaves nothing running.
func TestLaunchAgentsLocal(t *testing.T) {
	l, err := New("host", Config{})
	if err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	g, err := l.LaunchAgents(context.Background(), &providers.AgentRequest{
		RunID: "20261201T120000Z-ab12", TrialID: "c01-r1", Step: "wrk", Count: 2, Binary: fakeAgent(t),
		Env: map[string]string{"X_AGENT": "1"}, LogDir: logs,
		Token: "s3cret-token-0123456789", Targets: []string{"http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The token reaches each agent in a 0600 file (its path in the
	// environment), never on its command line or in its environment.
	var tokenFile string
	for _, pid := range g.(*agentGroup).PIDs() {
		path, _ := environValue(pid, providers.AgentTokenFileEnv)
		if tokenFile = path; path == "" {
			t.Fatalf("agent pid %d: no %s", pid, providers.AgentTokenFileEnv)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("token file %s: %v, mode %v; want 0600", path, err, fi.Mode())
		}
		if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != "s3cret-token-0123456789" {
			t.Errorf("token file holds %q", b)
		}
		if got, _ := environValue(pid, providers.AgentTargetsEnv); got != "http://127.0.0.1:8080/a\nhttp://127.0.0.1:8080/b" {
			t.Errorf("agent pid %d: %s=%q", pid, providers.AgentTargetsEnv, got)
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if strings.Contains(string(cmdline), "s3cret") || strings.Contains(string(environ), "s3cret") {
			t.Errorf("agent pid %d: the token is on its command line or in its environment", pid)
		}
	}
	if u := g.URLs(); len(u) != 2 || u[0] != "http://127.0.0.1:19300" || u[1] != "http://127.0.0.1:19301" {
		t.Errorf("URLs %v", u)
	}
	pids := g.(*agentGroup).PIDs()
	for i, pid := range pids {
		want := map[string]string{EnvRun: "20261201T120000Z-ab12", EnvTrial: "c01-r1", EnvService: providers.AgentName("wrk", i), EnvOwner: owner, "X_AGENT": "1"}
		for k, v := range want {
			if got, _ := environValue(pid, k); got != v {
				t.Errorf("agent %d (pid %d): %s=%q, want %q", i+1, pid, k, got, v)
			}
		}
		if pgid, _ := syscall.Getpgid(pid); pgid != pid {
			t.Errorf("agent pid %d in process group %d, want its own", pid, pgid)
		}
	}
	if err := g.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if p, err := readProc(pid); err == nil && p.state != 'Z' {
			t.Errorf("agent pid %d still runs after teardown", pid)
		}
	}
	if _, err := os.Stat(filepath.Dir(tokenFile)); !os.IsNotExist(err) {
		t.Errorf("the token's folder %s is still there after teardown: %v", filepath.Dir(tokenFile), err)
	}
	for _, f := range []string{"agent-wrk-1.stdout.log", "agent-wrk-2.stdout.log"} {
		if b, err := os.ReadFile(filepath.Join(logs, f)); err != nil || !strings.Contains(string(b), "agent listening on") {
			t.Errorf("%s: %q, %v", f, b, err)
		}
	}
}

// TestGCKeepsLiveAgents: gc never touches the agents of a benchflow that
// still runs (this test process), even named by run id.
func TestGCKeepsLiveAgents(t *testing.T) {
	l, _ := New("host", Config{})
	run := "20261201T120000Z-gclive"
	g, err := l.LaunchAgents(context.Background(), &providers.AgentRequest{RunID: run, TrialID: "c01-r1", Step: "wrk", Count: 1, Binary: fakeAgent(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Teardown(context.Background())
	pid := g.(*agentGroup).PIDs()[0]
	found, err := GC(context.Background(), &providers.GCRequest{RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("gc found %v of a live run", found)
	}
	if p, err := readProc(pid); err != nil || p.state == 'Z' {
		t.Errorf("gc stopped agent pid %d of a live run", pid)
	}
}

// TestHelperAgentsAndHang is not a test: TestCrashKillsAgents runs the
// test binary with it to stand in for a benchflow that crashes while its
// agents run.
func TestHelperAgentsAndHang(t *testing.T) {
	if os.Getenv("BENCHFLOW_LOCAL_AGENTS_HELPER") == "" {
		t.Skip("helper process for TestCrashKillsAgents")
	}
	l, _ := New("host", Config{})
	g, err := l.LaunchAgents(context.Background(), &providers.AgentRequest{RunID: "20261201T120000Z-crash", TrialID: "c01-r1", Step: "wrk",
		Count: 2, Binary: os.Getenv("BENCHFLOW_LOCAL_AGENTS_HELPER"), LogDir: os.Getenv("BENCHFLOW_LOCAL_AGENTS_LOGDIR")})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("pids", g.(*agentGroup).PIDs())
	time.Sleep(time.Hour)
}

// TestCrashKillsAgents: a benchflow killed with SIGKILL takes its local
// agents with it.
func TestCrashKillsAgents(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAgentsAndHang$")
	// The helper is killed: the folders it uses are this test's, so they
	// are removed.
	cmd.Env = append(os.Environ(), "BENCHFLOW_LOCAL_AGENTS_HELPER="+fakeAgent(t), "BENCHFLOW_LOCAL_AGENTS_LOGDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var a, b int
	if _, serr := fmt.Sscanf(line, "pids [%d %d]", &a, &b); err != nil || serr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper printed %q, %v", line, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for _, pid := range []int{a, b} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if p, err := readProc(pid); err != nil || p.state == 'Z' {
				break
			}
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("agent pid %d outlived its killed benchflow by 10 s", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
