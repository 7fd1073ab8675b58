package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/benchflow/benchflow/providers"
)

// runPrefix marks the runs of these tests; TestMain fails when a process
// carrying it survives the tests.
const runPrefix = "test-local-"

// benchflowBin is the benchflow binary: $BENCHFLOW_BIN, or built once.
var (
	benchflowBin string
	buildErr     error
	standIn      bool // testdata/serve stands in for cmd/benchflow
)

func TestMain(m *testing.M) {
	if os.Getenv("BENCHFLOW_LOCAL_HELPER") == "1" {
		os.Exit(m.Run()) // the stand-in for a crashing benchflow
	}
	tmp, err := os.MkdirTemp("", "benchflow-local-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if benchflowBin = os.Getenv("BENCHFLOW_BIN"); benchflowBin == "" {
		benchflowBin = filepath.Join(tmp, "benchflow")
		cmd := exec.Command("go", "build", "-o", benchflowBin, "github.com/benchflow/benchflow/cmd/benchflow")
		if out, err := cmd.CombinedOutput(); err != nil {
			// The tree is shared while it is being written: fall back to
			// the same server behind a minimal main, and say so.
			fmt.Fprintf(os.Stderr, "building benchflow failed, testing with testdata/serve instead: %v\n%s", err, out)
			standIn = true
			cmd := exec.Command("go", "build", "-o", benchflowBin, "./testdata/serve")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("building benchflow (and testdata/serve): %v\n%s", err, out)
			}
		}
	}
	code := m.Run()
	os.RemoveAll(tmp)
	if left := leftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind by the tests: %s\n", strings.Join(left, ", "))
		code = 1
	}
	os.Exit(code)
}

// leftovers lists live processes started by these tests.
func leftovers() []string {
	table, err := processTable()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range table {
		if run, ok := environValue(p.pid, EnvRun); ok && strings.HasPrefix(run, runPrefix) && p.state != 'Z' {
			out = append(out, fmt.Sprintf("%d (%s)", p.pid, p.comm))
		}
	}
	return out
}

func bin(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return benchflowBin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// provision starts spec with a provider built from cfg and registers a
// teardown check: Teardown succeeds and leaves no process of the group.
func provision(t *testing.T, cfg Config, spec providers.ServiceSpec) (*Deployment, *logBuf) {
	t.Helper()
	l, err := New("test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	dep, err := l.Provision(context.Background(), &providers.ProvisionRequest{
		RunID:   runPrefix + strconv.Itoa(os.Getpid()),
		TrialID: "t1",
		Service: spec,
		LogDir:  t.TempDir(),
		Logf:    logs.printf,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*Deployment)
	t.Cleanup(func() {
		if err := d.Teardown(context.Background()); err != nil {
			t.Errorf("Teardown: %v", err)
		}
		assertGone(t, d.PID())
	})
	return d, logs
}

type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuf) printf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, fmt.Sprintf(format, args...))
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// assertGone fails unless no live process belongs to the group of leader.
func assertGone(t *testing.T, leader int) {
	t.Helper()
	table, err := processTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range table {
		if (p.pgid == leader || p.pid == leader) && p.state != 'Z' {
			t.Errorf("process %d (%s, state %c) of group %d still alive after Teardown", p.pid, p.comm, p.state, leader)
		}
	}
}

// waitHTTP polls url until it answers 200 (returning the body), failing as
// soon as Alive reports the service dead.
func waitHTTP(t *testing.T, d *Deployment, url string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return string(body)
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if aerr := d.Alive(context.Background()); aerr != nil {
			t.Fatalf("service died while waiting for %s: %v", url, aerr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 20s: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit polls Alive until it reports the process exited.
func waitExit(t *testing.T, d *Deployment) error {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := d.Alive(context.Background()); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatal("process still running after 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServeProcess(t *testing.T) {
	port := freePort(t)
	d, _ := provision(t, Config{}, providers.ServiceSpec{
		Name:    "serve",
		Command: []string{bin(t), "serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--size", "100"},
		Ports:   []providers.Port{{Name: "http", Host: port}},
	})
	ep := d.Endpoint()
	if want := fmt.Sprintf("http://127.0.0.1:%d", port); ep.URL() != want || ep.Ports["http"] != port {
		t.Errorf("endpoint %s ports %v, want %s and http=%d", ep.URL(), ep.Ports, want, port)
	}
	if ep.Attrs["pid"] != strconv.Itoa(d.PID()) || d.PID() <= 0 {
		t.Errorf("endpoint attrs %v, want pid %d", ep.Attrs, d.PID())
	}
	if body := waitHTTP(t, d, ep.URL()+"/"); len(body) != 100 {
		t.Errorf("body of %d bytes, want 100", len(body))
	}
	procs, err := d.Processes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	comm := filepath.Base(bin(t))
	if len(comm) > 15 {
		comm = comm[:15] // the kernel's limit for comm
	}
	if len(procs) != 1 || procs[0].PID != d.PID() || procs[0].Name != comm || procs[0].Role != "service" {
		t.Errorf("Processes = %+v, want the one %s process %d", procs, comm, d.PID())
	}
	stdout, _ := d.LogPaths()
	out, err := os.ReadFile(stdout)
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("listening on http://127.0.0.1:%d", port)) {
		t.Errorf("stdout log %s = %q, %v; want the listening line", stdout, out, err)
	}
	if filepath.Base(stdout) != "serve.stdout.log" {
		t.Errorf("stdout log named %s, want serve.stdout.log", filepath.Base(stdout))
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, d.PID())
	// serve shuts down gracefully on SIGTERM: exit status 0, not a signal.
	var ee *ExitError
	if err := d.Alive(context.Background()); !errors.As(err, &ee) || ee.Code != 0 {
		t.Errorf("after SIGTERM, Alive = %v; want exit status 0 (graceful shutdown)", err)
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Errorf("second Teardown: %v", err)
	}
	if procs, err := d.Processes(context.Background()); err != nil || len(procs) != 0 {
		t.Errorf("Processes after Teardown = %v, %v; want none", procs, err)
	}
}

// TestServeCommandErrors runs `benchflow serve` with bad flags: the process
// exits and Alive quotes what the command printed.
func TestServeCommandErrors(t *testing.T) {
	b := bin(t)
	if standIn {
		t.Skip("cmd/benchflow does not build; testdata/serve has no such flags")
	}
	port := freePort(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		// 192.0.2.0/24 is TEST-NET-1: never assigned here, so nothing binds.
		{[]string{"--addr", fmt.Sprintf("192.0.2.1:%d", port)}, []string{
			fmt.Sprintf("warning: 192.0.2.1:%d is not a loopback address", port),
			fmt.Sprintf("listening on 192.0.2.1:%d", port),
			"cannot assign requested address",
		}},
		{[]string{"--size", "4XB"}, []string{`--size: "4XB" has an unknown unit "XB"`}},
		{[]string{"--stall", "1s"}, []string{"needs a period"}},
		{[]string{"--status", "42"}, []string{"status 42: want a code from 200 to 599"}},
		{[]string{"--dir", "/nonexistent/www"}, []string{"serving directory", "no such file"}},
	} {
		d, _ := provision(t, Config{}, providers.ServiceSpec{Name: "serve", Command: append([]string{b, "serve"}, c.args...)})
		err := waitExit(t, d)
		for _, w := range append(c.want, "exit status 1") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("serve %q: Alive = %v\nwant it to contain %q", c.args, err, w)
			}
		}
	}
}

const nginxConf = `worker_processes 2;
pid {{dir}}/nginx.pid;
error_log stderr;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path {{dir}}/tmp/body;
  proxy_temp_path {{dir}}/tmp/proxy;
  fastcgi_temp_path {{dir}}/tmp/fastcgi;
  uwsgi_temp_path {{dir}}/tmp/uwsgi;
  scgi_temp_path {{dir}}/tmp/scgi;
  server {
    listen 127.0.0.1:{{port}};
    location / { return 200 "hello from nginx\n"; }
  }
}
`

func TestNginx(t *testing.T) {
	const nginx = "/usr/sbin/nginx"
	if _, err := os.Stat(nginx); err != nil {
		t.Skipf("Debian's nginx is not installed (%v); apt-get install nginx", err)
	}
	dir := t.TempDir()
	port := freePort(t)
	conf := strings.NewReplacer("{{dir}}", dir, "{{port}}", strconv.Itoa(port)).Replace(nginxConf)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	d, _ := provision(t, Config{StopTimeout: "10s"}, providers.ServiceSpec{
		Name:    "nginx",
		Command: []string{nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;"},
		Dir:     dir,
		Ports:   []providers.Port{{Name: "http", Host: port}},
	})
	if body := waitHTTP(t, d, d.Endpoint().URL()+"/"); body != "hello from nginx\n" {
		t.Errorf("body %q", body)
	}
	// Workers may still be starting when the first answer comes.
	var procs []providers.Process
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if procs, err = d.Processes(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(procs) == 3 {
			break
		}
	}
	if len(procs) != 3 || procs[0].PID != d.PID() {
		t.Fatalf("Processes = %+v, want master %d first and 2 workers", procs, d.PID())
	}
	for _, p := range procs {
		if p.Name != "nginx" {
			t.Errorf("process %d named %q, want nginx", p.PID, p.Name)
		}
		if pr, err := readProc(p.PID); err != nil || pr.pgid != d.PID() {
			t.Errorf("process %d: group %d (%v), want %d", p.PID, pr.pgid, err, d.PID())
		}
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, d.PID())
	for _, p := range procs {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.PID)); err == nil {
			if pr, err := readProc(p.PID); err == nil && pr.pgid == d.PID() && pr.state != 'Z' {
				t.Errorf("nginx process %d still alive", p.PID)
			}
		}
	}
}

// TestNginxBindConflict: nginx that cannot bind exits, and Alive quotes its
// own error line.
func TestNginxBindConflict(t *testing.T) {
	const nginx = "/usr/sbin/nginx"
	if _, err := os.Stat(nginx); err != nil {
		t.Skipf("Debian's nginx is not installed (%v); apt-get install nginx", err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	conf := strings.NewReplacer("{{dir}}", dir, "{{port}}", strconv.Itoa(port)).Replace(nginxConf)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
	d, _ := provision(t, Config{}, providers.ServiceSpec{
		Name:    "nginx",
		Command: []string{nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;"},
		Dir:     dir,
	})
	err = waitExit(t, d)
	for _, want := range []string{`service "nginx"`, "exit status 1", fmt.Sprintf("bind() to 127.0.0.1:%d failed (98: Address already in use)", port)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Alive = %v\nwant it to contain %q", err, want)
		}
	}
}

func TestExitAtOnceQuotesStderr(t *testing.T) {
	d, _ := provision(t, Config{}, providers.ServiceSpec{
		Name:    "broken",
		Command: []string{"sh", "-c", "echo on-stdout; for i in $(seq 1 15); do echo line$i >&2; done; exit 3"},
	})
	err := waitExit(t, d)
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Alive = %v, want an *ExitError", err)
	}
	_, stderr := d.LogPaths()
	want := []string{"line6", "line7", "line8", "line9", "line10", "line11", "line12", "line13", "line14", "line15"}
	if ee.Code != 3 || ee.Log != stderr || strings.Join(ee.Tail, ",") != strings.Join(want, ",") {
		t.Errorf("ExitError code %d log %s tail %q; want 3, %s, %q", ee.Code, ee.Log, ee.Tail, stderr, want)
	}
	msg := err.Error()
	for _, s := range []string{`service "broken"`, "exit status 3", stderr, "\n    line15"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not contain %q", msg, s)
		}
	}
	if strings.Contains(msg, "daemon") {
		t.Errorf("error %q gives the daemon hint for a failure", msg)
	}
}

func TestExitQuotesStdoutWhenStderrEmpty(t *testing.T) {
	d, _ := provision(t, Config{}, providers.ServiceSpec{
		Name:    "quiet",
		Command: []string{"sh", "-c", "echo only-stdout; exit 1"},
	})
	err := waitExit(t, d)
	stdout, _ := d.LogPaths()
	if !strings.Contains(err.Error(), stdout) || !strings.Contains(err.Error(), "only-stdout") {
		t.Errorf("Alive = %v, want the stdout tail", err)
	}
}

func TestDaemonizingLeaderExplained(t *testing.T) {
	d, _ := provision(t, Config{}, providers.ServiceSpec{Name: "daemon", Command: []string{"true"}})
	err := waitExit(t, d)
	if !strings.Contains(err.Error(), "exit status 0") || !strings.Contains(err.Error(), "daemon off;") ||
		!strings.Contains(err.Error(), "printed nothing") {
		t.Errorf("Alive = %v, want the exit status, the foreground hint and a note that nothing was printed", err)
	}
}

func TestTeardownKillsOrphanedChildren(t *testing.T) {
	// The leader exits at once; the sleep it started stays in its group.
	d, _ := provision(t, Config{}, providers.ServiceSpec{
		Name:    "orphans",
		Command: []string{"sh", "-c", "sleep 300 & echo started; exit 0"},
	})
	waitExit(t, d)
	// The background child is a forked shell until it execs sleep.
	var procs []providers.Process
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if procs, err = d.Processes(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(procs) == 1 && procs[0].Name == "sleep" {
			break
		}
	}
	if len(procs) != 1 || procs[0].Name != "sleep" {
		t.Fatalf("Processes after the leader exited = %+v, want the orphaned sleep", procs)
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, d.PID())
}

func TestStopTimeoutThenSIGKILL(t *testing.T) {
	const timeout = 300 * time.Millisecond
	d, logs := provision(t, Config{StopTimeout: timeout.String()}, providers.ServiceSpec{
		Name:    "stubborn",
		Command: []string{"sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`},
	})
	stdout, _ := d.LogPaths()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(stdout); strings.Contains(string(b), "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell never installed its trap")
		}
	}
	t0 := time.Now()
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el < timeout {
		t.Errorf("Teardown returned after %s, before the %s stop timeout", el, timeout)
	}
	assertGone(t, d.PID())
	if !strings.Contains(logs.String(), "SIGKILL") {
		t.Errorf("progress lines %q do not mention SIGKILL", logs)
	}
	var ee *ExitError
	if err := d.Alive(context.Background()); !errors.As(err, &ee) || !strings.Contains(ee.Status, "killed") {
		t.Errorf("Alive after the kill = %v, want signal: killed", err)
	}
}

func TestTeardownContextEndsWait(t *testing.T) {
	d, _ := provision(t, Config{StopTimeout: "1h"}, providers.ServiceSpec{
		Name:    "stubborn",
		Command: []string{"sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`},
	})
	stdout, _ := d.LogPaths()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(stdout); strings.Contains(string(b), "ready") || time.Now().After(deadline) {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := d.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, d.PID())
}

func TestCommandNotFound(t *testing.T) {
	l, err := New("host", Config{})
	if err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	_, err = l.Provision(context.Background(), &providers.ProvisionRequest{
		Service: providers.ServiceSpec{Name: "nginx", Command: []string{"ngnix", "-g", "daemon off;"}},
		LogDir:  logDir,
	})
	want := `starting service "nginx": exec: "ngnix": executable file not found in $PATH`
	if err == nil || err.Error() != want {
		t.Errorf("Provision = %v, want %s", err, want)
	}
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("error %v does not wrap exec.ErrNotFound", err)
	}
	if ents, _ := os.ReadDir(logDir); len(ents) != 0 {
		t.Errorf("a failed Provision left %d files in the log folder", len(ents))
	}
}

func TestBadServices(t *testing.T) {
	l, err := New("host", Config{})
	if err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(t.TempDir(), "data")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	cases := map[string]providers.ServiceSpec{
		"no command":                        {Name: "a"},
		"no command: the local":             {Name: "a", Command: []string{""}},
		"replicas = 3":                      {Name: "a", Command: []string{"true"}, Replicas: 3},
		"permission denied":                 {Name: "a", Command: []string{notExec}},
		"fork/exec ./missing: no such file": {Name: "a", Command: []string{"./missing"}, Dir: t.TempDir()},
		"working directory: stat /nonexistent/dir: no such file":   {Name: "a", Command: []string{"true"}, Dir: "/nonexistent/dir"},
		"working directory \"" + notExec + "\" is not a directory": {Name: "a", Command: []string{"true"}, Dir: notExec},
	}
	for want, spec := range cases {
		_, err := l.Provision(context.Background(), &providers.ProvisionRequest{Service: spec, LogDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), `starting service "a": `) {
			t.Errorf("Provision(%+v) = %v, want a located error containing %q", spec, err, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Provision(ctx, &providers.ProvisionRequest{Service: providers.ServiceSpec{Name: "a", Command: []string{"true"}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Provision with a cancelled context = %v", err)
	}
}

func TestEnvironmentAndDir(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"$FOO|$(pwd)|$BENCHFLOW_SERVICE|$BENCHFLOW_TRIAL|${HOME:-unset}\"\n"
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", "/home/inherited")
	f := false
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "bar|" + dir + "|env|t1|/home/inherited"},
		{Config{EnvInherit: &f}, "bar|" + dir + "|env|t1|unset"},
		{Config{EnvInherit: &f, WorkDir: os.TempDir()}, "bar|" + os.TempDir() + "|env|t1|unset"},
	} {
		// A relative command resolves against the working directory; with
		// no inherited PATH, sh is found through the service's own PATH.
		cmd := []string{filepath.Join(dir, "run.sh")}
		if c.cfg.WorkDir == "" {
			cmd = []string{"./run.sh"}
		}
		d, _ := provision(t, c.cfg, providers.ServiceSpec{
			Name:    "env",
			Command: cmd,
			Env:     map[string]string{"FOO": "bar", "PATH": "/usr/bin:/bin"},
			Dir:     dir,
		})
		waitExit(t, d)
		stdout, _ := d.LogPaths()
		b, _ := os.ReadFile(stdout)
		if got := strings.TrimSpace(string(b)); got != c.want {
			t.Errorf("config %+v: the service saw %q, want %q", c.cfg, got, c.want)
		}
	}
}

func TestServicePATH(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "only-here"), []byte("#!/bin/sh\necho found\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, _ := provision(t, Config{}, providers.ServiceSpec{
		Name:    "path",
		Command: []string{"only-here"},
		Env:     map[string]string{"PATH": dir + ":/usr/bin:/bin"},
	})
	waitExit(t, d)
	stdout, _ := d.LogPaths()
	if b, _ := os.ReadFile(stdout); string(b) != "found\n" {
		t.Errorf("stdout %q, want the program found through the service's PATH", b)
	}
}

func TestLogsAppendAndTailOnlyThisRun(t *testing.T) {
	logDir := t.TempDir()
	os.WriteFile(filepath.Join(logDir, "svc.stderr.log"), []byte("from an earlier trial\n"), 0o644)
	l, _ := New("host", Config{})
	dep, err := l.Provision(context.Background(), &providers.ProvisionRequest{
		RunID:   runPrefix + "append",
		Service: providers.ServiceSpec{Name: "svc", Command: []string{"sh", "-c", "exit 2"}},
		LogDir:  logDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*Deployment)
	defer d.Teardown(context.Background())
	err = waitExit(t, d)
	if strings.Contains(err.Error(), "earlier trial") || !strings.Contains(err.Error(), "printed nothing") {
		t.Errorf("Alive = %v, want no lines from an earlier trial", err)
	}
	if b, _ := os.ReadFile(filepath.Join(logDir, "svc.stderr.log")); string(b) != "from an earlier trial\n" {
		t.Errorf("the earlier log was changed: %q", b)
	}
}

func TestNoLogDirUsesTemporaryFolder(t *testing.T) {
	l, _ := New("host", Config{})
	dep, err := l.Provision(context.Background(), &providers.ProvisionRequest{
		RunID:   runPrefix + "nolog",
		Service: providers.ServiceSpec{Name: "svc", Command: []string{"sleep", "60"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*Deployment)
	stdout, _ := d.LogPaths()
	if _, err := os.Stat(stdout); err != nil {
		t.Fatal(err)
	}
	if err := d.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(stdout)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary log folder %s left after Teardown (%v)", filepath.Dir(stdout), err)
	}
}

func TestRegistryAndConfig(t *testing.T) {
	typ, ok := providers.Lookup("local")
	if !ok {
		t.Fatal(`provider type "local" is not registered`)
	}
	if fmt.Sprint(typ.Attrs) != "[pid]" || typ.GC == nil {
		t.Errorf("type declares attrs %v (gc set: %v), want [pid] and a GC", typ.Attrs, typ.GC != nil)
	}
	src := []byte("stop_timeout = \"250ms\"\nenv_inherit = false\n")
	file, diags := hclparse.NewParser().ParseHCL(src, "local.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg := typ.NewConfig()
	if diags := gohcl.DecodeBody(file.Body, nil, cfg); diags.HasErrors() {
		t.Fatal(diags)
	}
	p, err := typ.New(&providers.NewRequest{Name: "host", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	l := p.(*Local)
	if l.stopTimeout != 250*time.Millisecond || l.envInherit || l.name != "host" {
		t.Errorf("decoded provider %+v, want stop 250ms, no env inheritance", l)
	}
	if p, err := typ.New(&providers.NewRequest{Name: "empty"}); err != nil || p.(*Local).stopTimeout != DefaultStopTimeout || !p.(*Local).envInherit {
		t.Errorf("New without config = %+v, %v; want the defaults", p, err)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{StopTimeout: "soon"}, `local provider "x": stop_timeout: "soon" is not a duration (examples: 500ms, 30s, 2m)`},
		{Config{StopTimeout: "-1s"}, "must not be negative"},
		{Config{WorkDir: "/nonexistent/dir"}, "work_dir"},
		{Config{WorkDir: "/etc/hostname"}, "not a directory"},
	} {
		if _, err := New("x", c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	// A bare number is seconds, as in a step's duration (one grammar).
	if p, err := New("bare", Config{StopTimeout: "2"}); err != nil || p.stopTimeout != 2*time.Second {
		t.Errorf(`stop_timeout "2" = %v, %v; want 2s`, p, err)
	}
	if _, err := typ.New(&providers.NewRequest{Name: "x", Config: struct{}{}}); err == nil {
		t.Error("New accepted a config of another type")
	}
}

func TestParseStat(t *testing.T) {
	p, err := parseStat([]byte("4242 (my (odd) proc) S 1 4240 4200 0 -1 4194560 104 0 0 0"))
	if err != nil {
		t.Fatal(err)
	}
	if p != (proc{pid: 4242, ppid: 1, pgid: 4240, sid: 4200, state: 'S', comm: "my (odd) proc"}) {
		t.Errorf("parseStat = %+v", p)
	}
	for _, bad := range []string{"", "12 comm S 1 2 3", "x (c) S 1 2 3", "12 (c) S 1", "12 (c) S a 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted bad input", bad)
		}
	}
}

func TestGroup(t *testing.T) {
	table := []proc{
		{pid: 1, ppid: 0, pgid: 1, comm: "init", state: 'S'},
		{pid: 10, ppid: 1, pgid: 10, comm: "master", state: 'S'},
		{pid: 12, ppid: 10, pgid: 10, comm: "worker", state: 'S'},
		{pid: 11, ppid: 10, pgid: 10, comm: "worker", state: 'R'},
		{pid: 13, ppid: 10, pgid: 10, comm: "dead", state: 'Z'},
		{pid: 20, ppid: 11, pgid: 20, comm: "setsid-child", state: 'S'},
		{pid: 21, ppid: 20, pgid: 20, comm: "grandchild", state: 'S'},
		{pid: 30, ppid: 1, pgid: 10, comm: "orphan", state: 'S'},
		{pid: 40, ppid: 1, pgid: 40, comm: "other", state: 'S'},
	}
	var got []int
	for _, p := range group(table, 10) {
		got = append(got, p.pid)
	}
	if fmt.Sprint(got) != "[10 11 12 20 21 30]" {
		t.Errorf("group = %v, want [10 11 12 20 21 30]", got)
	}
}
